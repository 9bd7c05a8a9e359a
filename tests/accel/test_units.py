"""Readable numbers: money in $, m$ and µ$; durations and energy with SI prefixes; no exponents anywhere."""

from __future__ import annotations

import pytest

from agentcore.accel.units import joules, number, seconds, usd, usd_scale


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0, "$0"), (1234.5, "$1,234.50"), (0.042, "$0.042"), (0.0046, "m$4.6"), (4.6e-06, "µ$4.6"),
     (1e-07, "µ$0.1"), (-0.25, "-$0.25"), (0.664, "$0.664")],
)  # fmt: skip
def test_usd(value: float, text: str) -> None:
    assert usd(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.000788, "0.000788"), (2.8e-16, "0"), (12_345.0, "12,345"), (0.25, "0.25"), (3.0, "3"), (-1.5, "-1.5")],
)
def test_number(value: float, text: str) -> None:
    assert number(value) == text


def test_seconds_and_joules_pick_a_prefix() -> None:
    assert [seconds(v) for v in (2.5, 0.0123, 0.00042, 4e-9)] == ["2.5 s", "12.3 ms", "420 µs", "4 ns"]
    assert [joules(v) for v in (2850.0, 2.85, 0.004)] == ["2.85 kJ", "2.85 J", "4 mJ"]


def test_usd_scale_writes_a_whole_column_in_one_unit() -> None:
    column = usd_scale(0.0148)
    assert [column(v) for v in (0.00336, 0.0148, 0.0)] == ["m$3.36", "m$14.8", "m$0"]
    assert usd_scale(4.52)(1.34) == "$1.34" and usd_scale(5.4e-06)(5.06e-06) == "µ$5.06"
