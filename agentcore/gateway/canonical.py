"""Canonical JSON for tool arguments: the one form that policies see, the audit hashes and tools receive.

Limits live here because hostile input (NUL bytes, megabyte strings, deep nesting, NaN) must be rejected
before validation, policy or execution ever look at it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

JSONValue = Any  # a JSON value: None, bool, int, float, str, list, dict with str keys


class ArgumentLimits(BaseModel):
    """Bounds on one call's arguments; exceeding any is a ToolArgumentError and a DENY audit record."""

    model_config = ConfigDict(frozen=True)

    max_bytes: int = Field(default=256 * 1024, gt=0, description="size of the arguments as compact JSON")
    max_depth: int = Field(default=32, gt=0, description="nesting of objects and arrays")
    max_string: int = Field(default=64 * 1024, gt=0, description="characters in any one string")


def dumps(value: JSONValue) -> str:
    """Deterministic compact JSON (sorted keys, no NaN) used for hashing and storage."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def check(value: JSONValue, limits: ArgumentLimits) -> list[str]:
    """Return the problems of ``value`` against ``limits`` and JSON's rules (empty list when acceptable)."""
    problems: list[str] = []
    chars = _walk(value, "$", 0, limits, problems)
    if problems or chars * 4 + 1024 <= limits.max_bytes:  # JSON of this value cannot exceed the limit
        return problems
    size = len(dumps(value).encode("utf-8"))
    if size > limits.max_bytes:
        problems.append(f"arguments are {size} bytes of JSON, more than the limit of {limits.max_bytes}")
    return problems


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
