"""``agentcore demo``: a retail customer-service agent, governed, remembered, evaluated and costed end to end.

The domain follows τ-bench's retail store (users, orders, products, 16 tools); the store is generated from a seed
so the demo needs no external data. To put your own agent behind the same gateway, implement :class:`Agent`
(``respond(message, session) -> str``) and make every tool call with ``session.call``.
"""

from agentcore.demo.agent import Agent, ScriptedAgent
from agentcore.demo.app import DemoReport, DemoSettings, run_demo
from agentcore.demo.session import AgentSession, ToolOutcome

__all__ = ["Agent", "AgentSession", "DemoReport", "DemoSettings", "ScriptedAgent", "ToolOutcome", "run_demo"]
