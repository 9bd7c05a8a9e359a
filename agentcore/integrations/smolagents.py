"""smolagents: the gateway's tools as smolagents ``Tool`` objects, with approvals through the agent's interrupt.

Every call goes through the gateway; a denial, invalid arguments or a tool failure is the observation the model
reads. A call that needs approval is observed as pending, and the step callback :func:`pause_for_approval`
interrupts the agent (``agent.interrupt()``): the run stops with smolagents' ``AgentError("Agent interrupted.")``.
After ``gw.approvals.approve(...)``, ``agent.run(task, reset=False)`` continues the run; the model makes the call
again and the approved call runs, exactly once (a rejected one reads as rejected).

smolagents checks argument types against the declared inputs before a tool runs: a call it rejects never reaches
the gateway (nothing runs); every other problem is found, and audited, by the gateway.
"""

from __future__ import annotations

from typing import Any

from smolagents import Tool
from smolagents.memory import MemoryStep

from agentcore.gateway.adapters.calls import Caller, ToolSpec, failure
from agentcore.gateway.errors import ApprovalRequired
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike
from agentcore.integrations.approvals import PendingApprovals, governed, governed_tools

_TYPES = {"string", "boolean", "integer", "number", "array", "object", "null"}


def smolagents_tools(
    gw: Gateway,
    *,
    principal: PrincipalLike,
    agent: AgentLike = None,
    session: str | None = None,
    tenant: str | None = None,
) -> list[Tool]:
    """smolagents tools for the gateway tools this principal may use: ``ToolCallingAgent(tools=..., ...)``."""
    return governed_tools(gw, GatewayTool, principal, agent, session, tenant)


def pause_for_approval(step: MemoryStep, agent: Any) -> None:
    """A step callback (``step_callbacks=[pause_for_approval]``): interrupt the agent after a step in which a
    gateway tool's call started waiting for approval."""
    waiting = [t for t in agent.tools.values() if isinstance(t, GatewayTool) and t.take_waiting()]
    if waiting:
        agent.interrupt()


class GatewayTool(Tool):
    """One gateway tool as a smolagents tool; the gateway validates (and audits) its arguments."""

    output_type = "string"
    skip_forward_signature_validation = True  # forward takes the schema's arguments as keywords

    def __init__(self, gw: Gateway, spec: ToolSpec, caller: Caller, pending: PendingApprovals) -> None:
        self.name, self.description, self.inputs = spec.name, spec.description or spec.tool, _inputs(spec.schema)
        self._gw, self._tool, self._caller, self._pending, self._waiting = gw, spec.tool, caller, pending, False
        super().__init__()

    def forward(self, **args: Any) -> str:
        try:
            return governed(self._gw, self._tool, args, self._caller, self._pending).text
        except ApprovalRequired as error:
            self._waiting = True
            return (
                f"{failure(error).text} The run pauses until a human decides; when it resumes, make the same "
                "call again to get its result."
            )

    def take_waiting(self) -> bool:
        """Whether a call started waiting for approval since the last look."""
        waiting, self._waiting = self._waiting, False
        return waiting


def _inputs(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The JSON schema's properties as smolagents ``inputs``: a type it knows (else ``any``), optional = nullable."""
    required = set(schema.get("required") or ())
    inputs = {}
    for name, prop in (schema.get("properties") or {}).items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        entry: dict[str, Any] = {
            "type": kind if kind in _TYPES else "any",
            "description": (prop.get("description") if isinstance(prop, dict) else None) or name,
        }
        if name not in required:
            entry["nullable"] = True
        inputs[name] = entry
    return inputs
