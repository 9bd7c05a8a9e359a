"""Canonical JSON for tool arguments: the one form that policies see, the audit hashes and tools receive.

Strings are in :func:`~agentcore.text.canonical_text` form (NFKC, no invisible characters); the gateway's
``unicode`` setting says whether other strings are rewritten into it or refused.

Limits live here because hostile input (NUL bytes, megabyte strings, deep nesting, NaN) must be rejected
before validation, policy or execution ever look at it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentcore.text import LONE_SURROGATE, canonical_problem, canonical_text, is_canonical_text

JSONValue = Any  # a JSON value: None, bool, int, float, str, list, dict with str keys
UnicodeMode = Literal["canonicalize", "reject"]  # deliver non-canonical text rewritten, or refuse the call
MAX_JSON_BYTES_PER_CHAR = 6  # a control character is written \u0001: six bytes for one character
MAX_INT_DIGITS = 4000  # below Python's 4,300-digit limit on int <-> str, which JSON encoding (the audit) needs
MAX_INT_BITS = 13_287  # every integer of at most this many bits has at most MAX_INT_DIGITS digits


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


def encodable(text: str) -> str:
    """``text`` with lone surrogates escaped (``\\udc80``): what may go into an audit record or an error message."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def canonicalize(value: JSONValue, limits: ArgumentLimits, unicode: UnicodeMode) -> tuple[JSONValue, list[str]]:
    """``value`` in canonical form (the one the policy decides on, the audit hashes and the tool receives) and the
    problems of it against ``limits`` and JSON's rules (empty list when acceptable).

    A string that canonicalisation would change is rewritten, or under ``unicode="reject"`` is a problem.
    """
    chars = _scan(value, 0, limits)
    if chars < 0:  # something may be wrong or need rewriting: walk again, building the paths and the new value
        problems: list[str] = []
        value, chars = _walk(value, "$", 0, limits, unicode, problems)
        if problems:
            return value, problems
    if chars * MAX_JSON_BYTES_PER_CHAR + 1024 <= limits.max_bytes:  # JSON of this value cannot exceed the limit
        return value, []
    size = len(dumps(value).encode("utf-8"))
    if size > limits.max_bytes:
        return value, [f"arguments are {size} bytes of JSON, more than the limit of {limits.max_bytes}"]
    return value, []


def _scan(value: JSONValue, depth: int, limits: ArgumentLimits) -> int:
    """``_walk`` without the paths (every call pays for this one): the same bound, or -1 at the first string to
    rewrite or problem."""
    kind = type(value)
    if kind is str:
        fine = len(value) <= limits.max_string and "\x00" not in value and (value.isascii() or _is_canonical(value))
        return len(value) + 8 if fine else -1
    if kind is int:
        return len(str(value)) + 8 if value.bit_length() <= MAX_INT_BITS else -1
    if value is None or kind is bool:
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
            if not (key.isascii() or _is_canonical(key)):
                return -1
            total += len(key) + 8 + size
        return total
    if kind is list:
        for item in value:
            size = _scan(item, depth + 1, limits)
            if size < 0:
                return -1
            total += size
        return total
    return -1  # a tuple, a subclass or a foreign type: let _walk judge (and rewrite) it


def _is_canonical(text: str) -> bool:
    return is_canonical_text(text) and LONE_SURROGATE.search(text) is None


def _walk(
    value: JSONValue, path: str, depth: int, limits: ArgumentLimits, unicode: UnicodeMode, problems: list[str]
) -> tuple[JSONValue, int]:
    """Append problems; return the canonical value and a bound on its characters of string content plus a small
    cost per node. Never recurses past ``limits.max_depth``."""
    if len(problems) >= 5:
        return value, 0
    if depth > limits.max_depth:
        problems.append(f"{path}: nested deeper than {limits.max_depth} levels")
    elif isinstance(value, str):
        text = str.__str__(value)  # a str subclass (a StrEnum member) is delivered as the plain string
        if len(text) > limits.max_string:
            problems.append(f"{path}: string of {len(text)} characters exceeds the limit of {limits.max_string}")
        elif "\x00" in text:
            problems.append(f"{path}: contains a NUL byte")
        elif LONE_SURROGATE.search(text):
            problems.append(f"{path}: contains a lone surrogate, which is not text")
        elif not is_canonical_text(text):
            if unicode == "reject":
                problems.append(f"{path}: {canonical_problem(text)} (send it in canonical form)")
            text = canonical_text(text)
        return text, len(text) + 8
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        problems.append(f"{path}: an integer of more than {MAX_INT_DIGITS} digits")
    elif isinstance(value, bool) or value is None or isinstance(value, int):
        return value, len(str(value)) + 8
    elif isinstance(value, float):
        if not math.isfinite(value):
            problems.append(f"{path}: {value} is not a finite number")
        return value, 32
    elif isinstance(value, dict):
        total, result = 8, {}
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append(f"{path}: object key {key!r} is not a string")
                continue
            name, size = _walk(key, f"{path}.<key>", depth + 1, limits, unicode, problems)
            if name in result:
                problems.append(f"{path}: keys {key!r} and {name!r} are the same key in canonical form")
            result[name], item_size = _walk(item, f"{path}.{key}", depth + 1, limits, unicode, problems)
            total += size + item_size
        return result, total
    elif isinstance(value, list | tuple):
        items = [_walk(item, f"{path}[{i}]", depth + 1, limits, unicode, problems) for i, item in enumerate(value)]
        return [item for item, _ in items], 8 + sum(size for _, size in items)
    else:
        problems.append(f"{path}: {type(value).__name__} is not a JSON value")
    return value, 0
