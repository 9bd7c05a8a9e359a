"""Importers that turn trace files into :class:`~agentcore.evaluations.trace.Session` objects.

``load_sessions(path)`` picks the format from the content: our JSONL schema (``"traces"`` per line), an
OpenTelemetry OTLP/JSON export (``"resourceSpans"``, whole-file or one export request per line), or the
gateway's audit export (``agentcore gateway audit export``).
"""

from __future__ import annotations

import json
from pathlib import Path

from agentcore.evaluations.errors import TraceFormatError
from agentcore.evaluations.importers.gateway import is_audit_record, read_gateway_sessions
from agentcore.evaluations.importers.jsonl import read_jsonl_sessions, read_trace_text
from agentcore.evaluations.importers.otlp import read_otlp_sessions
from agentcore.evaluations.trace import Session

__all__ = ["load_sessions", "read_gateway_sessions", "read_jsonl_sessions", "read_otlp_sessions"]


def load_sessions(path: str | Path) -> list[Session]:
    """Read every session in ``path`` (agentcore JSONL or OTLP/JSON), raising TraceFormatError with file:line."""
    file = Path(path)
    if not file.is_file():
        raise TraceFormatError(file, None, "trace file does not exist")
    text = read_trace_text(file)
    first = next((line for line in text.splitlines() if line.strip()), "")
    if not first:
        raise TraceFormatError(file, None, "trace file is empty")
    try:
        head = json.loads(first)
    except json.JSONDecodeError:
        head = None
    if isinstance(head, dict) and "traces" in head:
        return read_jsonl_sessions(file, text)
    if is_audit_record(head):
        return read_gateway_sessions(file, text)
    if '"resourceSpans"' in text[:4096] or '"resource_spans"' in text[:4096]:
        return read_otlp_sessions(file, text)
    raise TraceFormatError(
        file,
        1,
        "unrecognised trace format: expected agentcore JSONL (an object with 'traces' per line), OTLP/JSON "
        "('resourceSpans') or a gateway audit export",
    )
