"""Reader for the gateway's audit export (``agentcore gateway audit export``): one JSON record per line.

Decision and execution records of the same ``call_id`` become one :class:`ToolCall` (arguments, gateway
decision, error), grouped by ``session`` into one turn per session in chain order. The audit log holds no
conversation text, so these sessions feed the tool-call, goal and trajectory evaluators, not the text ones.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from agentcore.evaluations.errors import TraceFormatError
from agentcore.evaluations.importers.jsonl import json_lines
from agentcore.evaluations.trace import Session, ToolCall, Trace

AUDIT_KEYS = frozenset({"seq", "kind", "call_id", "tool", "prev_hash"})
_FAILED_OUTCOMES = {"error", "timeout", "invalid", "cancelled", "interrupted"}
#: decisions under which the call never ran, so no execution record is due
_REFUSED = {"deny", "denied", "needs_approval", "pending", "rejected"}


def is_audit_record(record: object) -> bool:
    return isinstance(record, dict) and set(record) >= AUDIT_KEYS


def read_gateway_sessions(path: Path, text: str | None = None) -> list[Session]:
    """Sessions of tool calls from a gateway audit JSONL export.

    Fails closed: an execution whose outcome is not ``ok`` (an upstream ``isError``, a timeout, a cancellation) is a
    failed call, and so is an allowed call without any execution record (a crash, or an outcome the database
    refused: the audit says "started, outcome unknown"), never a success. Approval records are sign-offs, not
    calls: they add no tool call.
    """
    calls: dict[str, dict[str, Any]] = {}
    order: dict[str, list[str]] = defaultdict(list)
    settled: set[str] = set()
    for number, record in json_lines(path, text):
        if not is_audit_record(record):
            missing = sorted(AUDIT_KEYS - set(record)) if isinstance(record, dict) else sorted(AUDIT_KEYS)
            raise TraceFormatError(path, number, f"not a gateway audit record: missing {', '.join(missing)}")
        detail = record.get("detail") or {}
        if not isinstance(detail, dict):
            raise TraceFormatError(path, number, f"'detail' must be an object, got {type(detail).__name__}")
        if record["kind"] == "approval":
            continue
        call_id = record["call_id"]
        call = calls.get(call_id)
        if call is None:
            call = calls[call_id] = {"name": record["tool"], "arguments": {}, "decision": None, "error": None}
            order[record.get("session") or "gateway"].append(call_id)
        if isinstance(detail.get("args"), dict):
            call["arguments"] = detail["args"]
        if record["kind"] in ("decision", "execution") and record.get("effect"):  # execution: allowed and ran
            call["decision"] = record["effect"]
        outcome = record.get("outcome")
        if record["kind"] == "execution":
            settled.add(call_id)
            if outcome != "ok" or detail.get("error"):
                call["error"] = str(detail.get("error") or outcome or "no outcome recorded")
        elif outcome in _FAILED_OUTCOMES:
            call["error"] = str(detail.get("error") or outcome)
    for call_id, call in calls.items():
        if call_id not in settled and call["error"] is None and (call["decision"] or "").lower() not in _REFUSED:
            call["error"] = "allowed, but the audit holds no outcome for it (started, outcome unknown)"
    sessions = []
    for session_id, call_ids in order.items():
        spans = [ToolCall(id=call_id, **calls[call_id]) for call_id in call_ids]
        sessions.append(Session(id=session_id, traces=[Trace(id=f"{session_id}/calls", spans=list(spans))]))
    return sessions
