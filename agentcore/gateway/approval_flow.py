"""``gateway.approvals``: deciding approval requests and running each approved call exactly once.

The persisted state machine lives in :mod:`agentcore.gateway.approvals`; this is the flow around it: who may
decide, waiting for a decision, and re-admitting the call through the gateway (a deny added meanwhile still wins).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from agentcore.gateway.approvals import Approval, ApprovalStore
from agentcore.gateway.audit import AuditEvent
from agentcore.gateway.errors import ApprovalError, ToolDenied
from agentcore.gateway.identity import PrincipalLike, as_principal
from agentcore.policies.model import Principal

if TYPE_CHECKING:
    from agentcore.gateway.gateway import Gateway, _Plan


class Approvals:
    """``gw.approvals``: list, approve (and execute exactly once), reject, and wait for a decision."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.store = ApprovalStore(gateway.db)

    def list(self, status: str | None = "pending") -> list[Approval]:
        return self.store.list(status)

    def get(self, approval_id: str) -> Approval:
        return self.store.get(approval_id)

    def approve(self, approval_id: str, *, by: PrincipalLike, note: str | None = None, execute: bool = True) -> Any:
        """Approve; with ``execute`` (default) run the original call now and return its (redacted) result."""
        approval = self.store.decide(approval_id, by=as_principal(by), approve=True, note=note)
        self._audit(approval, "approved")
        return self.execute(approval_id) if execute else approval

    def reject(self, approval_id: str, *, by: PrincipalLike, note: str | None = None) -> Approval:
        approval = self.store.decide(approval_id, by=as_principal(by), approve=False, note=note)
        self._audit(approval, "rejected")
        return approval

    def execute(self, approval_id: str) -> Any:
        """Run an approved call once; a later call returns the stored result instead of executing again."""
        plan, settled = self._claim(approval_id)
        return settled if plan is None else self.gateway._run_sync(plan)

    async def aexecute(self, approval_id: str) -> Any:
        plan, settled = self._claim(approval_id)
        return settled if plan is None else await self.gateway._run_async(plan)

    def _claim(self, approval_id: str) -> tuple[_Plan | None, Any]:
        """(plan to execute, None) for the one caller that claims the approval; (None, outcome) for the others."""
        if not self.store.claim(approval_id):
            return None, self._settled(self.store.get(approval_id))
        approval = self.store.get(approval_id)
        try:
            return self._replan(approval), None
        except BaseException as exc:
            self.store.finish(approval_id, ok=False, result={"error": str(exc)})
            raise

    async def wait(self, approval_id: str, timeout_s: float, poll_s: float = 0.05) -> Any:
        """Wait for a decision on ``approval_id``; then execute (once) or raise why not."""
        deadline = time.monotonic() + timeout_s
        while True:
            approval = self.store.get(approval_id)
            if approval.status != "pending":
                break
            if time.monotonic() >= deadline:
                raise ApprovalError(f"approval {approval_id} is still pending after {timeout_s:g}s")
            await asyncio.sleep(poll_s)
        if approval.status == "approved":
            return await self.aexecute(approval_id)
        return self._settled(approval)

    def wait_sync(self, approval_id: str, timeout_s: float, poll_s: float = 0.05) -> Any:
        deadline = time.monotonic() + timeout_s
        while (approval := self.store.get(approval_id)).status == "pending":
            if time.monotonic() >= deadline:
                raise ApprovalError(f"approval {approval_id} is still pending after {timeout_s:g}s")
            time.sleep(poll_s)
        return self.execute(approval_id) if approval.status == "approved" else self._settled(approval)

    def _replan(self, approval: Approval) -> _Plan:
        """Re-run admission with the approval in hand: a deny rule still wins (the policy may have changed)."""
        plan = self.gateway._admit(
            approval.tool,
            approval.args,
            Principal.model_validate(approval.principal),
            approval.agent,
            approval.session,
            approval.tenant,
            approved=approval,
        )
        if isinstance(plan, Approval):  # pragma: no cover - admission with an approval never asks for another
            raise ApprovalError(f"approval {approval.id} could not be executed")
        return plan

    def _settled(self, approval: Approval) -> Any:
        if approval.status == "executed":
            return approval.result
        if approval.status == "executing":
            raise ApprovalError(f"approval {approval.id} is being executed by another caller")
        note = f" ({approval.note})" if approval.note else ""
        if approval.status == "rejected":
            raise ToolDenied(approval.tool, [f"approval {approval.id} was rejected by {approval.decided_by}{note}"])
        detail = approval.result.get("error") if isinstance(approval.result, dict) else None
        raise ApprovalError(f"approval {approval.id} is {approval.status}{': ' + detail if detail else ''}")

    def _audit(self, approval: Approval, effect: str) -> None:
        self.gateway.audit.append(
            AuditEvent(
                kind="approval",
                call_id=approval.id,
                tool=approval.tool,
                principal=approval.requester,
                agent=str(approval.agent.get("id")),
                session=approval.session,
                tenant=approval.tenant,
                effect=effect,
                mode=self.gateway.mode,
                detail={"by": approval.decided_by, "note": approval.note, "rules": approval.rules},
            )
        )
