"""AgentCore's built-in evaluators; importing this package registers them."""

from agentcore.evaluations.builtin import goals, instructions, quality, safety, tools

__all__ = ["goals", "instructions", "quality", "safety", "tools"]
