"""A user's agent for ``agentcore demo --agent own_agent:make``: the tests put this folder on sys.path.

It is built like a user's would be, from the public pieces only (its own Accelerator, the demo's tool schemas);
here it delegates to the scripted agent so every scenario still goes as scripted, and counts the turns it saw.
"""

from __future__ import annotations

from agentcore import Accelerator
from agentcore.demo.agent import ScriptedAgent
from agentcore.demo.session import AgentSession

TURNS: list[str] = []


class CountingAgent:
    def __init__(self) -> None:
        self.inner = ScriptedAgent(Accelerator(ledger=None), tenant="retail-demo")

    def respond(self, message: str, session: AgentSession) -> str:
        TURNS.append(session.session_id)
        return self.inner.respond(message, session)


def make() -> CountingAgent:
    return CountingAgent()


NOT_AN_AGENT = 42
