"""Reader for agentcore's own JSONL trace schema: one session object per line (see docs/evaluations.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentcore.evaluations.errors import TraceFormatError
from agentcore.evaluations.trace import SCHEMA_VERSION, Session
from agentcore.text import LONE_SURROGATE, printable

#: UTF-8 text cannot hold a surrogate: only a JSON ``\\u`` escape makes one, so text without it needs no walk
ESCAPE = "\\u"


def read_trace_text(path: Path) -> str:
    """The file's text; bytes that are not UTF-8 are bad input naming the line and column, not a crash."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line_start = data.rfind(b"\n", 0, error.start) + 1
        where = f"byte 0x{data[error.start]:02x} at column {error.start - line_start + 1}"
        raise TraceFormatError(path, data.count(b"\n", 0, error.start) + 1, f"not UTF-8 text ({where})") from None


def lone_surrogate_at(value: Any, where: str = "$") -> str | None:
    """The JSON path of the first string (or key) in ``value`` holding a lone surrogate, else None.

    ``json`` decodes an escaped ``"\\ud800"`` to one, and no encoding can write it: every report writer would
    fail on it, so a trace holding one is refused at import (as the gateway refuses such arguments)."""
    stack = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if LONE_SURROGATE.search(item):
                return path
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                if LONE_SURROGATE.search(str(key)):
                    return f"{path} (a key)"
                stack.append((child, f"{path}.{printable(str(key))}"))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}[{index}]") for index, child in reversed(list(enumerate(item))))
    return None


def refuse_lone_surrogates(path: Path, line: int | None, value: Any, where: str = "$") -> None:
    """Raise TraceFormatError naming the file, line and JSON path of a lone surrogate in ``value``."""
    found = lone_surrogate_at(value, where)
    if found is not None:
        raise TraceFormatError(
            path,
            line,
            f"{found}: contains a lone surrogate (an escape such as \\ud800 with no pair), which is not text "
            "and no report can write; fix the exporter's decoding (bytes decoded with errors='replace' are fine)",
        )


def json_lines(path: Path, text: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line; invalid JSON (or a lone surrogate in it) names the
    file and line."""
    content = read_trace_text(path) if text is None else text
    for number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise TraceFormatError(path, number, f"invalid JSON ({error.msg} at column {error.colno})") from None
        if ESCAPE in line:
            refuse_lone_surrogates(path, number, value)
        yield number, value


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
