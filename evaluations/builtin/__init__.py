"""AgentCore's built-in evaluators; importing this package registers them."""

from agentcore.evaluations.builtin import goals, instructions, safety, tools

__all__ = ["goals", "instructions", "safety", "tools"]
