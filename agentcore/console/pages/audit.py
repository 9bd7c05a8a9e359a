"""Audit explorer: filtered records, one call's records, and the chain's verification status.

Verification is :meth:`AuditLog.verify` (against the anchors when configured), the same walk as
``agentcore gateway audit verify``; its first bad record is highlighted wherever it is listed. A viewer sees the
records of their own tenant only (a viewer without one: records made without a tenant), as the approvals inbox
shows requests; the chain's status stays whole-chain, since it names no record's content.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentcore.errors import AgentCoreError
from agentcore.gateway.anchors import AnchorSink
from agentcore.gateway.audit import AuditLog, VerifyResult
from agentcore.gateway.identity import canonical_tenant
from agentcore.text import canonical_text

LIMIT = 500
FILTERS = ("user", "agent", "tool", "effect", "rule", "since", "until")


@dataclass(frozen=True)
class Chain:
    """The verification result, or why the chain could not be checked."""

    result: VerifyResult | None
    error: str | None = None

    @property
    def first_bad(self) -> int | None:
        return self.result.first_bad if self.result is not None and not self.result.ok else None


@dataclass
class Query:
    """The explorer's filters (empty: any); ``since``/``until`` are dates or ISO date-times, UTC if unzoned."""

    values: dict[str, str] = field(default_factory=dict)

    def problems(self) -> list[str]:
        bad = [(name, text) for name in ("since", "until") if (text := self.values.get(name)) and _moment(text) is None]
        return [f"{name}: {text!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM)" for name, text in bad]

    def matches(self, record: dict[str, Any], detail: dict[str, Any]) -> bool:
        v = self.values
        if v.get("user") and record["principal"] != v["user"]:
            return False
        if v.get("agent") and record["agent"] != v["agent"]:
            return False
        if v.get("tool") and record["tool"] != v["tool"]:
            return False
        if v.get("effect") and record["effect"] != v["effect"]:
            return False
        if v.get("rule") and v["rule"] not in {r.get("rule_id") for r in detail.get("reasons", [])}:
            return False
        since, until = _moment(v.get("since", "")), _moment(v.get("until", ""))
        return not ((since is not None and record["ts"] < since) or (until is not None and record["ts"] > until))


def _moment(text: str) -> float | None:
    if not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)).timestamp()


def verify(audit: AuditLog, anchors: AnchorSink | None) -> Chain:
    try:
        return Chain(audit.verify(anchors))
    except AgentCoreError as error:
        return Chain(None, str(error))


def _of_tenant(audit: AuditLog, tenant: str | None) -> Iterator[dict[str, Any]]:
    """The records of ``tenant`` (None: those made without one), in chain order.

    Both sides are compared canonical: a call refused before validation stores its tenant as the caller sent it.
    A stored tenant of an odd type (a tampered row) is nobody's, so it cannot break the page that shows tampering.
    """
    wanted = canonical_tenant(tenant)
    return (record for record in audit.rows() if _same_tenant(record["tenant"], wanted))


def _same_tenant(stored: object, wanted: str | None) -> bool:
    if wanted is None:
        return stored is None
    return isinstance(stored, str) and canonical_text(stored) == wanted


def search(audit: AuditLog, query: Query, tenant: str | None) -> tuple[list[dict[str, Any]], int]:
    """``tenant``'s matching records, newest first (at most LIMIT), and how many matched in all."""
    found: list[dict[str, Any]] = []
    for record in _of_tenant(audit, tenant):
        detail = json.loads(record["detail"])
        if query.matches(record, detail):
            found.append({**record, "detail": detail})
    found.reverse()
    return found[:LIMIT], len(found)


def call_records(audit: AuditLog, seq: int, tenant: str | None) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The record ``seq`` and every record of the same call (decision, execution, approvals) in chain order, of
    ``tenant`` only: another tenant's record ``seq`` is None, as a missing one is."""
    records = [{**r, "detail": json.loads(r["detail"])} for r in _of_tenant(audit, tenant)]
    record = next((r for r in records if r["seq"] == seq), None)
    if record is None:
        return None, []
    call = record["call_id"]
    approval = record["detail"].get("approval_id")
    return record, [r for r in records if r["call_id"] == call or (approval and r["call_id"] == approval)]
