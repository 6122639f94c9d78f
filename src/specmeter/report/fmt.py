"""Plain-string formatters for result figures, shared by the console and (later) the HTML report.

Every formatter accepts None (a value that does not apply, see docs/results.md) and renders it as an em
dash, so callers never special-case missing numbers. Inputs come from JSON, so numbers may be int or float
and anything else is treated as missing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

DASH = "—"

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]…``, or None once a level is missing or not a mapping, so partial results still render."""
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def as_float(value: Any) -> float | None:
    """A finite number from JSON, else None (bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def fmt_num(value: Any, digits: int = 2) -> str:
    x = as_float(value)
    return DASH if x is None else f"{x:,.{digits}f}"


def fmt_int(value: Any) -> str:
    x = as_float(value)
    return DASH if x is None else f"{round(x):,d}"


def fmt_ci(ci: Any, digits: int = 2) -> str:
    """``[lo, hi]``; a dash when the interval is missing or either bound is."""
    if not isinstance(ci, Sequence) or isinstance(ci, str) or len(ci) != 2:
        return DASH
    lo, hi = as_float(ci[0]), as_float(ci[1])
    if lo is None or hi is None:
        return DASH
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def fmt_rate(rate: Any, num: Any = None, den: Any = None, digits: int = 3) -> str:
    """A rate with its count, e.g. ``0.652 (1,304/2,000)``; docs/metrics.md: every rate comes with it."""
    text = fmt_num(rate, digits)
    if as_float(num) is not None and as_float(den) is not None:
        text += f" ({fmt_int(num)}/{fmt_int(den)})"
    return text


def with_ci(text: str, ci: Any, digits: int = 2) -> str:
    """Append the interval when there is one (a lone dash after a value would read as a minus)."""
    ci_text = fmt_ci(ci, digits)
    return text if ci_text == DASH or text == DASH else f"{text} {ci_text}"


def fmt_speedup(value: Any) -> str:
    x = as_float(value)
    return DASH if x is None else f"{x:.2f}×"


def fmt_ms(value: Any) -> str:
    """Milliseconds with precision that fits the magnitude (sub-ms gaps and multi-second latencies)."""
    x = as_float(value)
    if x is None:
        return DASH
    if abs(x) < 10:
        return f"{x:.2f} ms"
    if abs(x) < 1000:
        return f"{x:.1f} ms"
    return f"{x:,.0f} ms"


def fmt_bytes(value: Any) -> str:
    """Binary units (KiB, MiB, GiB) because weight and KV sizes are powers-of-two quantities."""
    x = as_float(value)
    if x is None:
        return DASH
    sign = "-" if x < 0 else ""
    x = abs(x)
    unit = 0
    while x >= 1024 and unit < len(_BINARY_UNITS) - 1:
        x /= 1024
        unit += 1
    if unit == 0:
        return f"{sign}{x:.0f} B"
    return f"{sign}{x:.2f} {_BINARY_UNITS[unit]}" if x < 10 else f"{sign}{x:.1f} {_BINARY_UNITS[unit]}"


def fmt_pct(value: Any, digits: int = 1) -> str:
    """A fraction as a percentage."""
    x = as_float(value)
    return DASH if x is None else f"{100 * x:.{digits}f}%"


def fmt_dist(dist: Any, fmt: Callable[[Any], str] = fmt_ms, keys: tuple[str, str] = ("p50", "p99")) -> str:
    """Two quantiles of a ``{"p50", "p90", "p99", "mean"}`` object, e.g. ``12.1 ms / 30.2 ms``."""
    if not isinstance(dist, Mapping):
        return DASH
    first, second = fmt(dist.get(keys[0])), fmt(dist.get(keys[1]))
    return DASH if first == second == DASH else f"{first} / {second}"


def fmt_positions(per_position: Any, limit: int = 6) -> str:
    """Per-position acceptance as ``cumulative/conditional`` pairs, e.g. ``0.81/0.81 0.66/0.81 …``."""
    if not isinstance(per_position, Sequence) or isinstance(per_position, str) or not per_position:
        return DASH
    parts = []
    for entry in per_position[:limit]:
        if isinstance(entry, Mapping):
            parts.append(f"{fmt_num(entry.get('cumulative'))}/{fmt_num(entry.get('conditional'))}")
        else:
            parts.append(DASH)
    if len(per_position) > limit:
        parts.append("…")
    return " ".join(parts)
