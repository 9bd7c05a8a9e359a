"""Small dependency-free SVG line charts for simulation reports (utilisation over time, latency CDF)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

_WIDTH, _HEIGHT, _PAD = 640, 360, 56


def line_chart(points: Sequence[tuple[float, float]], *, title: str, x_label: str, y_label: str) -> str:
    """An SVG document plotting ``points`` (x, y) with labelled axes and min/max tick values."""
    xs = [x for x, _ in points] or [0.0]
    ys = [y for _, y in points] or [0.0]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(0.0, min(ys)), max(ys) if max(ys) > 0 else 1.0
    width, height = _WIDTH - 2 * _PAD, _HEIGHT - 2 * _PAD

    def sx(x: float) -> float:
        return _PAD + (x - x0) / (x1 - x0) * width

    def sy(y: float) -> float:
        return _HEIGHT - _PAD - (y - y0) / (y1 - y0) * height

    path = " ".join(f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(points))
    bottom, right = _HEIGHT - _PAD, _WIDTH - _PAD
    return f"""<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
<text x="{_WIDTH / 2}" y="24" text-anchor="middle" font-size="15">{escape(title)}</text>
<line x1="{_PAD}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="black"/>
<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{bottom}" stroke="black"/>
<text x="{_PAD}" y="{bottom + 16}" text-anchor="middle">{x0:.3g}</text>
<text x="{right}" y="{bottom + 16}" text-anchor="middle">{x1:.3g}</text>
<text x="{_PAD - 6}" y="{bottom}" text-anchor="end">{y0:.3g}</text>
<text x="{_PAD - 6}" y="{_PAD + 4}" text-anchor="end">{y1:.3g}</text>
<text x="{_WIDTH / 2}" y="{_HEIGHT - 12}" text-anchor="middle">{escape(x_label)}</text>
<text x="16" y="{_HEIGHT / 2}" text-anchor="middle" transform="rotate(-90 16 {_HEIGHT / 2})">{escape(y_label)}</text>
<path d="{path}" fill="none" stroke="#1f6feb" stroke-width="2"/>
</svg>
"""
