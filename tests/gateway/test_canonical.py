"""Canonical JSON and argument limits: the fast paths give exactly the answers of the plain ones."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore.gateway import canonical
from agentcore.gateway.canonical import ArgumentLimits

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["ｍａｌｌｏｒｙ", "a\u200bb", "\ud800", "café", "e\u0301", "\x01" * 20])
)
KEYS = st.text(max_size=4) | st.integers(0, 3)  # non-string keys must be refused
VALUES = st.recursive(
    SCALARS | st.sampled_from(["a\x00b", "x" * 40, {1, 2}]),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=25,
)
TIGHT = ArgumentLimits(max_bytes=300, max_depth=3, max_string=30)


def _walk_only(value: Any, limits: ArgumentLimits, unicode: canonical.UnicodeMode) -> tuple[Any, list[str]]:
    """canonicalize() without the path-free scan: the path-building walk decides alone, the size is measured."""
    problems: list[str] = []
    value, _ = canonical._walk(value, "$", 0, limits, unicode, problems)
    if problems:
        return value, problems
    size = len(canonical.dumps(value).encode("utf-8"))
    if size > limits.max_bytes:
        return value, [f"arguments are {size} bytes of JSON, more than the limit of {limits.max_bytes}"]
    return value, []


@settings(max_examples=200, deadline=None)
@given(VALUES)
def test_canonicalize_agrees_with_the_full_walk(value: Any) -> None:
    for limits in (TIGHT, ArgumentLimits()):
        for unicode in ("canonicalize", "reject"):
            got, problems = canonical.canonicalize(value, limits, unicode)
            want, want_problems = _walk_only(value, limits, unicode)
            assert problems == want_problems
            if not problems:
                assert got == want


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
        max_leaves=20,
    )
)
def test_dumps_writes_what_json_dumps_writes(value: Any) -> None:
    """The prebuilt C encoder must write exactly what the documented json.dumps settings write."""
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert canonical.dumps(value) == expected
