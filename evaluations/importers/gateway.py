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
_FAILED_OUTCOMES = {"error", "timeout", "invalid"}


def is_audit_record(record: object) -> bool:
    return isinstance(record, dict) and set(record) >= AUDIT_KEYS


def read_gateway_sessions(path: Path, text: str | None = None) -> list[Session]:
    """Sessions of tool calls from a gateway audit JSONL export."""
    calls: dict[str, dict[str, Any]] = {}
    order: dict[str, list[str]] = defaultdict(list)
    for number, record in json_lines(path, text):
        if not is_audit_record(record):
            missing = sorted(AUDIT_KEYS - set(record)) if isinstance(record, dict) else sorted(AUDIT_KEYS)
            raise TraceFormatError(path, number, f"not a gateway audit record: missing {', '.join(missing)}")
        detail = record.get("detail") or {}
        call = calls.get(record["call_id"])
        if call is None:
            call = calls[record["call_id"]] = {"name": record["tool"], "arguments": {}, "decision": None, "error": None}
            order[record.get("session") or "gateway"].append(record["call_id"])
        if isinstance(detail.get("args"), dict):
            call["arguments"] = detail["args"]
        if record["kind"] in ("decision", "execution") and record.get("effect"):  # execution: allowed and ran
            call["decision"] = record["effect"]
        if record.get("outcome") in _FAILED_OUTCOMES or (record["kind"] == "execution" and detail.get("error")):
            call["error"] = str(detail.get("error") or record["outcome"])
    sessions = []
    for session_id, call_ids in order.items():
        spans = [ToolCall(id=call_id, **calls[call_id]) for call_id in call_ids]
        sessions.append(Session(id=session_id, traces=[Trace(id=f"{session_id}/calls", spans=list(spans))]))
    return sessions
