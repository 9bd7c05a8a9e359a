"""Reader for agentcore's own JSONL trace schema: one session object per line (see docs/evaluations.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentcore.evaluations.errors import TraceFormatError
from agentcore.evaluations.trace import SCHEMA_VERSION, Session
from agentcore.text import LONE_SURROGATE

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json(path: Path, number: int | None, text: str) -> Any:
    """``text`` parsed; JSON spells a lone surrogate (``"\\ud800"``, half a UTF-16 pair) that is no text and that
    no report can write (``eval run`` stopped with a serialisation traceback), so one is refused with file:line."""
    value = json.loads(text)
    if _ESCAPED_SURROGATE.search(text):  # a surrogate the file spells whole is a pair: json.loads joined it
        found = LONE_SURROGATE.search(json.dumps(value, ensure_ascii=False))
        if found is not None:
            problem = f"contains the lone surrogate {found.group()!a}, which is not text; write the pair whole"
            raise TraceFormatError(path, number, problem)
    return value


def json_lines(path: Path, text: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line; invalid JSON names the file and line."""
    content = path.read_text(encoding="utf-8") if text is None else text
    for number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, parse_json(path, number, line)
        except json.JSONDecodeError as error:
            raise TraceFormatError(path, number, f"invalid JSON ({error.msg} at column {error.colno})") from None


def describe_validation(error: ValidationError) -> str:
    """The first few pydantic problems as ``field.path: message`` (what a user needs to fix the file)."""
    parts = []
    for item in error.errors()[:3]:
        where = ".".join(str(part) for part in item["loc"]) or "(root)"
        parts.append(f"{where}: {item['msg']}")
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def read_jsonl_sessions(path: Path, text: str | None = None) -> list[Session]:
    """Parse one session per non-blank line; ``schema`` (if present) must be ``agentcore.trace/1``."""
    sessions: list[Session] = []
    seen: dict[str, int] = {}
    for number, record in json_lines(path, text):
        if not isinstance(record, dict):
            raise TraceFormatError(path, number, f"expected a JSON object (a session), got {type(record).__name__}")
        schema = record.pop("schema", SCHEMA_VERSION)
        if schema != SCHEMA_VERSION:
            raise TraceFormatError(
                path, number, f"unsupported schema {schema!r}; this version reads {SCHEMA_VERSION!r}"
            )
        try:
            session = Session.model_validate(record)
        except ValidationError as error:
            raise TraceFormatError(path, number, describe_validation(error)) from None
        if session.id in seen:
            raise TraceFormatError(path, number, f"session id {session.id!r} repeats line {seen[session.id]}")
        seen[session.id] = number
        sessions.append(session)
    return sessions
