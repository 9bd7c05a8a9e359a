"""Canonical JSON for tool arguments: the one form that policies see, the audit hashes and tools receive.

Limits live here because hostile input (NUL bytes, megabyte strings, deep nesting, NaN) must be rejected
before validation, policy or execution ever look at it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

JSONValue = Any  # a JSON value: None, bool, int, float, str, list, dict with str keys


class ArgumentLimits(BaseModel):
    """Bounds on one call's arguments; exceeding any is a ToolArgumentError and a DENY audit record."""

    model_config = ConfigDict(frozen=True)

    max_bytes: int = Field(default=256 * 1024, gt=0, description="size of the arguments as compact JSON")
    max_depth: int = Field(default=32, gt=0, description="nesting of objects and arrays")
    max_string: int = Field(default=64 * 1024, gt=0, description="characters in any one string")


def compact_encoder(*, sort_keys: bool, default: Callable[[Any], Any] | None = None) -> Callable[[Any], str]:
    """``JSONEncoder(...).encode`` (compact, non-ASCII kept, NaN refused) without its per-call setup.

    ``encode`` builds a new C encoder on every call, and the gateway encodes twice per tool call: that setup was a
    measurable part of its overhead. This builds CPython's C encoder once (same output) and skips the circular
    reference check, so callers pass acyclic JSON data. Falls back to ``encode`` without the C encoder.
    """
    encoder = json.JSONEncoder(
        sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=default
    )
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return encoder.encode
    encode_chunks = make(None, encoder.default, json.encoder.encode_basestring, None, ":", ",", sort_keys, False, False)
    return lambda value: "".join(encode_chunks(value, 0))


# Deterministic compact JSON (sorted keys, no NaN) used for hashing and storage.
dumps: Callable[[JSONValue], str] = compact_encoder(sort_keys=True)


def check(value: JSONValue, limits: ArgumentLimits) -> list[str]:
    """Return the problems of ``value`` against ``limits`` and JSON's rules (empty list when acceptable)."""
    chars = _scan(value, 0, limits)
    if chars < 0:  # something may be wrong: walk again, this time building the paths for the messages
        problems: list[str] = []
        chars = _walk(value, "$", 0, limits, problems)
        if problems:
            return problems
    if chars * 4 + 1024 <= limits.max_bytes:  # JSON of this value cannot exceed the limit
        return []
    size = len(dumps(value).encode("utf-8"))
    if size > limits.max_bytes:
        return [f"arguments are {size} bytes of JSON, more than the limit of {limits.max_bytes}"]
    return []


def _scan(value: JSONValue, depth: int, limits: ArgumentLimits) -> int:
    """``_walk`` without the paths (every call pays for this one): the same bound, or -1 at the first problem."""
    kind = type(value)
    if kind is str:
        return len(value) + 8 if len(value) <= limits.max_string and "\x00" not in value else -1
    if value is None or kind is bool or kind is int:
        return len(str(value)) + 8
    if kind is float:
        return 32 if math.isfinite(value) else -1
    if depth >= limits.max_depth:
        return -1
    total = 8
    if kind is dict:
        for key, item in value.items():
            size = _scan(item, depth + 1, limits)
            if type(key) is not str or size < 0 or len(key) > limits.max_string or "\x00" in key:
                return -1
            total += len(key) + 8 + size
        return total
    if kind is list or kind is tuple:
        for item in value:
            size = _scan(item, depth + 1, limits)
            if size < 0:
                return -1
            total += size
        return total
    return -1  # a subclass or a foreign type: let _walk judge it


def _walk(value: JSONValue, path: str, depth: int, limits: ArgumentLimits, problems: list[str]) -> int:
    """Append problems; return a bound on the characters of string content plus a small cost per node."""
    if len(problems) >= 5:
        return 0
    if depth > limits.max_depth:
        problems.append(f"{path}: nested deeper than {limits.max_depth} levels")
    elif isinstance(value, str):
        if len(value) > limits.max_string:
            problems.append(f"{path}: string of {len(value)} characters exceeds the limit of {limits.max_string}")
        elif "\x00" in value:
            problems.append(f"{path}: contains a NUL byte")
        return len(value) + 8
    elif isinstance(value, bool) or value is None or isinstance(value, int):
        return len(str(value)) + 8
    elif isinstance(value, float):
        if not math.isfinite(value):
            problems.append(f"{path}: {value} is not a finite number")
        return 32
    elif isinstance(value, dict):
        total = 8
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append(f"{path}: object key {key!r} is not a string")
                continue
            total += _walk(key, f"{path}.<key>", depth + 1, limits, problems)
            total += _walk(item, f"{path}.{key}", depth + 1, limits, problems)
        return total
    elif isinstance(value, list | tuple):
        return 8 + sum(_walk(item, f"{path}[{i}]", depth + 1, limits, problems) for i, item in enumerate(value))
    else:
        problems.append(f"{path}: {type(value).__name__} is not a JSON value")
    return 0
