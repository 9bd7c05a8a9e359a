"""Erase one data subject from a gateway database without touching the audit chain.

The subject's audit keys are deleted (their sealed records can no longer be read, and still verify), and so are
their rows of call history, their rate-limit reservations (whose bucket names them) and their approval
requests (with every sign-off on them); approvals they decided lose the approver's name, their sign-offs on
requests still pending are withdrawn (the role needs a sign-off again: one person never meets two roles under
two names) and those on settled requests lose their name and note.
A subject is an id in a tenant (ids are unique within a tenant only): ``tenant`` picks one, by default the id is
erased in every tenant and without one.
SQLite deletes with ``secure_delete`` (freed bytes are zeroed) and the WAL is then checkpointed and truncated, so
no copy of a deleted page stays behind in ``-wal``; PostgreSQL vacuums the tables so dead row versions go.
A state store of the gateway's own (Redis, another database) is erased after the database's transaction committed:
it cannot join that transaction, and the audit is whole either way (a failure there says to run forget again).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pydantic import BaseModel
from sqlalchemy import inspect

from agentcore.gateway.approvals import ApprovalRow, SignoffRow
from agentcore.gateway.db import Database
from agentcore.gateway.errors import ErasureIncomplete
from agentcore.gateway.identity import ANY_TENANT, TenantFilter, erasure_subject, in_tenant
from agentcore.gateway.sealing import SEALED, Sealer
from agentcore.gateway.state import CallRow, SqlStateStore, StateStore, delete_calls, forget_cached_history
from agentcore.text import canonical_text

log = logging.getLogger(__name__)
_TABLES = ("gateway_audit_subjects", "gateway_calls", "gateway_approvals", "gateway_approval_signoffs")
ERASED = "(erased)"  # the approver of a settled sign-off whose approver was forgotten
_LEGACY_RESERVATIONS = "gateway_reservations"  # rate-limit buckets of earlier gateways; their names hold user ids


class ForgetReport(BaseModel):
    """What ``forget`` removed from the gateway tables.

    ``legacy_keys``: of the ``subject_keys``, those without a tenant that sealed records of a tenant, as gateways
    did before keys were per tenant: erasing the id in one tenant (or without one) destroyed them, which makes the
    id's records under them unreadable in every tenant (erasure that leaves the tenant's records readable is none).
    ``calls``: history rows deleted from the gateway database; ``state_calls``: calls deleted from a state store of
    the gateway's own (Redis, another database), each counted once however many of its sorted sets held it.
    """

    subject_keys: int
    calls: int
    approvals: int
    signoffs: int = 0
    legacy_keys: int = 0
    state_calls: int = 0


def forget_subject(
    db: Database,
    subject: str,
    sealer: Sealer | None = None,
    *,
    tenant: TenantFilter = ANY_TENANT,
    state: StateStore | None = None,
) -> ForgetReport:
    """Destroy ``subject``'s audit keys and delete their history and approvals, in one transaction; then their
    calls in ``state``, the gateway's state store, unless it is this database's history.

    ``tenant``: erase the id in this tenant only (``None``: only what was done without a tenant); by default in
    every tenant and without one. ``subject`` and ``tenant`` are read in canonical form, the spelling calls, keys
    and sign-offs store: ``forget("s\u200bam")`` is sam, whose sign-offs on pending requests must go (another
    spelling would match nothing and leave them)."""
    subject, tenant = erasure_subject(subject, tenant)
    sealer = sealer or Sealer(db)
    db.create([CallRow, ApprovalRow, SignoffRow])
    legacy_reservations = inspect(db.engine).has_table(_LEGACY_RESERVATIONS)
    audited = inspect(db.engine).has_table("gateway_audit")
    with db.write("gateway_audit") as cur:
        doomed = sealer.key_ids(cur, subject, tenant)
        legacy = _legacy_keys(db, cur, sealer, subject, tenant) if audited else []
        keys = sealer.destroy(cur, doomed + [k for k in legacy if k not in doomed])
        calls = delete_calls(db, cur, subject, tenant)
        if legacy_reservations:  # their names hold no tenant: the id's go whatever the tenant
            cur.execute("SELECT DISTINCT bucket FROM gateway_reservations")
            named = [(b,) for (b,) in cur.fetchall() if f"|user|{subject}|" in b]  # rule|scope|key|window|limit
            cur.executemany(db.sql("DELETE FROM gateway_reservations WHERE bucket = ?"), named)
        requested, signoffs = _forget_approvals(db, cur, subject, tenant)
    forget_cached_history()
    db.leave_no_copies((*_TABLES, _LEGACY_RESERVATIONS))
    shared = isinstance(state, SqlStateStore) and state.db.url == db.url  # its history: deleted above
    state_calls = 0 if state is None or shared else _forget_state(state, subject, tenant)
    report = ForgetReport(
        subject_keys=keys,
        calls=calls,
        approvals=requested,
        signoffs=signoffs,
        legacy_keys=len(legacy),
        state_calls=state_calls,
    )
    log.info("forgot audit subject%s: %s", "" if tenant is ANY_TENANT else f" in tenant {tenant!r}", report)
    return report


def _forget_state(state: StateStore, subject: str, tenant: TenantFilter) -> int:
    """The subject's calls deleted from ``state``; a failure says what is erased and what is not."""
    try:
        return state.forget(subject, tenant)
    except ErasureIncomplete:
        raise
    except Exception as error:
        raise ErasureIncomplete(
            f"forget {subject!r}: the gateway database is erased (audit keys, history, approvals), but the calls in "
            f"its state store are not ({type(error).__name__}: {error}); run forget again once the store is back"
        ) from error


