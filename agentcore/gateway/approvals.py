"""Persisted approval requests and the rules for deciding them.

State machine: pending -> approved | rejected | expired; approved -> executing -> executed | failed. Every
transition is a conditional UPDATE, so concurrent approvers or waiters cannot execute a call twice: exactly one
claim of an approved request succeeds. Only a principal holding one of the approver roles may decide, never the
requester.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlmodel import Field, SQLModel

from agentcore.gateway import canonical
from agentcore.gateway.db import Database
from agentcore.gateway.errors import ApprovalError
from agentcore.policies.model import Principal

_COLS = (
    "id", "created", "expires", "status", "tool", "args", "principal", "agent", "session", "tenant",
    "approver_roles", "rules", "decided_by", "decided_at", "note", "result",
)  # fmt: skip


class ApprovalRow(SQLModel, table=True):
    __tablename__ = "gateway_approvals"

    id: str = Field(primary_key=True)
    created: float
    expires: float
    status: str = Field(index=True)
    tool: str
    args: str
    principal: str
    agent: str
    session: str | None = None
    tenant: str | None = None
    approver_roles: str
    rules: str
    decided_by: str | None = None
    decided_at: float | None = None
    note: str | None = None
    result: str | None = None


class Approval(BaseModel):
    """One approval request as users see it (``args`` canonical, ``principal``/``agent`` as dicts)."""

    model_config = ConfigDict(frozen=True)

    id: str
    created: float
    expires: float
    status: str
    tool: str
    args: dict[str, Any]
    principal: dict[str, Any]
    agent: dict[str, Any]
    session: str | None
    tenant: str | None
    approver_roles: list[str]
    rules: list[str]
    decided_by: str | None
    decided_at: float | None
    note: str | None
    result: Any = None

    @property
    def requester(self) -> str:
        return str(self.principal["id"])


class ApprovalStore:
    """CRUD and guarded transitions of approval requests in the gateway database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        db.create([ApprovalRow])
        q = db.sql
        self._insert = q(f"INSERT INTO gateway_approvals ({', '.join(_COLS)}) VALUES ({', '.join('?' * len(_COLS))})")
        self._get = q(f"SELECT {', '.join(_COLS)} FROM gateway_approvals WHERE id = ?")
        self._move = q("UPDATE gateway_approvals SET status = ? WHERE id = ? AND status = ?")
        self._decide = q(
            "UPDATE gateway_approvals SET status = ?, decided_by = ?, decided_at = ?, note = ? "
            "WHERE id = ? AND status = 'pending' AND expires > ?"
        )
        self._finish = q("UPDATE gateway_approvals SET status = ?, result = ? WHERE id = ? AND status = 'executing'")

    def create(
        self,
        *,
        tool: str,
        args: dict[str, Any],
        principal: dict[str, Any],
        agent: dict[str, Any],
        session: str | None,
        tenant: str | None,
        approver_roles: list[str],
        rules: list[str],
        ttl_s: float,
    ) -> Approval:
        now = time.time()
        row = {
            "id": "apr_" + uuid.uuid4().hex[:20], "created": now, "expires": now + ttl_s, "status": "pending",
            "tool": tool, "args": canonical.dumps(args), "principal": canonical.dumps(principal),
            "agent": canonical.dumps(agent), "session": session, "tenant": tenant,
            "approver_roles": canonical.dumps(approver_roles), "rules": canonical.dumps(rules),
            "decided_by": None, "decided_at": None, "note": None, "result": None,
        }  # fmt: skip
        with self.db.write("gateway_approvals") as cur:
            cur.execute(self._insert, tuple(row[c] for c in _COLS))
        return _approval(row)

    def get(self, approval_id: str) -> Approval:
        with self.db.read() as cur:
            cur.execute(self._get, (approval_id,))
            found = cur.fetchone()
        if found is None:
            raise ApprovalError(
                f"no approval request {approval_id!r}; list them with `agentcore gateway approvals list`"
            )
        approval = _approval(dict(zip(_COLS, found, strict=True)))
        if approval.status == "pending" and approval.expires <= time.time():
            self._transition(approval_id, "pending", "expired")
            return approval.model_copy(update={"status": "expired"})
        return approval

    def list(self, status: str | None = "pending") -> list[Approval]:
        query = f"SELECT {', '.join(_COLS)} FROM gateway_approvals"
        params: tuple[Any, ...] = ()
        if status is not None:
            query, params = query + " WHERE status = ?", (status,)
        with self.db.read() as cur:
            cur.execute(self.db.sql(query + " ORDER BY created"), params)
            rows = cur.fetchall()
        return [_approval(dict(zip(_COLS, r, strict=True))) for r in rows]

    def decide(self, approval_id: str, *, by: Principal, approve: bool, note: str | None = None) -> Approval:
        """Approve or reject a pending request; raise ApprovalError naming what is wrong."""
        approval = self.get(approval_id)
        if approval.status != "pending":
            raise ApprovalError(f"approval {approval_id} is {approval.status}, not pending; nothing to decide")
        if by.id == approval.requester:
            raise ApprovalError(f"{by.id!r} requested this call and cannot decide its own approval {approval_id}")
        roles = approval.approver_roles
        if roles and not set(roles) & set(by.roles):
            raise ApprovalError(
                f"{by.id!r} lacks the approver role for {approval_id}: needs one of {', '.join(sorted(roles))}"
            )
        status = "approved" if approve else "rejected"
        with self.db.write("gateway_approvals") as cur:
            cur.execute(self._decide, (status, by.id, time.time(), note, approval_id, time.time()))
            changed = cur.rowcount
        if changed != 1:
            raise ApprovalError(f"approval {approval_id} was decided or expired concurrently; check its status")
        return self.get(approval_id)

    def claim(self, approval_id: str) -> bool:
        """Move approved -> executing; True for exactly one caller."""
        return self._transition(approval_id, "approved", "executing")

    def finish(self, approval_id: str, *, ok: bool, result: Any) -> None:
        with self.db.write("gateway_approvals") as cur:
            cur.execute(self._finish, ("executed" if ok else "failed", canonical.dumps(result), approval_id))

    def _transition(self, approval_id: str, old: str, new: str) -> bool:
        with self.db.write("gateway_approvals") as cur:
            cur.execute(self._move, (new, approval_id, old))
            return bool(cur.rowcount == 1)


def _approval(row: dict[str, Any]) -> Approval:
    values = dict(row)
    for key in ("args", "principal", "agent", "approver_roles", "rules"):
        values[key] = json.loads(values[key])
    values["result"] = None if values["result"] is None else json.loads(values["result"])
    return Approval(**values)
