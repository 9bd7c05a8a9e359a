"""Erase one data subject from a gateway database without touching the audit chain.

The subject's audit keys are deleted (their sealed records can no longer be read, and still verify), and so are
their rows of call history, their rate-limit reservations (whose bucket names them) and their approval
requests (with every sign-off on them); approvals they decided lose the approver's name, their sign-offs on
requests still pending are withdrawn (the role needs a sign-off again: one person never meets two roles under
two names) and those on settled requests lose their name and note.
SQLite deletes with ``secure_delete`` (freed bytes are zeroed) and the WAL is then checkpointed and truncated, so
no copy of a deleted page stays behind in ``-wal``; PostgreSQL vacuums the tables so dead row versions go.
"""

from __future__ import annotations

import json
import logging

from pydantic import BaseModel
from sqlalchemy import inspect, text

from agentcore.gateway.approvals import ApprovalRow, SignoffRow
from agentcore.gateway.db import Database
from agentcore.gateway.sealing import Sealer
from agentcore.gateway.state import CallRow, forget_cached_history
from agentcore.text import canonical_text

log = logging.getLogger(__name__)
_TABLES = ("gateway_audit_subjects", "gateway_calls", "gateway_approvals", "gateway_approval_signoffs")
ERASED = "(erased)"  # the approver of a settled sign-off whose approver was forgotten
_LEGACY_RESERVATIONS = "gateway_reservations"  # rate-limit buckets of earlier gateways; their names hold user ids


class ForgetReport(BaseModel):
    """What ``forget`` removed from the gateway tables."""

    subject_keys: int
    calls: int
    approvals: int
    signoffs: int = 0


def forget_subject(db: Database, subject: str, sealer: Sealer | None = None) -> ForgetReport:
    """Destroy ``subject``'s audit keys and delete their history and approvals, in one transaction.

    ``subject`` is read in canonical form, the spelling calls, keys and sign-offs store: ``forget("s\u200bam")``
    is sam, whose sign-offs on pending requests must go (another spelling would match nothing and leave them)."""
    if not isinstance(subject, str) or not subject:
        raise ValueError("forget needs a non-empty subject id")
    subject = canonical_text(subject)
    sealer = sealer or Sealer(db)
    db.create([CallRow, ApprovalRow, SignoffRow])
    legacy = inspect(db.engine).has_table(_LEGACY_RESERVATIONS)
    with db.write("gateway_audit") as cur:
        keys = sealer.forget(subject, cur)
        cur.execute(db.sql('DELETE FROM gateway_calls WHERE "user" = ?'), (subject,))
        calls = int(cur.rowcount)
        if legacy:
            cur.execute("SELECT DISTINCT bucket FROM gateway_reservations")
            named = [(b,) for (b,) in cur.fetchall() if f"|user|{subject}|" in b]  # rule|scope|key|window|limit
            cur.executemany(db.sql("DELETE FROM gateway_reservations WHERE bucket = ?"), named)
        cur.execute("SELECT id, principal, decided_by, status FROM gateway_approvals")
        rows = cur.fetchall()
        requested = [(r[0],) for r in rows if json.loads(r[1]).get("id") == subject]
        decided = [(r[0],) for r in rows if r[2] == subject]
        pending = [(r[0], subject) for r in rows if r[3] == "pending"]
        cur.executemany(db.sql("DELETE FROM gateway_approvals WHERE id = ?"), requested)
        cur.executemany(db.sql("DELETE FROM gateway_approval_signoffs WHERE approval_id = ?"), requested)
        cur.executemany(db.sql("UPDATE gateway_approvals SET decided_by = NULL, note = NULL WHERE id = ?"), decided)
        cur.execute(db.sql("SELECT COUNT(*) FROM gateway_approval_signoffs WHERE approver = ?"), (subject,))
        signoffs = int(cur.fetchone()[0])
        cur.executemany(db.sql("DELETE FROM gateway_approval_signoffs WHERE approval_id = ? AND approver = ?"), pending)
        cur.execute(
            db.sql("UPDATE gateway_approval_signoffs SET approver = ?, note = NULL WHERE approver = ?"),
            (ERASED, subject),
        )
    forget_cached_history()
    _leave_no_copies(db)
    report = ForgetReport(subject_keys=keys, calls=calls, approvals=len(requested), signoffs=signoffs)
    log.info("forgot audit subject: %s", report)
    return report


def _leave_no_copies(db: Database) -> None:
    if db.backend == "sqlite":
        if not db.truncate_wal():
            log.warning("WAL checkpoint was blocked by a reader; deleted keys stay in the WAL until the next one")
        return
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table in _TABLES + ((_LEGACY_RESERVATIONS,) if inspect(db.engine).has_table(_LEGACY_RESERVATIONS) else ()):
            conn.execute(text(f"VACUUM {table}"))
