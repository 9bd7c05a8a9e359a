"""Readable numbers for people: money, durations, energy and plain values, never ``1e-07`` or ``28e-16``.

Reports, the console, chart ticks and CLI tables all show the same figure the same way; the exact value stays in
JSON outputs. Tiny amounts are what this library mostly prices (one embedding costs micro-dollars), so money gets
µ$ and m$ prefixes instead of a run of zeros.
"""

from __future__ import annotations

import math
from collections.abc import Callable

#: below this magnitude a value is floating-point noise on the scales we chart (e.g. 2.8e-16 busy fraction)
_NOISE = 1e-12
_SI = ((1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))


def number(value: float, significant: int = 3) -> str:
    """``value`` to ``significant`` digits in positional notation with thousands separators: 0.000788, 12,300."""
    if not math.isfinite(value):
        return str(value)
    if abs(value) < _NOISE:
        return "0"
    exponent = math.floor(math.log10(abs(value)))
    decimals = max(0, significant - 1 - exponent)
    text = f"{round(value, decimals):,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _prefixed(value: float, unit: str, prefixes: tuple[tuple[float, str], ...] = _SI) -> str:
    if not math.isfinite(value) or abs(value) < _NOISE:
        return f"{number(value)} {unit}"
    scale, prefix = next(((s, p) for s, p in prefixes if abs(value) >= s), prefixes[-1])
    return f"{number(value / scale)} {prefix}{unit}"


def seconds(value: float) -> str:
    """A duration in s, ms, µs or ns: ``0.00042`` -> ``420 µs``."""
    return _prefixed(value, "s", _SI[1:])


def joules(value: float) -> str:
    """Energy in kJ, J, mJ, µJ or nJ."""
    return _prefixed(value, "J")


def usd_scale(largest: float) -> Callable[[float], str]:
    """A money formatter in one unit for a whole axis or column, chosen by its ``largest`` magnitude, so ticks
    and cells compare at a glance (``m$3.36`` next to ``m$14.8``, not ``m$3.36`` next to ``$0.0148``)."""
    size = abs(largest) if math.isfinite(largest) else 0.0
    prefix, scale = ("$", 1.0) if size >= 1 else ("m$", 1e-3) if size >= 1e-3 else ("µ$", 1e-6)

    def fmt(value: float) -> str:
        sign = "-" if value < 0 else ""
        return f"{sign}{prefix}{number(abs(value) / scale)}"

    return fmt


def usd(value: float) -> str:
    """Money: ``$1,234.50`` and ``$0.042`` for cents and up, ``m$4.6`` (thousandths) and ``µ$4.6`` below."""
    if not math.isfinite(value) or abs(value) < _NOISE:
        return f"${number(value)}"
    sign, size = ("-" if value < 0 else ""), abs(value)
    if size >= 1:
        return f"{sign}${size:,.2f}"
    if size >= 0.01:
        return f"{sign}${number(size)}"
    if size >= 1e-5:
        return f"{sign}m${number(size * 1e3)}"
    return f"{sign}µ${number(size * 1e6)}"


def size(count: float) -> str:
    """Bytes in binary units: ``912 B``, ``455.3 KiB``, ``86.1 MiB``."""
    if abs(count) < 1024:
        return f"{count:,.0f} B"
    return f"{count / 1024:,.1f} KiB" if abs(count) < 1024**2 else f"{count / 1024**2:,.1f} MiB"
