"""Inline SVG charts for every report: the simulator's, the demo's, the console's and the evaluation page.

One module (at the lowest layer, so all of them may import it) so a chart reads the same everywhere: axes with
round ("nice") ticks, units in the axis titles, numbers through :mod:`agentcore.accel.units`, and labels that
are never cut. Bars are horizontal so long names (``trn3-ultraserver-gen2``) stay whole; a label longer than
the label column wraps onto more lines. Sizes are computed from the text, so nothing overflows the viewBox.
No script and no external assets: the pages render the same with JavaScript off.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from html import escape

from agentcore.accel.units import number

Format = Callable[[float], str]
COLOURS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7ea4", "#57606a")
_FONT, _TITLE_FONT = 11, 14
_CHAR, _TITLE_CHAR = 7.0, 9.5  # generous average glyph widths (px) at those sizes, so estimates err wide
_PLOT_W, _PLOT_H = 420, 200
_WRAP = 32  # characters per line of a bar label before it wraps
_LINE = 13  # px per line of a wrapped label


def nice_ticks(low: float, high: float, count: int = 5, *, whole: bool = False) -> list[float]:
    """At least three round ticks (1, 2, 2.5, 5 x 10^n steps) from at or below ``low`` to at or above ``high``.

    ``whole``: counts, so the step is at least 1."""
    if not math.isfinite(low) or not math.isfinite(high):
        return [0.0, 0.5, 1.0]
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    step = max(step, 1.0) if whole else step
    first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    last = max(last, first + 2)
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


def text_width(text: str, *, title: bool = False) -> float:
    """Estimated rendered width in px (deliberately wide; the browser test measures the real thing)."""
    return len(text) * (_TITLE_CHAR if title else _CHAR)


def wrap(label: str, width: int = _WRAP) -> list[str]:
    """``label`` in lines of at most ``width`` characters, broken after spaces, dashes, dots, slashes or underscores."""
    lines: list[str] = []
    line = ""
    for piece in re.findall(r"[^\s\-./:_]*[\s\-./:_]?", label):
        if line and len(line) + len(piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        while len(piece) > width:  # one unbreakable run longer than a line: hard breaks
            lines.append(piece[:width])
            piece = piece[width:]
        line += piece
    return [*lines, line.rstrip()] if line.strip() else lines or [""]


def _text(x: float, y: float, text: str, *, anchor: str = "start", css: str = "", extra: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{klass}{extra}>{escape(text)}</text>'


def _svg(title: str, css: str, width: float, height: float, body: list[str]) -> str:
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
            f'height="{height:.0f}" role="img" aria-label="{escape(title)}" class="{f"chart {css}".strip()}" '
            f'font-family="sans-serif" font-size="{_FONT}">',
            f"<title>{escape(title)}</title>",
            f'<text x="8" y="20" font-size="{_TITLE_FONT}" font-weight="bold" class="title">{escape(title)}</text>',
            *body,
            "</svg>",
        ]
    )


def _legend(names: Sequence[str], colours: Sequence[str], y: float) -> tuple[list[str], float]:
    """Swatches and full names in one row from the left; returns the parts and the row's width."""
    parts, x = [], 8.0
    for name, colour in zip(names, colours, strict=True):
        parts.append(f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{colour}"/>')
        parts.append(_text(x + 14, y, name, css="legend"))
        x += 14 + text_width(name) + 16
    return parts, x


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_format: Format = number,
    y_format: Format = number,
    y_range: tuple[float, float] | None = None,
    time_axis: bool = False,
    css: str = "",
) -> str:
    """Lines with a dot per point (tooltip: series, x and y), one colour per series, legend above the plot.

    ``time_axis``: x values are epoch seconds, ticked on whole hours or days (see :func:`time_ticks`)."""
    points = [p for values in series.values() for p in values]
    xs, ys = [x for x, _ in points] or [0.0, 1.0], [y for _, y in points] or [0.0, 1.0]
    if time_axis:
        x_ticks = time_ticks(min(xs), max(xs))
    else:
        x_ticks = nice_ticks(min(xs), max(xs)) if len(set(xs)) > 1 else [xs[0] - 1, xs[0], xs[0] + 1]
    y_low, y_high = y_range if y_range is not None else (min(0.0, min(ys)), max(ys))
    y_ticks = nice_ticks(min(y_low, min(ys)), max(y_high, max(ys)))
    x_labels, y_labels = [x_format(t) for t in x_ticks], [y_format(t) for t in y_ticks]
    colours = [COLOURS[i % len(COLOURS)] for i in range(len(series))]
    legend, legend_w = _legend(list(series), colours, 40)
    left = 28 + max(max(text_width(label) for label in y_labels), text_width(x_labels[0]) / 2)
    top, right = 56, max(text_width(x_labels[-1]) / 2, 8) + 8
    width = max(left + _PLOT_W + right, legend_w, 16 + text_width(title, title=True))
    plot_w = width - left - right
    bottom = top + _PLOT_H
    height = bottom + 42
    x0, x1, y0, y1 = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]

    def sx(x: float) -> float:
        return left + (x - x0) / ((x1 - x0) or 1) * plot_w

    def sy(y: float) -> float:
        return bottom - (y - y0) / ((y1 - y0) or 1) * _PLOT_H

    body = [*legend, f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#24292f"/>']
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{left + plot_w:.1f}" y2="{bottom}" stroke="#24292f"/>')
    for tick, label in zip(y_ticks, y_labels, strict=True):
        y = sy(tick)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w:.1f}" y2="{y:.1f}" stroke="#d0d7de"/>')
        body.append(_text(left - 6, y + 4, label, anchor="end", css="tick y-tick"))
    for tick, label in zip(x_ticks, x_labels, strict=True):
        x = sx(tick)
        body.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="#24292f"/>')
        body.append(_text(x, bottom + 16, label, anchor="middle", css="tick x-tick"))
    body.append(_text(left + plot_w / 2, height - 8, x_label, anchor="middle", css="axis-title"))
    middle = top + _PLOT_H / 2
    body.append(
        _text(14, middle, y_label, anchor="middle", css="axis-title", extra=f' transform="rotate(-90 14 {middle})"')
    )
    for (name, values), colour in zip(series.items(), colours, strict=True):
        ordered = sorted(values)
        path = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(ordered))
        body.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2" class="series"/>')
        for x, y in ordered:
            tip = f"{name}: {x_format(x)}, {y_format(y)}"
            dot = f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{colour}">'
            body.append(f"{dot}<title>{escape(tip)}</title></circle>")
    return _svg(title, css, width, height, body)


