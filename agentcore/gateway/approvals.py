"""Persisted approval requests and the rules for deciding them.

State machine: pending -> approved | rejected | expired; approved -> executing -> executed | failed, or
approved -> expired past the TTL. Every transition is a conditional UPDATE, so concurrent approvers or waiters
cannot execute a call twice: exactly one claim of an approved, unexpired request succeeds.

Who decides: a request lists one approver role per requirement (one per role the matching rules name). Each
role needs a sign-off by a principal holding it, every sign-off by a different principal, never the requester;
the request is approved once every role has signed off. A holder of any of the roles may reject it alone. Ids
are unique within a tenant only, so an approver is an id *in a tenant*: only an approver of the requester's
tenant decides (no tenant for a request made without one), and the requester is the same id in that tenant.
Every sign-off and rejection is audited with the approver's identity.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlmodel import Field, SQLModel

from agentcore.gateway import canonical
from agentcore.gateway.audit import AuditEvent, AuditLog
from agentcore.gateway.audit_keys import load_chain_keys
from agentcore.gateway.db import Database
from agentcore.gateway.errors import ApprovalError
from agentcore.gateway.identity import ANY_TENANT, TenantFilter, canonical_tenant
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


class SignoffRow(SQLModel, table=True):
    """One approver role met for one request (its own table: databases of the first release gain it as is)."""

    __tablename__ = "gateway_approval_signoffs"

    approval_id: str = Field(primary_key=True)
    role: str = Field(primary_key=True)
    approver: str
    at: float
    note: str | None = None


class Signoff(BaseModel):
    """``by`` approved the request as a holder of ``role``."""

    model_config = ConfigDict(frozen=True)

    role: str
    by: str
    at: float
    note: str | None = None


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
    signoffs: list[Signoff] = []

    @property
    def requester(self) -> str:
        return str(self.principal["id"])

    @property
    def missing_roles(self) -> list[str]:
        """Approver roles still without a sign-off."""
        done = {s.role for s in self.signoffs}
        return [r for r in self.approver_roles if r not in done]

    def is_call(self, tool: str, args: dict[str, Any], principal: str, agent: str, tenant: str | None) -> bool:
        """Whether this request is for exactly this call (same tool, canonical args and caller)."""
        return self.args == args and self.is_requested_by(tool, principal, agent, tenant)

    def names_roles(self, roles: list[str]) -> bool:
        """Whether every one of ``roles`` is an approver role of this request (so must sign it off)."""
        return set(roles) <= set(self.approver_roles)

    def is_requested_by(self, tool: str, principal: str, agent: str, tenant: str | None) -> bool:
        """Whether this caller (canonical ids and tenant) asked for this request's tool."""
        return (self.tool, self.requester, self.agent.get("id"), self.tenant) == (tool, principal, agent, tenant)


