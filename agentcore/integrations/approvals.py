"""What the framework integrations share: their tools per principal, one governed call, the approval request shown.

A call that needs approval raises :class:`~agentcore.gateway.errors.ApprovalRequired` (the integration pauses
the run its framework's way) and is remembered. Made again after the decision, an approved call runs, once (the
gateway hands the open request back and executes it); a rejected or expired one reads as such instead of asking
anew; one still pending raises again. Everything else is the :class:`Outcome` the model reads.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from agentcore.gateway.adapters.calls import Caller, Outcome, ToolSpec, call_blocking, failure, success, tool_specs
from agentcore.gateway.errors import ApprovalRequired, GatewayError
from agentcore.gateway.gateway import Gateway
from agentcore.gateway.identity import AgentLike, PrincipalLike

_OPEN = ("pending", "approved")
T = TypeVar("T")


class PendingApprovals:
    """The approval each paused call waits on, by tool and arguments; kept in this process."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(tool: str, args: Any) -> str:
        return json.dumps([tool, args], sort_keys=True, default=str)

    def settled(self, gw: Gateway, key: str) -> str | None:
        """The remembered approval of this call if it was decided other than approved (rejected, expired...)."""
        with self._lock:
            approval_id = self._ids.get(key)
        if approval_id is None or gw.approvals.get(approval_id).status in _OPEN:
            return None
        with self._lock:
            self._ids.pop(key, None)
        return approval_id

    def put(self, key: str, approval_id: str) -> None:
        with self._lock:
            self._ids[key] = approval_id

    def forget(self, key: str) -> None:
        with self._lock:
            self._ids.pop(key, None)


def governed_tools(
    gw: Gateway,
    make: Callable[[Gateway, ToolSpec, Caller, PendingApprovals], T],
    principal: PrincipalLike,
    agent: AgentLike,
    session: str | None,
    tenant: str | None,
) -> list[T]:
    """One framework tool (``make``) per gateway tool this principal may use; they share the caller and the
    memory of the approvals their calls wait on."""
    caller, pending = Caller(principal, agent, session, tenant), PendingApprovals()
    return [make(gw, spec, caller, pending) for spec in tool_specs(gw, principal, agent)]


def approval_request(gw: Gateway, approval_id: str, resume: str) -> dict[str, Any]:
    """What a paused run shows the human: the approval, its call, who may decide it, and how to ``resume``."""
    approval = gw.approvals.get(approval_id)
    return {
        "approval_id": approval.id,
        "tool": approval.tool,
        "args": approval.args,
        "approver_roles": approval.approver_roles,
        "message": f"Approve with {approve_call(approval.id, approval.tenant)}, then {resume}.",
    }


def approve_call(approval_id: str, tenant: str | None) -> str:
    """The sign-off a human makes, with the request's tenant: only an approver of that tenant may decide it."""
    return f"gw.approvals.approve({approval_id!r}, by=...{'' if tenant is None else f', tenant={tenant!r}'})"


def governed(gw: Gateway, tool: str, args: Any, caller: Caller, pending: PendingApprovals) -> Outcome:
    """The call through the gateway; raises ApprovalRequired while it awaits a decision."""
    key = pending.key(tool, args)
    try:
        if (decided := pending.settled(gw, key)) is not None:
            return success(gw.approvals.execute(decided))
        result = call_blocking(gw, tool, args, caller, "raise")
    except ApprovalRequired as error:
        pending.put(key, error.approval_id)
        raise
    except GatewayError as error:
        return failure(error)
    pending.forget(key)
    return success(result)


async def agoverned(gw: Gateway, tool: str, args: Any, caller: Caller, pending: PendingApprovals) -> Outcome:
    """Async :func:`governed`, through ``gw.acall``."""
    key = pending.key(tool, args)
    try:
        if (decided := pending.settled(gw, key)) is not None:
            return success(await gw.approvals.aexecute(decided))
        result = await gw.acall(tool, args, **caller.options(), approval="raise")
    except ApprovalRequired as error:
        pending.put(key, error.approval_id)
        raise
    except GatewayError as error:
        return failure(error)
    pending.forget(key)
    return success(result)