def bar_chart(
    bars: Sequence[tuple[str, float]],
    *,
    title: str,
    value_label: str,
    category_label: str = "",
    value_format: Format = number,
    whole: bool = False,
    css: str = "",
) -> str:
    """One horizontal bar per label, its value written at the bar's end."""
    return grouped_bar_chart(
        [label for label, _ in bars], {"": [value for _, value in bars]}, title=title, value_label=value_label,
        category_label=category_label, value_format=value_format, whole=whole, css=css,
    )  # fmt: skip


def grouped_bar_chart(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    title: str,
    value_label: str,
    category_label: str = "",
    value_format: Format = number,
    stacked: bool = False,
    whole: bool = False,
    colours: Sequence[str] = COLOURS,
    css: str = "",
) -> str:
    """Horizontal bars: per category one bar per series (or one ``stacked`` bar), full labels on the left.

    Values may be negative (bars grow left of zero). A series named ``""`` gets no legend entry."""
    names = list(series)
    palette = [colours[i % len(colours)] for i in range(len(names))]
    rows = [[series[name][index] for name in names] for index in range(len(categories))]
    totals = [sum(row) if stacked else 0.0 for row in rows]
    values = [v for row in rows for v in row] + totals or [0.0]
    ticks = nice_ticks(min(0.0, min(values)), max(values) or 1.0, whole=whole)
    tick_labels = [value_format(t) for t in ticks]
    wrapped = [wrap(category) for category in categories]
    value_texts = [_value_text(row, names, value_format, stacked) for row in rows]
    label_w = max([text_width(line) for lines in wrapped for line in lines] + [text_width(category_label)])
    left = 16 + max(label_w, text_width(tick_labels[0]) / 2)
    right = 12 + max([text_width(t) for t in value_texts] + [text_width(tick_labels[-1]) / 2])
    legend, legend_w = _legend([n for n in names if n], [c for n, c in zip(names, palette, strict=True) if n], 40)
    top = 62 if legend else 46
    bar_h = 14.0
    per_row = 1 if stacked else len(names)
    heights = [max(len(lines) * _LINE, per_row * bar_h) + 10 for lines in wrapped]
    bottom = top + sum(heights)
    width = max(left + _PLOT_W + right, legend_w, 16 + text_width(title, title=True))
    plot_w = width - left - right
    height = bottom + 44
    v0, v1 = ticks[0], ticks[-1]

    def sx(value: float) -> float:
        return left + (value - v0) / ((v1 - v0) or 1) * plot_w

    zero = sx(0.0)
    body = list(legend)
    if category_label:
        body.append(_text(8, top - 8, category_label, css="axis-title"))
    for tick, label in zip(ticks, tick_labels, strict=True):
        x = sx(tick)
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#d0d7de"/>')
        body.append(_text(x, bottom + 16, label, anchor="middle", css="tick x-tick"))
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{left + plot_w:.1f}" y2="{bottom}" stroke="#24292f"/>')
    body.append(f'<line x1="{zero:.1f}" y1="{top}" x2="{zero:.1f}" y2="{bottom}" stroke="#24292f"/>')
    body.append(_text(left + plot_w / 2, height - 8, value_label, anchor="middle", css="axis-title"))
    y = float(top)
    for category, lines, row, text, band in zip(categories, wrapped, rows, value_texts, heights, strict=True):
        first = y + (band - len(lines) * _LINE) / 2 + _LINE - 3
        spans = "".join(
            f'<tspan x="{left - 8:.1f}" y="{first + i * _LINE:.1f}">{escape(line)}</tspan>'
            for i, line in enumerate(lines)
        )
        body.append(f'<text text-anchor="end" class="category">{spans}</text>')
        bar_y, start, end = y + (band - per_row * bar_h) / 2, 0.0, 0.0
        for name, value, colour in zip(names, row, palette, strict=True):
            low, high = sorted((sx(start), sx(start + value)))
            tip = f"{category}{' — ' + name if name else ''}: {value_format(value)}"
            body.append(
                f'<rect x="{low:.1f}" y="{bar_y:.1f}" width="{max(high - low, 0.5):.1f}" height="{bar_h - 2:.1f}" '
                f'fill="{colour}" class="bar"><title>{escape(tip)}</title></rect>'
            )
            end = max(end, high)
            if stacked:
                start += value
            else:
                body.append(_text(max(high, zero) + 4, bar_y + bar_h - 4, value_format(value), css="value"))
                bar_y += bar_h
        if stacked:
            body.append(_text(max(end, zero) + 4, bar_y + bar_h - 4, text, css="value"))
        y += band
    return _svg(title, css, width, height, body)


def _value_text(row: Sequence[float], names: Sequence[str], fmt: Format, stacked: bool) -> str:
    """The longest text written after a bar: each value, or a stacked bar's non-zero parts ("3 passed / 1 failed")."""
    if stacked:
        parts = [f"{fmt(value)} {name}".strip() for value, name in zip(row, names, strict=True) if value]
        return " / ".join(parts) or fmt(0.0)
    return max((fmt(value) for value in row), key=len, default="")
