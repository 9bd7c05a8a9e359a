"""Metadata filters for :meth:`MemoryStore.retrieve`, checked up front and applied to the actor's rows.

``{"topic": "food"}`` is equality; ``{"year": {"$gte": 2023}}`` uses an operator. Operators:
``$eq $ne $gt $gte $lt $lte $in $exists $contains``. They run on rows already restricted to one actor
and namespace by SQL, so a filter can narrow results but never widen them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from agentcore.memory.errors import InvalidMemoryInputError

Predicate = Callable[[Mapping[str, Any]], bool]
_MISSING = object()
_ORDER = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}
OPERATORS = frozenset({"$eq", "$ne", "$in", "$exists", "$contains", *_ORDER})


def _compare(op: str, expected: Any) -> Callable[[Any], bool]:
    if op == "$eq":
        return lambda value: value is not _MISSING and value == expected
    if op == "$ne":
        return lambda value: value is _MISSING or value != expected
    if op == "$exists":
        if not isinstance(expected, bool):
            raise InvalidMemoryInputError(f"$exists takes true or false, got {expected!r}")
        return lambda value: (value is not _MISSING) is expected
    if op == "$in":
        if not isinstance(expected, list | tuple):
            raise InvalidMemoryInputError(f"$in takes a list, got {type(expected).__name__}")
        options = list(expected)
        return lambda value: value is not _MISSING and value in options
    if op == "$contains":
        return lambda value: isinstance(value, str | list) and expected in value
    compare = _ORDER[op]
    if not isinstance(expected, int | float | str) or isinstance(expected, bool):
        raise InvalidMemoryInputError(f"{op} takes a number or a string, got {expected!r}")

    def ordered(value: Any) -> bool:
        numbers = all(isinstance(item, int | float) and not isinstance(item, bool) for item in (value, expected))
        strings = isinstance(value, str) and isinstance(expected, str)
        return (numbers or strings) and bool(compare(value, expected))

    return ordered


def compile_filters(filters: Mapping[str, Any] | None) -> Predicate:
    """A predicate over a record's metadata; raises InvalidMemoryInputError on an unknown operator."""
    if not filters:
        return lambda _metadata: True
    if not isinstance(filters, Mapping):
        raise InvalidMemoryInputError(f"filters must be a dict, got {type(filters).__name__}")
    checks: list[tuple[str, Callable[[Any], bool]]] = []
    for key, condition in filters.items():
        if not isinstance(key, str):
            raise InvalidMemoryInputError(f"filter keys must be strings, got {key!r}")
        if isinstance(condition, Mapping):
            for op, expected in condition.items():
                if op not in OPERATORS:
                    raise InvalidMemoryInputError(
                        f"unknown filter operator {op!r} on {key!r}; use one of {', '.join(sorted(OPERATORS))}"
                    )
                checks.append((key, _compare(op, expected)))
        else:
            checks.append((key, _compare("$eq", condition)))
    return lambda metadata: all(check(metadata.get(key, _MISSING)) for key, check in checks)
