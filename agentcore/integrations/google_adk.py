"""Google ADK: the gateway's tools as ADK tools, with approvals through ADK's tool confirmation.

Every call goes through the gateway; a denial, invalid arguments or a tool failure is the ``{"error": ...}``
function response the model reads. A call that needs approval requests a gateway approval and ADK's tool
confirmation (``tool_context.request_confirmation``): the run ends with an ``adk_request_confirmation`` function
call. After ``gw.approvals.approve(...)`` (or ``reject``), send :func:`resume_message` of those events as the next
message: ADK runs the tool again and the approved call runs exactly once (a rejected one reads as rejected). The
gateway's decision is what counts, not the ``confirmed`` flag of the reply.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.adk.events import Event
from google.adk.tools import BaseTool, ToolContext
from google.genai import types

from agentcore.gateway.adapters.calls import Caller, ToolSpec, failure
from agentcore.gateway.errors import ApprovalRequired
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike
from agentcore.integrations.approvals import PendingApprovals, agoverned, approve_call, governed_tools

CONFIRMATION = "adk_request_confirmation"  # the function call ADK emits for a tool confirmation


def adk_tools(
    gw: Gateway,
    *,
    principal: PrincipalLike,
    agent: AgentLike = None,
    session: str | None = None,
    tenant: str | None = None,
) -> list[BaseTool]:
    """ADK tools for the gateway tools this principal may use: ``LlmAgent(..., tools=adk_tools(gw, ...))``."""
    return governed_tools(gw, GatewayAdkTool, principal, agent, session, tenant)


def approval_requests(events: Iterable[Event]) -> dict[str, str]:
    """The confirmations a run ended waiting on: ADK confirmation call id -> gateway approval id."""
    found = {}
    for event in events:
        for call in event.get_function_calls():
            confirmation = (call.args or {}).get("toolConfirmation") or {}
            payload = confirmation.get("payload") or {}
            if call.name == CONFIRMATION and call.id and isinstance(payload, dict) and "approval_id" in payload:
                found[call.id] = str(payload["approval_id"])
    return found


def resume_message(events: Iterable[Event]) -> types.Content:
    """The user message that answers every gateway confirmation in ``events`` (send it once they are decided)."""
    replies = [
        types.Part(
            function_response=types.FunctionResponse(id=call_id, name=CONFIRMATION, response={"confirmed": True})
        )
        for call_id in approval_requests(events)
    ]
    return types.Content(role="user", parts=replies)


class GatewayAdkTool(BaseTool):
    """One gateway tool as an ADK tool; the gateway validates (and audits) its arguments."""

    def __init__(self, gw: Gateway, spec: ToolSpec, caller: Caller, pending: PendingApprovals) -> None:
        super().__init__(name=spec.name, description=spec.description or spec.tool)
        self._gw, self._spec, self._caller, self._pending = gw, spec, caller, pending

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name, description=self.description, parameters_json_schema=self._spec.schema
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        try:
            outcome = await agoverned(self._gw, self._spec.tool, args, self._caller, self._pending)
        except ApprovalRequired as error:
            tool_context.request_confirmation(
                hint=f"Approve with {approve_call(error.approval_id, self._caller.tenant)}, then resume the run.",
                payload={"approval_id": error.approval_id, "tool": self._spec.tool},
            )
            tool_context.actions.skip_summarization = True
            return {"error": failure(error).text}
        return {"error": outcome.text} if outcome.is_error else {"result": outcome.text}
