"""Canonical JSON and argument limits: the fast paths give exactly the answers of the plain ones."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentcore.gateway import canonical
from agentcore.gateway.canonical import ArgumentLimits

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
KEYS = st.text(max_size=4) | st.integers(0, 3)  # non-string keys must be refused
VALUES = st.recursive(
    SCALARS | st.sampled_from(["a\x00b", "x" * 40, {1, 2}]),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=25,
)
TIGHT = ArgumentLimits(max_bytes=300, max_depth=3, max_string=30)


def _walk_only(value: Any, limits: ArgumentLimits) -> list[str]:
    """check() as it was before the path-free scan: the path-building walk decides alone."""
    problems: list[str] = []
    chars = canonical._walk(value, "$", 0, limits, problems)
    if problems or chars * 4 + 1024 <= limits.max_bytes:
        return problems
    size = len(canonical.dumps(value).encode("utf-8"))
    if size > limits.max_bytes:
        return [f"arguments are {size} bytes of JSON, more than the limit of {limits.max_bytes}"]
    return []


@given(VALUES)
def test_check_agrees_with_the_full_walk(value: Any) -> None:
    for limits in (TIGHT, ArgumentLimits()):
        assert canonical.check(value, limits) == _walk_only(value, limits)


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
