"""Approvals inbox: pending requests with their rules and age, sign-off or rejection, decided history.

Deciding goes through :meth:`ApprovalStore.decide`, the same check of tenant and roles (an approver of the
requester's tenant, a different principal per approver role, never the requester) and the same audit record as the
CLI and the Python API. An approver sees only the requests of their own tenant. The console has no tools:
an approved call runs in the gateway, exactly once (its ``claim``), when its caller waits or retries.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from agentcore.gateway.approvals import Approval, ApprovalStore
from agentcore.gateway.audit import AuditLog
from agentcore.gateway.identity import TenantFilter
from agentcore.gateway.redaction import DETECTORS, Redaction

_PREVIEW = Redaction(detectors=tuple(DETECTORS))  # the inbox previews arguments with every built-in detector applied
HISTORY = ("approved", "rejected", "executing", "executed", "failed", "expired")


@dataclass(frozen=True)
class Row:
    """One request as the inbox shows it."""

    approval: Approval
    args: Any
    rules: list[dict[str, Any]]
    age_s: float
    ttl_s: float


def requested_rules(audit: AuditLog) -> dict[str, list[dict[str, Any]]]:
    """approval id -> the reasons (rule id, file, line, text) of the decision that asked for it."""
    found: dict[str, list[dict[str, Any]]] = {}
    for record in audit.rows():
        if record["kind"] == "decision" and record["effect"] == "needs_approval":
            detail = json.loads(record["detail"])
            if detail.get("approval_id"):
                found[str(detail["approval_id"])] = list(detail.get("reasons", []))
    return found


def rows(store: ApprovalStore, audit: AuditLog, status: str | None, tenant: TenantFilter) -> list[Row]:
    rules, now = requested_rules(audit), time.time()
    if status == "history":
        listed = [a for a in store.list(None, tenant=tenant) if a.status in HISTORY]
    else:
        listed = store.list(status, tenant=tenant)
    ordered = sorted(listed, key=lambda a: a.created, reverse=status == "history")
    return [_row(a, _PREVIEW.apply(a.args)[0], rules, now) for a in ordered]


def one(store: ApprovalStore, audit: AuditLog, approval_id: str, tenant: TenantFilter) -> Row:
    """One request with its arguments as the call will run them: the approver decides on what runs, and a
    destination a detector matches (an email, an IBAN, a card) would otherwise be a placeholder."""
    approval = store.get(approval_id, tenant=tenant)
    return _row(approval, approval.args, requested_rules(audit), time.time())


def _row(approval: Approval, shown: Any, rules: dict[str, list[dict[str, Any]]], now: float) -> Row:
    by_id = rules.get(approval.id) or [{"rule_id": r, "file": "", "line": 0, "text": ""} for r in approval.rules]
    return Row(approval, shown, by_id, now - approval.created, approval.expires - now)
