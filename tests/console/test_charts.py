"""The console's SVG charts: round ticks, axes with labels, one path per series, values on bars, escaping."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from agentcore.console.charts import bar_chart, line_chart, nice_ticks, time_ticks

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0, 1, [0, 0.25, 0.5, 0.75, 1]),
        (0, 7, [0, 2, 4, 6, 8]),
        (13, 87, [0, 20, 40, 60, 80, 100]),
        (5, 5, [4, 6, 8, 10]),
    ],
)
def test_nice_ticks_cover_the_range_in_round_steps(low: float, high: float, expected: list[float]) -> None:
    assert nice_ticks(low, high) == pytest.approx(expected)


def test_line_chart_has_axes_ticks_labels_and_a_series_each() -> None:
    svg = line_chart(
        {"Builtin.A": [(1.0, 0.5), (2.0, 0.75)], "<b>": [(1.0, 0.25)]},
        title="trend", x_label="run", y_label="mean", y_range=(0.0, 1.0),
    )  # fmt: skip
    root = ET.fromstring(svg)  # well-formed XML: the label "<b>" is escaped
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"trend", "run", "mean", "Builtin.A", "<b>"} <= set(texts)
    ticks = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "tick"]
    assert {"0", "0.25", "1"} <= set(ticks) and len(ticks) >= 8
    assert len([p for p in root.iter(f"{SVG}path") if p.get("class") == "series"]) == 2
    assert len(list(root.iter(f"{SVG}circle"))) == 3


def test_bar_chart_prints_each_value() -> None:
    root = ET.fromstring(bar_chart([("trn2", 0.02), ("trn3", 0.01)], title="t", x_label="x", y_label="y"))
    assert len([r for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]) == 2
    values = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "value"]
    assert values == ["0.02", "0.01"]


def test_time_ticks_fall_on_whole_hours_or_days() -> None:
    day = 86400.0
    assert time_ticks(20_000 * day + 3000, 20_000 * day + 7000) == [20_000 * day + h * 3600 for h in (0, 1, 2)]
    ticks = time_ticks(20_000 * day + 5, 20_003 * day - 5)
    assert ticks == [20_000 * day, 20_001 * day, 20_002 * day, 20_003 * day]
    assert time_ticks(20_000 * day, 20_000 * day) == [19_999 * day, 20_000 * day, 20_001 * day], (
        "one point: a day each side"
    )
