"""Checks on caller input, applied before any SQL runs.

Values that are merely odd (``../x``, ``%``, ``' OR 1=1 --``) are stored as data: every query binds
parameters, so they cannot change a statement. What is rejected is what cannot round-trip on every
backend (NUL bytes: PostgreSQL text cannot hold them) or would make the store unusable (empty ids,
unbounded texts).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from agentcore.memory.errors import InvalidMemoryInputError
from agentcore.text import LONE_SURROGATE, canonical_text

MAX_ID_CHARS = 255
MAX_METADATA_ENTRIES = 32
DEFAULT_MAX_TEXT_CHARS = 100_000
MAX_TOP_K = 100
DEFAULT_DIMENSION = 384  # all-MiniLM-L6-v2, the default encoder (DESIGN.md section 4)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NAMESPACE_SEGMENT = re.compile(r"^[^\x00-\x1f\x7f/]+$")
_PLACEHOLDER = re.compile(r"\{[^{}/]*\}")


def check_id(kind: str, value: object) -> str:
    """An actor/session id or branch name: 1-255 printable characters."""
    if not isinstance(value, str):
        raise InvalidMemoryInputError(f"{kind} must be a str, got {type(value).__name__}")
    if not value or len(value) > MAX_ID_CHARS:
        raise InvalidMemoryInputError(f"{kind} must have 1 to {MAX_ID_CHARS} characters, got {len(value)}")
    if _CONTROL.search(value):
        raise InvalidMemoryInputError(f"{kind} {value!r} contains a control character (NUL, newline, ...); remove it")
    return _encodable(kind, value)


def check_tenant(value: object) -> str:
    """A tenant id, canonical (:func:`agentcore.text.canonical_text`) as the gateway keeps it: ``ａｃｍｅ`` and
    ``ac\u200bme`` are tenant ``acme``, so one tenant cannot be spelt into two stores (or two into one)."""
    return check_id("tenant", canonical_text(check_id("tenant", value)))


def _encodable(kind: str, value: str) -> str:
    """``value`` if it is valid Unicode: a lone surrogate (``'\\ud800'``, from a bad decode) has no UTF-8 form."""
    found = LONE_SURROGATE.search(value)
    if found is not None:
        raise InvalidMemoryInputError(
            f"{kind} contains the lone surrogate {found.group()!r} at position {found.start()}, which no database "
            "can store; decode its bytes with errors='replace' first"
        )
    return value


def check_text(kind: str, value: object, max_chars: int) -> str:
    """A stored text: non-empty, no NUL byte, at most ``max_chars`` characters."""
    if not isinstance(value, str):
        raise InvalidMemoryInputError(f"{kind} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise InvalidMemoryInputError(f"{kind} is empty; there is nothing to remember")
    if "\x00" in value:
        raise InvalidMemoryInputError(f"{kind} contains a NUL byte, which PostgreSQL cannot store; strip it first")
    if len(value) > max_chars:
        raise InvalidMemoryInputError(
            f"{kind} has {len(value):,} characters, more than the store's limit of {max_chars:,}; "
            "split it, or raise max_text_chars when creating the MemoryStore"
        )
    return _encodable(kind, value)


def check_namespace(value: object) -> str:
    """An absolute ``/``-separated path: ``/users/alice/preferences``; no ``.``/``..`` segments."""
    if not isinstance(value, str):
        raise InvalidMemoryInputError(f"namespace must be a str, got {type(value).__name__}")
    if not value.startswith("/") or len(value) > 1024:
        raise InvalidMemoryInputError(f"namespace {value!r} must start with '/' and have at most 1024 characters")
    placeholder = _PLACEHOLDER.search(value)
    if placeholder:  # an unresolved template would silently match nothing (see namespaces.resolve_namespace)
        raise InvalidMemoryInputError(
            f"namespace {value!r} has the unresolved template field {placeholder.group()}; pass the concrete "
            "namespace, e.g. resolve_namespace(template, actor_id=..., session_id=...)"
        )
    segments = value.strip("/").split("/") if value != "/" else []
    for segment in segments:
        if segment in ("", ".", "..") or not _NAMESPACE_SEGMENT.match(segment):
            raise InvalidMemoryInputError(
                f"namespace {value!r} has an invalid segment {segment!r}: segments are non-empty, "
                "not '.' or '..', and contain no control characters"
            )
    return _encodable("namespace", value)


def check_metadata(value: Mapping[str, Any] | None) -> dict[str, Any]:
    """Metadata: at most 32 string keys with JSON values (finite numbers, no NUL in strings)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidMemoryInputError(f"metadata must be a dict, got {type(value).__name__}")
    if len(value) > MAX_METADATA_ENTRIES:
        raise InvalidMemoryInputError(f"metadata has {len(value)} entries; at most {MAX_METADATA_ENTRIES} allowed")
    for key in value:
        if not isinstance(key, str) or not key:
            raise InvalidMemoryInputError(f"metadata keys must be non-empty strings, got {key!r}")
    return check_json("metadata", value)


def check_json(kind: str, value: Any) -> Any:
    """A JSON-serialisable value without NaN/inf or NUL characters (both break PostgreSQL JSON)."""
    try:
        encoded = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidMemoryInputError(f"{kind} must be JSON-serialisable with finite numbers: {error}") from error
    if "\\u0000" in encoded:
        raise InvalidMemoryInputError(f"{kind} contains a NUL character, which PostgreSQL cannot store")
    return json.loads(encoded)


def check_positive(kind: str, value: object) -> int:
    """A count or size setting: a positive integer (not a bool, whose type is a subclass of int)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidMemoryInputError(f"{kind} must be a positive integer, got {value!r}")
    return value


def check_top_k(value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_TOP_K:
        raise InvalidMemoryInputError(f"top_k must be an integer from 1 to {MAX_TOP_K}, got {value!r}")
    return value


def check_score(value: float | None) -> float | None:
    if value is not None and (not isinstance(value, int | float) or not math.isfinite(value)):
        raise InvalidMemoryInputError(f"min_score must be a finite number, got {value!r}")
    return value
