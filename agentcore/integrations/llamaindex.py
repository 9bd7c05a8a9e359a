"""LlamaIndex: the gateway's tools as ``FunctionTool`` objects, with approvals as workflow human-in-the-loop events.

Every call goes through the gateway. A denial, invalid arguments or a tool failure is an error tool output the
model reads. A call that needs approval waits in the workflow (``ctx.wait_for_event``): the run streams an
:class:`ApprovalRequested` event (an ``InputRequiredEvent``); after ``gw.approvals.approve(...)`` (or ``reject``),
``handler.ctx.send_event(ApprovalDecided(approval_id=...))`` resumes it and the approved call runs exactly once (a
rejected one reads as rejected). The gateway's decision is what counts, not anything the event says.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.tools import FunctionTool, ToolMetadata
from llama_index.core.workflow import Context, HumanResponseEvent, InputRequiredEvent

from agentcore.gateway.adapters.calls import Caller, ToolSpec, failure
from agentcore.gateway.errors import ApprovalRequired
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike
from agentcore.integrations.approvals import PendingApprovals, agoverned, approval_request, governed_tools


class ApprovalRequested(InputRequiredEvent):
    """Streamed when a call waits for a human decision on gateway approval ``approval_id``."""

    approval_id: str
    tool: str
    args: dict[str, Any]
    approver_roles: list[str]
    message: str


class ApprovalDecided(HumanResponseEvent):
    """Send it (``handler.ctx.send_event(...)``) once approval ``approval_id`` is decided, to resume the call."""

    approval_id: str
    response: str = "decided"


class GatewayToolError(Exception):
    """What the model reads when the gateway refused or failed a call (LlamaIndex makes it an error output)."""


def llamaindex_tools(
    gw: Gateway,
    *,
    principal: PrincipalLike,
    agent: AgentLike = None,
    session: str | None = None,
    tenant: str | None = None,
) -> list[FunctionTool]:
    """Function tools for the gateway tools this principal may use: ``FunctionAgent(tools=..., llm=...)``."""
    return governed_tools(gw, _function_tool, principal, agent, session, tenant)


@dataclass
class _SchemaMetadata(ToolMetadata):
    """Tool metadata that shows the model the gateway's JSON schema as it is (no pydantic model in between)."""

    schema: dict[str, Any] = field(default_factory=dict)

    def get_parameters_dict(self) -> dict[str, Any]:
        return self.schema

    @property
    def fn_schema_str(self) -> str:
        return json.dumps(self.schema)


def _function_tool(gw: Gateway, spec: ToolSpec, caller: Caller, pending: PendingApprovals) -> FunctionTool:
    async def run(ctx: Context, **args: Any) -> str:
        try:
            outcome = await agoverned(gw, spec.tool, args, caller, pending)
        except ApprovalRequired as error:
            await _wait_for_decision(gw, ctx, error)
            try:
                outcome = await agoverned(gw, spec.tool, args, caller, pending)  # decided: it runs, or reads why not
            except ApprovalRequired as still:  # resumed before anyone decided
                outcome = failure(still)
        if outcome.is_error:
            raise GatewayToolError(outcome.text)
        return outcome.text

    # LlamaIndex passes the workflow context to a parameter annotated with the Context class itself
    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context),
            inspect.Parameter("args", inspect.Parameter.VAR_KEYWORD),
        ]
    )
    metadata = _SchemaMetadata(description=spec.description or spec.tool, name=spec.name, fn_schema=None,
                               schema=spec.schema)  # fmt: skip
    return FunctionTool(async_fn=run, metadata=metadata)


async def _wait_for_decision(gw: Gateway, ctx: Context, pending: ApprovalRequired) -> None:
    """Pause the workflow until :class:`ApprovalDecided` for this approval arrives.

    LlamaIndex replays the whole step when the event arrives, so the call is made again first: it finds the
    request it made (still open, or decided: then it runs or reads why not without waiting).
    """
    request = approval_request(gw, pending.approval_id, "send ApprovalDecided to resume")
    await ctx.wait_for_event(
        ApprovalDecided,
        waiter_event=ApprovalRequested(**request),
        waiter_id=pending.approval_id,
        requirements={"approval_id": pending.approval_id},
        timeout=None,
    )
