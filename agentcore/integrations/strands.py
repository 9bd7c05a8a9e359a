"""Strands Agents: the gateway's tools as Strands tools, with approvals through Strands' interrupts.

Every call goes through the gateway; a denial, invalid arguments or a tool failure is an error tool result the
model reads. A call that needs approval raises a Strands interrupt (``tool_context.interrupt``): the run stops
with ``result.stop_reason == "interrupt"`` and the approval request in ``result.interrupts``. After
``gw.approvals.approve(...)`` (or ``reject``), :func:`resume_prompt` of that result is the next prompt: Strands
runs the paused call again without asking the model, and the approved call runs exactly once (a rejected one
reads as rejected). The gateway's decision is what counts, not the interrupt's response.
"""

from __future__ import annotations

from typing import Any

from strands.agent import AgentResult
from strands.types.interrupt import InterruptResponseContent
from strands.types.tools import AgentTool, ToolContext, ToolGenerator, ToolResult, ToolSpec, ToolUse

from agentcore.gateway.adapters.calls import Caller, failure
from agentcore.gateway.adapters.calls import ToolSpec as GatewaySpec
from agentcore.gateway.errors import ApprovalRequired
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike
from agentcore.integrations.approvals import PendingApprovals, agoverned, approval_request, governed_tools

INTERRUPT = "agentcore-approval"  # the name of the interrupts a gateway approval raises


def strands_tools(
    gw: Gateway,
    *,
    principal: PrincipalLike,
    agent: AgentLike = None,
    session: str | None = None,
    tenant: str | None = None,
) -> list[AgentTool]:
    """Strands tools for the gateway tools this principal may use: ``Agent(tools=strands_tools(gw, ...))``."""
    return governed_tools(gw, GatewayStrandsTool, principal, agent, session, tenant)


def resume_prompt(result: AgentResult) -> list[InterruptResponseContent]:
    """The prompt that answers every gateway interrupt the run stopped on (send it once they are decided)."""
    return [
        {"interruptResponse": {"interruptId": interrupt.id, "response": interrupt.reason["approval_id"]}}
        for interrupt in result.interrupts or ()
        if interrupt.name == INTERRUPT
    ]


class GatewayStrandsTool(AgentTool):
    """One gateway tool as a Strands tool; the gateway validates (and audits) its arguments."""

    def __init__(self, gw: Gateway, spec: GatewaySpec, caller: Caller, pending: PendingApprovals) -> None:
        super().__init__()
        self._gw, self._spec, self._caller, self._pending = gw, spec, caller, pending

    @property
    def tool_name(self) -> str:
        return self._spec.name

    @property
    def tool_spec(self) -> ToolSpec:
        return {
            "name": self._spec.name,
            "description": self._spec.description or self._spec.tool,
            "inputSchema": {"json": self._spec.schema},
        }

    @property
    def tool_type(self) -> str:
        return "agentcore"

    async def stream(self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any) -> ToolGenerator:
        try:
            outcome = await agoverned(self._gw, self._spec.tool, tool_use["input"], self._caller, self._pending)
        except ApprovalRequired as error:
            context = kwargs.get("_tool_context") or ToolContext(
                tool_use=tool_use, agent=invocation_state["agent"], invocation_state=invocation_state
            )
            request = approval_request(self._gw, error.approval_id, "resume with agent(resume_prompt(result))")
            context.interrupt(INTERRUPT, reason=request)  # raises: the run stops; resumed, it returns (still pending)
            outcome = failure(error)
        result: ToolResult = {
            "toolUseId": tool_use["toolUseId"],
            "status": "error" if outcome.is_error else "success",
            "content": [{"text": outcome.text}],
        }
        yield result
