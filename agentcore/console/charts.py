"""Server-rendered SVG charts for the console: axes with "nice" ticks, labels, a legend, values on bars.

Inline SVG (no script, no external assets) so the pages render the same with JavaScript off. The simulator's
:func:`agentcore.accel.sim.charts.line_chart` draws one series with end ticks only; trends and comparisons here
need several series, readable ticks and bars.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape

_W, _H = 640, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 150, 36, 48
_COLOURS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7ea4", "#57606a")
Format = Callable[[float], str]


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5, 5 x 10^n steps) from at or below ``low`` to at or above ``high``."""
    if not math.isfinite(low) or not math.isfinite(high):
        return [0.0, 1.0]
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


_TIME_STEPS = (3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400, 30 * 86400, 91 * 86400, 365 * 86400)


def time_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Epoch-second ticks on whole UTC hours or days (whichever step gives at most ``count``), around [low, high];
    a single moment gets the day before and after."""
    span = high - low
    step = 86400 if span <= 0 else next((s for s in _TIME_STEPS if span / s <= count - 1), _TIME_STEPS[-1])
    first, last = math.floor(low / step), math.ceil(high / step)
    if first == last:
        first, last = first - 1, last + 1
    return [float(i * step) for i in range(first, last + 1)]


def _number(value: float) -> str:
    return f"{value:.3g}"


def _frame(title: str, x_label: str, y_label: str, body: list[str]) -> str:
    mid_x, mid_y = _LEFT + (_W - _LEFT - _RIGHT) / 2, _TOP + (_H - _TOP - _BOTTOM) / 2
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" '
            f'role="img" aria-label="{escape(title)}" class="chart" font-family="sans-serif" font-size="11">',
            f'<text x="{_LEFT}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>',
            f'<text x="{mid_x}" y="{_H - 8}" text-anchor="middle">{escape(x_label)}</text>',
            f'<text x="14" y="{mid_y}" text-anchor="middle" transform="rotate(-90 14 {mid_y})">'
            f"{escape(y_label)}</text>",
            *body,
            "</svg>",
        ]
    )


def _y_axis(ticks: list[float], sy: Callable[[float], float], fmt: Format) -> list[str]:
    right = _W - _RIGHT
    parts = [f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_H - _BOTTOM}" stroke="#24292f"/>']
    for tick in ticks:
        y = sy(tick)
        parts.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#d0d7de" class="grid"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{escape(fmt(tick))}</text>')
    return parts


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_format: Format = _number,
    y_format: Format = _number,
    y_range: tuple[float, float] | None = None,
    time_axis: bool = False,
) -> str:
    """Lines with a dot per point, one colour per series (legend on the right); points are (x, y).

    ``time_axis``: x values are epoch seconds, ticked on whole hours or days (see :func:`time_ticks`)."""
    points = [p for values in series.values() for p in values]
    xs, ys = [x for x, _ in points] or [0.0, 1.0], [y for _, y in points] or [0.0, 1.0]
    if time_axis:
        x_ticks = time_ticks(min(xs), max(xs))
    else:
        x_ticks = nice_ticks(min(xs), max(xs)) if len(set(xs)) > 1 else [xs[0] - 1, xs[0], xs[0] + 1]
    y_low, y_high = y_range if y_range is not None else (min(0.0, min(ys)), max(ys))
    y_ticks = nice_ticks(y_low, y_high)
    x0, x1, y0, y1 = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]
    width, height = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def sx(x: float) -> float:
        return _LEFT + (x - x0) / ((x1 - x0) or 1) * width

    def sy(y: float) -> float:
        return _H - _BOTTOM - (y - y0) / ((y1 - y0) or 1) * height

    body = _y_axis(y_ticks, sy, y_format)
    body.append(f'<line x1="{_LEFT}" y1="{_H - _BOTTOM}" x2="{_W - _RIGHT}" y2="{_H - _BOTTOM}" stroke="#24292f"/>')
    for tick in x_ticks:
        x = sx(tick)
        body.append(f'<line x1="{x:.1f}" y1="{_H - _BOTTOM}" x2="{x:.1f}" y2="{_H - _BOTTOM + 4}" stroke="#24292f"/>')
        body.append(f'<text x="{x:.1f}" y="{_H - _BOTTOM + 16}" text-anchor="middle" class="tick">'
                    f"{escape(x_format(tick))}</text>")  # fmt: skip
    for index, (name, values) in enumerate(series.items()):
        colour = _COLOURS[index % len(_COLOURS)]
        ordered = sorted(values)
        path = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(ordered))
        body.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2" class="series"/>')
        for x, y in ordered:
            body.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}">'
                        f"<title>{escape(name)}: {escape(y_format(y))}</title></circle>")  # fmt: skip
        legend_y = _TOP + 14 * index
        body.append(f'<rect x="{_W - _RIGHT + 12}" y="{legend_y}" width="10" height="10" fill="{colour}"/>')
        body.append(f'<text x="{_W - _RIGHT + 26}" y="{legend_y + 9}" class="legend">{escape(name[:22])}</text>')
    return _frame(title, x_label, y_label, body)


def bar_chart(
    bars: Sequence[tuple[str, float]], *, title: str, x_label: str, y_label: str, y_format: Format = _number
) -> str:
    """Vertical bars with their value printed above each; labels under the x axis."""
    values = [value for _, value in bars] or [0.0]
    y_ticks = nice_ticks(min(0.0, min(values)), max(values) or 1.0)
    y0, y1 = y_ticks[0], y_ticks[-1]
    width, height = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def sy(y: float) -> float:
        return _H - _BOTTOM - (y - y0) / ((y1 - y0) or 1) * height

    body = _y_axis(y_ticks, sy, y_format)
    body.append(f'<line x1="{_LEFT}" y1="{sy(0):.1f}" x2="{_W - _RIGHT}" y2="{sy(0):.1f}" stroke="#24292f"/>')
    slot = width / max(len(bars), 1)
    for index, (label, value) in enumerate(bars):
        x, top = _LEFT + slot * index + slot * 0.15, min(sy(value), sy(0))
        colour = _COLOURS[index % len(_COLOURS)]
        size = f'width="{slot * 0.7:.1f}" height="{abs(sy(0) - sy(value)):.1f}"'
        tip = f"<title>{escape(label)}: {escape(y_format(value))}</title>"
        body.append(f'<rect x="{x:.1f}" y="{top:.1f}" {size} fill="{colour}" class="bar">{tip}</rect>')
        centre = x + slot * 0.35
        body.append(f'<text x="{centre:.1f}" y="{top - 4:.1f}" text-anchor="middle" class="value">'
                    f"{escape(y_format(value))}</text>")  # fmt: skip
        body.append(f'<text x="{centre:.1f}" y="{_H - _BOTTOM + 16}" text-anchor="middle" class="tick">'
                    f"{escape(label[:18])}</text>")  # fmt: skip
    return _frame(title, x_label, y_label, body)
