"""The one SVG chart module: round ticks (at least three per axis), axes with units, whole labels, escaping."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from agentcore.accel.charts import bar_chart, grouped_bar_chart, line_chart, nice_ticks, text_width, time_ticks, wrap

SVG = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0, 1, [0, 0.25, 0.5, 0.75, 1]),
        (0, 7, [0, 2, 4, 6, 8]),
        (13, 87, [0, 20, 40, 60, 80, 100]),
        (5, 5, [4, 6, 8, 10]),
        (0, 0.000788, [0, 0.0002, 0.0004, 0.0006, 0.0008]),
    ],
)
def test_nice_ticks_cover_the_range_in_round_steps(low: float, high: float, expected: list[float]) -> None:
    assert nice_ticks(low, high) == pytest.approx(expected)


def test_nice_ticks_give_at_least_three_and_whole_steps_for_counts() -> None:
    assert nice_ticks(0, 1, whole=True) == [0, 1, 2]
    assert nice_ticks(0, 3, whole=True) == [0, 1, 2, 3]


def _texts(svg: str, css: str) -> list[str]:
    return [str(t.text) for t in ET.fromstring(svg).iter(f"{SVG}text") if css in (t.get("class") or "").split()]


def test_line_chart_has_axes_ticks_labels_and_a_series_each() -> None:
    svg = line_chart(
        {"Builtin.A": [(1.0, 0.5), (2.0, 0.75)], "<b>": [(1.0, 0.25)]},
        title="trend", x_label="run", y_label="mean", y_range=(0.0, 1.0),
    )  # fmt: skip
    root = ET.fromstring(svg)  # well-formed XML: the label "<b>" is escaped
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"trend", "run", "mean", "Builtin.A", "<b>"} <= set(texts)
    assert {"0", "0.25", "1"} <= set(_texts(svg, "y-tick")) and len(_texts(svg, "x-tick")) >= 3
    assert len([p for p in root.iter(f"{SVG}path") if p.get("class") == "series"]) == 2
    assert len(list(root.iter(f"{SVG}circle"))) == 3


def test_tiny_values_are_written_positionally_and_noise_is_zero() -> None:
    svg = line_chart({"busy": [(0.0, 2.8e-16), (1.0, 0.000788)]}, title="t", x_label="s", y_label="fraction")
    ticks = _texts(svg, "y-tick")
    assert ticks[:2] == ["0", "0.0002"] and not [t for t in ticks if "e" in t]


def test_bar_labels_are_never_cut_and_the_chart_widens_to_fit_them() -> None:
    names = ["trn3-ultraserver-gen2", "trn3-ultraserver-gen2-preview", "a label long enough to need a second line"]
    svg = bar_chart([(name, 0.02 * (i + 1)) for i, name in enumerate(names)], title="t", value_label="$")
    root = ET.fromstring(svg)
    lines = ["".join(span.text or "" for span in t) for t in root.iter(f"{SVG}text") if t.get("class") == "category"]
    spaceless = [name.replace(" ", "") for name in names]
    assert [line.replace(" ", "") for line in lines] == spaceless  # each label whole (a long one over tspans)
    assert len(list(next(t for t in root.iter(f"{SVG}text") if t.get("class") == "category" and len(t) > 1))) == 2
    width = float(root.get("viewBox", "").split()[2])
    first_bar = min(float(r.get("x", 0)) for r in root.iter(f"{SVG}rect") if r.get("class") == "bar")
    assert first_bar > max(text_width(line) for name in names for line in wrap(name)) and width > first_bar
    assert _texts(svg, "value") == ["0.02", "0.04", "0.06"]


def test_grouped_and_stacked_bars_with_a_legend_and_negative_values() -> None:
    svg = grouped_bar_chart(
        ["refund", "cancel"], {"allowed": [3, 1], "denied": [1, 2]}, title="d", value_label="calls", stacked=True,
        whole=True,
    )  # fmt: skip
    assert _texts(svg, "value") == ["3 allowed / 1 denied", "1 allowed / 2 denied"]
    assert set(_texts(svg, "legend")) == {"allowed", "denied"}
    changes = bar_chart(
        [("up", 0.1), ("down", -0.25)], title="c", value_label="change", value_format=lambda v: f"{v:+.3f}"
    )
    assert "-0.250" in _texts(changes, "value") and float(_texts(changes, "x-tick")[0]) < -0.25


def test_wrap_breaks_after_separators_and_keeps_every_character() -> None:
    assert wrap("short") == ["short"]
    lines = wrap("Builtin.ToolParameterAccuracy-with-a-long-suffix", 20)
    assert "".join(lines) == "Builtin.ToolParameterAccuracy-with-a-long-suffix" and all(len(x) <= 20 for x in lines)


def test_time_ticks_fall_on_whole_hours_or_days() -> None:
    day = 86400.0
    assert time_ticks(20_000 * day + 3000, 20_000 * day + 7000) == [20_000 * day + h * 3600 for h in (0, 1, 2)]
    ticks = time_ticks(20_000 * day + 5, 20_003 * day - 5)
    assert ticks == [20_000 * day, 20_001 * day, 20_002 * day, 20_003 * day]
    assert time_ticks(20_000 * day, 20_000 * day) == [19_999 * day, 20_000 * day, 20_001 * day], (
        "one point: a day each side"
    )
