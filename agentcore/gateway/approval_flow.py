"""``gateway.approvals``: deciding approval requests and running each approved call exactly once.

The persisted state machine and who may decide live in :mod:`agentcore.gateway.approvals`; this is the flow
around it: waiting for a decision and handing a claimed request back to the gateway, which decides the call again
with the approval in hand (a deny added meanwhile still wins) and runs it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import TYPE_CHECKING, Any

from agentcore.gateway.approvals import Approval, ApprovalStore
from agentcore.gateway.cancellation import in_thread, to_thread_settled
from agentcore.gateway.errors import ApprovalError, OutcomeNotRecorded, ToolDenied, ToolExecutionError
from agentcore.gateway.identity import ANY_TENANT, PrincipalLike, TenantFilter, as_principal, canonical_tenant
from agentcore.policies.model import AgentInfo, Principal

if TYPE_CHECKING:
    from agentcore.gateway.gateway import Gateway

log = logging.getLogger(__name__)

_RAN = (OutcomeNotRecorded, ToolExecutionError)  # raised after the call ran, once the gateway had its outcome


class Approvals:
    """``gw.approvals``: list, approve (and execute exactly once), reject, and wait for a decision."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.store = ApprovalStore(gateway.db, gateway.audit, gateway.mode)

    def list(self, status: str | None = "pending", *, tenant: TenantFilter = ANY_TENANT) -> list[Approval]:
        return self.store.list(status, tenant=tenant)

    def get(self, approval_id: str, *, tenant: TenantFilter = ANY_TENANT) -> Approval:
        return self.store.get(approval_id, tenant=tenant)

    def approve(
        self,
        approval_id: str,
        *,
        by: PrincipalLike,
        tenant: str | None = None,
        note: str | None = None,
        execute: bool = True,
    ) -> Any:
        """Sign off as ``by`` of ``tenant`` (the request's tenant; None for a request made without one); once
        every approver role has signed off and with ``execute`` (default), run the call now and return its
        (redacted) result. Otherwise return the :class:`Approval` as it stands."""
        approval = self.store.decide(approval_id, by=as_principal(by), tenant=tenant, approve=True, note=note)
        return self.execute(approval_id) if execute and approval.status == "approved" else approval

    def reject(
        self, approval_id: str, *, by: PrincipalLike, tenant: str | None = None, note: str | None = None
    ) -> Approval:
        return self.store.decide(approval_id, by=as_principal(by), tenant=tenant, approve=False, note=note)

    def of_requester(
        self,
        approval_id: str,
        *,
        tool: str,
        principal: Principal,
        agent: AgentInfo,
        session: str | None,
        tenant: str | None,
    ) -> Approval:
        """The approval ``approval_id`` when it is this caller's request for ``tool`` (the MCP proxy's ``_meta``
        resume names one). Any other answer is audited, as a denied call: naming an approval that is not yours
        is an attempt on someone else's call."""
        approval_id = approval_id[:100]  # ids are 24 characters; a longer text is echoed back and audited bounded
        try:
            approval = self.store.get(approval_id)
            if not approval.is_requested_by(tool, principal.id, agent.id, canonical_tenant(tenant)):
                raise ApprovalError(f"approval {approval_id} is not a request of yours for this tool")
        except ApprovalError as refused:
            event = self.gateway._event(tool, principal, session, tenant)
            self.gateway._record(event, "deny", "invalid", {"error": str(refused), "approval_id": approval_id})
            raise
        return approval

    def execute(self, approval_id: str) -> Any:
        """Run an approved call once; a later call returns the stored result instead of executing again."""
        if not self.store.claim(approval_id):  # someone else claimed it, or it is not approved (any longer)
            return self._settled(self.store.get(approval_id))
        try:
            return self.gateway.run_approved(self.store.get(approval_id))
        except _RAN:  # it ran: the gateway settles the approval with the outcome (now, or once storage is back)
            raise
        except BaseException as exc:  # not admitted again (a deny won): no outcome was recorded for it yet
            self.store.finish(approval_id, ok=False, result=_failure(exc))
            raise

    async def aexecute(self, approval_id: str) -> Any:
        claim = functools.partial(self.store.claim, approval_id)
        if not await to_thread_settled(claim, functools.partial(self._unclaimed, approval_id)):
            return self._settled(await asyncio.to_thread(self.store.get, approval_id))
        try:
            return await self.gateway.arun_approved(await asyncio.to_thread(self.store.get, approval_id))
        except _RAN:
            raise
        except BaseException as exc:
            await in_thread(functools.partial(self.store.finish, approval_id, ok=False, result=_failure(exc)))
            raise

    def _unclaimed(self, approval_id: str, claimed: bool) -> None:
        """A claim made for an ``aexecute`` cancelled meanwhile: settled as failed (nothing ran), not left
        ``executing`` forever, which no one could execute or settle again."""
        if claimed:
            try:
                self.store.finish(approval_id, ok=False, result={"error": "cancelled before it ran"})
            except Exception:  # it stays executing: no call runs for it, and the log says why
                log.exception("gateway: could not settle the cancelled execution of approval %s", approval_id)

    async def wait(self, approval_id: str, timeout_s: float, poll_s: float = 0.05) -> Any:
        """Wait for a decision on ``approval_id``; then execute (once) or raise why not."""
        deadline = time.monotonic() + timeout_s
        while (approval := await asyncio.to_thread(self.store.get, approval_id)).status == "pending":
            if time.monotonic() >= deadline:
                raise ApprovalError(f"approval {approval_id} is still pending after {timeout_s:g}s")
            await asyncio.sleep(poll_s)
        return await self.aexecute(approval_id) if approval.status == "approved" else self._settled(approval)

    def wait_sync(self, approval_id: str, timeout_s: float, poll_s: float = 0.05) -> Any:
        deadline = time.monotonic() + timeout_s
        while (approval := self.store.get(approval_id)).status == "pending":
            if time.monotonic() >= deadline:
                raise ApprovalError(f"approval {approval_id} is still pending after {timeout_s:g}s")
            time.sleep(poll_s)
        return self.execute(approval_id) if approval.status == "approved" else self._settled(approval)

    def _settled(self, approval: Approval) -> Any:
        if approval.status == "executed":
            return approval.result
        if approval.status == "executing":
            raise ApprovalError(f"approval {approval.id} is being executed by another caller")
        note = f" ({approval.note})" if approval.note else ""
        if approval.status == "rejected":
            raise ToolDenied(approval.tool, [f"approval {approval.id} was rejected by {approval.decided_by}{note}"])
        stored = approval.result if isinstance(approval.result, dict) else {}
        detail, shown = stored.get("error"), stored.get("agent_message")
        raise ApprovalError(  # a model or an MCP client sees why without the developer text (a resolver's error)
            f"approval {approval.id} is {approval.status}{': ' + detail if detail else ''}",
            agent_message=f"approval {approval.id} is {approval.status}{': ' + shown if shown else ''}",
        )


def _failure(exc: BaseException) -> dict[str, str]:
    """The stored outcome of an approved call that did not run: why for developers, and the text a model may see
    (a ToolDenied's ``agent_message``) when the exception carries one."""
    shown = getattr(exc, "agent_message", None)
    return {"error": str(exc)} | ({"agent_message": shown} if isinstance(shown, str) else {})