class ApprovalStore:
    """CRUD and guarded transitions of approval requests in the gateway database."""

    def __init__(self, db: Database, audit: AuditLog | None = None, mode: str = "enforce") -> None:
        self.db = db
        self.audit = audit or AuditLog(db, keys=load_chain_keys())  # the environment's chain keys, as the gateway
        self.mode = mode
        db.create([ApprovalRow, SignoffRow])
        q = db.sql
        self._insert = q(f"INSERT INTO gateway_approvals ({', '.join(_COLS)}) VALUES ({', '.join('?' * len(_COLS))})")
        self._get = q(f"SELECT {', '.join(_COLS)} FROM gateway_approvals WHERE id = ?")
        self._move = q("UPDATE gateway_approvals SET status = ? WHERE id = ? AND status = ?")
        self._open = q(
            f"SELECT {', '.join(_COLS)} FROM gateway_approvals "
            "WHERE tool = ? AND args = ? AND status IN ('pending', 'approved') AND expires > ? ORDER BY created"
        )
        self._signoffs = q(
            "SELECT role, approver, at, note FROM gateway_approval_signoffs WHERE approval_id = ? ORDER BY at"
        )
        self._sign = q(
            "INSERT INTO gateway_approval_signoffs (approval_id, role, approver, at, note) VALUES (?, ?, ?, ?, ?)"
        )
        self._claim = q(
            "UPDATE gateway_approvals SET status = 'executing' WHERE id = ? AND status = 'approved' AND expires > ?"
        )
        self._decide = q(
            "UPDATE gateway_approvals SET status = ?, decided_by = ?, decided_at = ?, note = ? "
            "WHERE id = ? AND status = 'pending' AND expires > ?"
        )
        self._waiting = q(
            "SELECT COUNT(*), MIN(created) FROM gateway_approvals WHERE status = 'pending' AND expires > ?"
        )
        self._finish = q("UPDATE gateway_approvals SET status = ?, result = ? WHERE id = ? AND status = 'executing'")

    def request(
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
        """The open (pending or approved, unexpired) request for exactly this call that names every one of
        ``approver_roles``, else a new pending one.

        A caller retrying a call that awaits approval gets the same request back, not another one; retrying it
        once approved gets the approved request, which the gateway then executes (once). A retry that now needs
        a role the open request lacks (the caller's roles or claims changed, or the policy did) is a new request,
        and the old one expires: its sign-offs never cover a requirement their approvers were not asked about,
        and one call never has two open requests that could each run it.
        """
        if not approver_roles:
            raise ValueError("an approval request needs at least one approver role")
        now = time.time()
        encoded = canonical.dumps(args)
        with self.db.write("gateway_approvals") as cur:
            cur.execute(self._open, (tool, encoded, now))
            for found in cur.fetchall():
                approval = _approval(dict(zip(_COLS, found, strict=True)))
                if not approval.is_call(tool, args, str(principal["id"]), str(agent.get("id")), tenant):
                    continue
                if approval.names_roles(approver_roles):
                    return self._load(cur, approval.id)  # with its sign-offs so far
                cur.execute(self._move, ("expired", approval.id, approval.status))  # superseded by the new one
            row = {
                "id": "apr_" + uuid.uuid4().hex[:20], "created": now, "expires": now + ttl_s, "status": "pending",
                "tool": tool, "args": encoded, "principal": canonical.dumps(principal),
                "agent": canonical.dumps(agent), "session": session, "tenant": tenant,
                "approver_roles": canonical.dumps(approver_roles), "rules": canonical.dumps(rules),
                "decided_by": None, "decided_at": None, "note": None, "result": None,
            }  # fmt: skip
            cur.execute(self._insert, tuple(row[c] for c in _COLS))
        return _approval(row)

    def get(self, approval_id: str, *, tenant: TenantFilter = ANY_TENANT) -> Approval:
        """The request; with ``tenant``, only a request of that tenant (another's reads as no such request)."""
        with self.db.read() as cur:
            approval = self._load(cur, approval_id)
        if tenant is not ANY_TENANT and approval.tenant != canonical_tenant(tenant):
            raise _unknown(approval_id)
        if approval.status in ("pending", "approved") and approval.expires <= time.time():
            self._transition(approval_id, approval.status, "expired")
            return approval.model_copy(update={"status": "expired"})
        return approval

    def _load(self, cur: Any, approval_id: str) -> Approval:
        cur.execute(self._get, (approval_id,))
        found = cur.fetchone()
        if found is None:
            raise _unknown(approval_id)
        cur.execute(self._signoffs, (approval_id,))
        signoffs = [Signoff(role=r, by=b, at=at, note=n) for r, b, at, n in cur.fetchall()]
        return _approval(dict(zip(_COLS, found, strict=True))).model_copy(update={"signoffs": signoffs})

    def list(self, status: str | None = "pending", *, tenant: TenantFilter = ANY_TENANT) -> list[Approval]:
        """Requests in ``status`` (None: any), oldest first; with ``tenant``, only that tenant's (an approver UI of
        a multi-tenant app shows its approvers their own tenant's requests)."""
        where: list[str] = []
        params: list[Any] = []
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if tenant is None:
            where.append("tenant IS NULL")
        elif tenant is not ANY_TENANT:
            where.append("tenant = ?")
            params.append(canonical_tenant(tenant))
        query = f"SELECT {', '.join(_COLS)} FROM gateway_approvals" + (" WHERE " + " AND ".join(where) if where else "")
        with self.db.read() as cur:
            cur.execute(self.db.sql(query + " ORDER BY created"), tuple(params))
            rows = cur.fetchall()
        return [self.get(str(r[0])) for r in rows]

    def pending_summary(self) -> tuple[int, float | None]:
        """How many unexpired requests await a decision, and when the oldest was made (for the metrics)."""
        with self.db.read() as cur:
            cur.execute(self._waiting, (time.time(),))
            count, oldest = cur.fetchone()
        return int(count), None if oldest is None else float(oldest)

    def decide(
        self, approval_id: str, *, by: Principal, tenant: str | None = None, approve: bool, note: str | None = None
    ) -> Approval:
        """Sign off one approver role of a pending request (approved once every role has), or reject it, as ``by``
        of ``tenant`` (the approver's; it must be the request's).

        Raise ApprovalError naming what is wrong. The decision and its audit record (who, as which role, in which
        tenant) commit together: no sign-off without its record.
        """
        approval, tenant = self.get(approval_id), canonical_tenant(tenant)
        role = _role_for(approval, by, tenant, approve)
        missing = [r for r in approval.missing_roles if r != role] if approve else approval.missing_roles
        settled = not approve or not missing

        def decide_in(cur: Any) -> None:  # in the audit record's transaction
            current, now = self._load(cur, approval_id), time.time()  # the time now that the lock is held
            if current.status != "pending" or current.expires <= now or current.signoffs != approval.signoffs:
                raise _decided_meanwhile(approval_id)
            if approve:
                cur.execute(self._sign, (approval_id, role, by.id, now, note))
            if settled:
                cur.execute(self._decide, ("approved" if approve else "rejected", by.id, now, note, approval_id, now))
                if cur.rowcount != 1:  # expired by a writer that does not hold the audit's lock (PostgreSQL)
                    raise _decided_meanwhile(approval_id)  # rolls back the sign-off and the audit record

        event = AuditEvent(
            kind="approval",
            call_id=approval.id,
            tool=approval.tool,
            principal=approval.requester,
            agent=str(approval.agent.get("id")),
            session=approval.session,
            tenant=tenant,  # the approver's, which is the request's (checked above)
            effect="approved" if approve else "rejected",
            outcome=None if settled else "awaiting " + ", ".join(missing),
            mode=self.mode,
            detail={"by": by.id, "role": role, "note": note, "rules": approval.rules, "missing": missing},
        )
        self.audit.append(event, also=decide_in)
        return self.get(approval_id)

    def claim(self, approval_id: str) -> bool:
        """Move approved -> executing while the request is unexpired; True for exactly one caller."""
        with self.db.write("gateway_approvals") as cur:
            cur.execute(self._claim, (approval_id, time.time()))
            return bool(cur.rowcount == 1)

    def finish(self, approval_id: str, *, ok: bool, result: Any) -> None:
        """executing -> executed | failed; nothing happens once the outcome is recorded."""
        with self.db.write("gateway_approvals") as cur:
            cur.execute(self._finish, ("executed" if ok else "failed", canonical.dumps(result), approval_id))

    def _transition(self, approval_id: str, old: str, new: str) -> bool:
        with self.db.write("gateway_approvals") as cur:
            cur.execute(self._move, (new, approval_id, old))
            return bool(cur.rowcount == 1)


def _role_for(approval: Approval, by: Principal, tenant: str | None, approve: bool) -> str:
    """The approver role ``by`` of ``tenant`` decides ``approval`` as; ApprovalError says why they may not.

    The tenant is checked first, so an approver of another tenant learns nothing of the request (not its status).
    """
    aid = approval.id
    if tenant != approval.tenant:
        raise ApprovalError(_other_tenant(aid, tenant, approval.tenant is None))
    if approval.status != "pending":
        raise ApprovalError(f"approval {aid} is {approval.status}, not pending; nothing to decide")
    if (by.id, tenant) == (approval.requester, approval.tenant):
        raise ApprovalError(f"{by.id!r} requested this call and cannot decide its own approval {aid}")
    if not approval.approver_roles:
        raise ApprovalError(f"approval {aid} names no approver role, so no one may decide it")
    signed = next((s for s in approval.signoffs if s.by == by.id), None)
    if signed is not None:
        raise ApprovalError(
            f"{by.id!r} already approved {aid} as {signed.role!r}; another principal must sign off "
            f"{', '.join(approval.missing_roles)}"
        )
    open_roles = approval.missing_roles if approve else approval.approver_roles
    role = next((r for r in open_roles if r in by.roles), None)
    if role is None:
        raise ApprovalError(
            f"{by.id!r} lacks the approver role for {aid}: needs one of {', '.join(sorted(open_roles))}"
        )
    return role


def _other_tenant(approval_id: str, tenant: str | None, untenanted: bool) -> str:
    """Why an approver of ``tenant`` may not decide a request of another tenant (whose name is not shown)."""
    if tenant is None:
        return (
            f"approval {approval_id} was requested in a tenant: only an approver of that tenant may decide it; "
            "pass the approver's tenant (tenant=..., --tenant)"
        )
    if untenanted:
        return f"approval {approval_id} was requested without a tenant: only an approver without one may decide it"
    return f"approval {approval_id} is not a request of tenant {tenant!r}: only an approver of its tenant may decide it"


def _decided_meanwhile(approval_id: str) -> ApprovalError:
    return ApprovalError(f"approval {approval_id} was decided meanwhile or expired; check its status")


def _unknown(approval_id: str) -> ApprovalError:
    return ApprovalError(f"no approval request {approval_id!r}; list them with `agentcore gateway approvals list`")


def _approval(row: dict[str, Any]) -> Approval:
    values = dict(row)
    for key in ("args", "principal", "agent", "approver_roles", "rules"):
        values[key] = json.loads(values[key])
    values["result"] = None if values["result"] is None else json.loads(values["result"])
    return Approval(**values)