def _legacy_keys(db: Database, cur: Any, sealer: Sealer, subject: str, tenant: TenantFilter) -> list[str]:
    """The subject's keys without a tenant that sealed records of a tenant (before keys were per tenant), when
    erasing in one tenant or without one; logged, as erasing there destroys them with the records of the other."""
    if tenant is ANY_TENANT:
        return []
    found: list[str] = []
    for key_id in sealer.key_ids(cur, subject, None):
        prefix = f"{SEALED}{key_id}:"
        cur.execute(
            db.sql("SELECT DISTINCT tenant FROM gateway_audit WHERE substr(detail, 1, ?) = ? AND tenant IS NOT NULL"),
            (len(prefix), prefix),
        )
        tenants = sorted({canonical_text(t) for (t,) in cur.fetchall()})
        if tenants and (tenant is None or tenant in tenants):
            found.append(key_id)
            log.warning(
                "forget: audit key %s has no tenant but sealed records of tenant(s) %s (written before keys were per "
                "tenant); it is destroyed, so the id's records under it are unreadable in every tenant",
                key_id,
                ", ".join(repr(t) for t in tenants),
            )
    return found


def _forget_approvals(db: Database, cur: Any, subject: str, tenant: TenantFilter) -> tuple[int, int]:
    """Delete the subject's requests in ``tenant`` and unname their decisions and sign-offs on the tenant's
    requests (an approver is an id in the request's tenant); (requests deleted, sign-offs withdrawn or unnamed)."""
    cur.execute("SELECT id, principal, decided_by, status, tenant FROM gateway_approvals")
    rows = [r for r in cur.fetchall() if in_tenant(tenant, r[4])]
    requested = [(r[0],) for r in rows if json.loads(r[1]).get("id") == subject]
    decided = [(r[0],) for r in rows if r[2] == subject]
    cur.executemany(db.sql("DELETE FROM gateway_approvals WHERE id = ?"), requested)
    cur.executemany(db.sql("DELETE FROM gateway_approval_signoffs WHERE approval_id = ?"), requested)
    cur.executemany(db.sql("UPDATE gateway_approvals SET decided_by = NULL, note = NULL WHERE id = ?"), decided)
    status = {r[0]: r[3] for r in rows}
    cur.execute(db.sql("SELECT approval_id FROM gateway_approval_signoffs WHERE approver = ?"), (subject,))
    signed = [a for (a,) in cur.fetchall() if tenant is ANY_TENANT or a in status]
    pending = [(a, subject) for a in signed if status.get(a) == "pending"]
    settled = [(ERASED, a, subject) for a in signed if status.get(a) != "pending"]
    cur.executemany(db.sql("DELETE FROM gateway_approval_signoffs WHERE approval_id = ? AND approver = ?"), pending)
    cur.executemany(
        db.sql("UPDATE gateway_approval_signoffs SET approver = ?, note = NULL WHERE approval_id = ? AND approver = ?"),
        settled,
    )
    return len(requested), len(signed)
