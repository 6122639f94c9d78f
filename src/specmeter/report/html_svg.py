"""Inline SVG charts drawn in Python: no JavaScript, no CDN, so a report opens anywhere, offline.

Each function returns one ``<svg class="chart" data-chart=NAME>`` string. Data marks carry
``class="mark"`` (tests check that every chart drew some, at finite coordinates); points that are not
finite are skipped, never drawn at NaN. All markup goes through :func:`_el`, which escapes every
attribute, and all text through :func:`esc`, because labels are user-supplied names (drafts,
categories, request ids).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = [
    "BASELINE_COLOR",
    "DANGER_COLOR",
    "PALETTE",
    "Bar",
    "Lane",
    "Row",
    "Series",
    "dot_whisker",
    "ecdf",
    "esc",
    "grouped_bars",
    "hbars",
    "line_chart",
    "nice_ticks",
    "timeline",
]

PALETTE = ("#2563eb", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#db2777", "#65a30d", "#7c3aed")
BASELINE_COLOR = "#6b7280"
DANGER_COLOR = "#dc2626"
_W = 760  # viewBox width; the SVG scales to the page
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 16, 36, 44

Fmt = Callable[[float], str]


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _attr(value: object) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("non-finite coordinate")  # a bug upstream: callers skip such points
        return f"{value:.1f}"
    return esc(value)


def _el(tag: str, body: str | None = None, /, **attrs: object) -> str:
    """``<tag a="v" ...>body</tag>``; ``class_`` → class, ``text_anchor`` → text-anchor; body is markup."""
    text = " ".join(
        f'{k.rstrip("_").replace("_", "-")}="{_attr(v)}"' for k, v in attrs.items() if v is not None
    )
    return f"<{tag} {text}/>" if body is None else f"<{tag} {text}>{body}</{tag}>"


def _tip(text: str) -> str:
    return f"<title>{esc(text)}</title>"


def _finite(*xs: float | None) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def _short(text: str, n: int = 34) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _num(x: float) -> str:
    return f"{x:.3g}"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 2.5, 5 × 10^k steps)."""
    if not _finite(lo, hi) or hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    return [start + i * step for i in range(math.ceil((hi - start) / step) + 1)]


class _Scale:
    def __init__(self, d0: float, d1: float, r0: float, r1: float, log: bool = False) -> None:
        self.log = log
        self.d0, self.d1 = (math.log10(d0), math.log10(d1)) if log else (d0, d1)
        if self.d1 == self.d0:
            self.d1 = self.d0 + 1.0
        self.r0, self.r1 = float(r0), float(r1)

    def __call__(self, x: float) -> float:
        v = math.log10(x) if self.log else x
        return self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)


_CHAR_W = 6.2  # approximate advance of an 11px sans-serif character


def _legend_layout(legend: Sequence[tuple[str, str]]) -> list[tuple[float, float, str, str]]:
    """(x, y, label, color) per legend item, left to right under the title, wrapping at the width."""
    items, x, y = [], 8.0, 34.0
    for label, color in legend:
        text = _short(label, 40)
        width = 14 + _CHAR_W * len(text) + 12
        if x > 8 and x + width > _W - _RIGHT:
            x, y = 8.0, y + 16
        items.append((x, y, text, color))
        x += width
    return items


def _top(legend: Sequence[tuple[str, str]]) -> float:
    """Where the plot starts: below the title and the legend rows."""
    items = _legend_layout(legend)
    return float(_TOP + (items[-1][1] - 34 + 16 if items else 0))


def _open(name: str, title: str, height: float, legend: Sequence[tuple[str, str]] = ()) -> list[str]:
    parts = [
        f'<svg class="chart" data-chart="{esc(name)}" viewBox="0 0 {_W} {height:.0f}" role="img" '
        f'aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg">',
        _tip(title),
        _el("text", esc(title), class_="ctitle", x=8.0, y=18.0),
    ]
    for x, y, text, color in _legend_layout(legend):
        parts.append(_el("rect", x=x, y=y - 9, width=10.0, height=10.0, fill=color))
        parts.append(_el("text", esc(text), class_="legend", x=x + 14, y=y))
    return parts


def _line(cls: str, x1: float, y1: float, x2: float, y2: float, **attrs: object) -> str:
    return _el("line", class_=cls, x1=x1, y1=y1, x2=x2, y2=y2, **attrs)


def _x_axis(parts: list[str], sx: _Scale, ticks: Sequence[float], y: float, fmt: Fmt, label: str) -> None:
    parts.append(_line("axis", sx.r0, y, sx.r1, y))
    for t in ticks:
        x = sx(t)
        parts.append(_line("tick", x, y, x, y + 4))
        parts.append(_el("text", esc(fmt(t)), class_="tl", x=x, y=y + 16, text_anchor="middle"))
    mid = (sx.r0 + sx.r1) / 2
    parts.append(_el("text", esc(label), class_="al", x=mid, y=y + 32, text_anchor="middle"))


def _y_axis(
    parts: list[str], sy: _Scale, ticks: Sequence[float], x0: float, x1: float, fmt: Fmt, label: str
) -> None:
    for t in ticks:
        y = sy(t)
        parts.append(_line("grid", x0, y, x1, y))
        parts.append(_el("text", esc(fmt(t)), class_="tl", x=x0 - 6, y=y + 4, text_anchor="end"))
    mid = (sy.r0 + sy.r1) / 2
    rotate = f"rotate(-90 14 {mid:.1f})"
    parts.append(_el("text", esc(label), class_="al", x=14.0, y=mid, text_anchor="middle", transform=rotate))


def _vref(parts: list[str], x: float, top: float, bottom: float, label: str) -> None:
    parts.append(_line("ref", x, top, x, bottom))
    parts.append(_el("text", esc(label), class_="reflabel", x=x + 4, y=top + 10))


def _href(parts: list[str], y: float, left: float, right: float, label: str) -> None:
    parts.append(_line("ref", left, y, right, y))
    parts.append(_el("text", esc(label), class_="reflabel", x=right - 4, y=y - 4, text_anchor="end"))


@dataclass(frozen=True)
class Row:
    label: str
    value: float | None
    lo: float | None = None
    hi: float | None = None
    color: str = PALETTE[0]
    text: str = ""  # printed at the right of the row


def dot_whisker(
    name: str, title: str, rows: Sequence[Row], *, x_label: str, domain: tuple[float, float] | None = None,
    reference: tuple[float, str] | None = None, fmt: Fmt = _num,
) -> str:  # fmt: skip
    """One row per item: a dot at the value and a whisker over its interval."""
    left, row_h = 230, 22
    height = _TOP + row_h * max(len(rows), 1) + _BOTTOM
    values = [v for r in rows for v in (r.value, r.lo, r.hi) if v is not None and math.isfinite(v)]
    lo, hi = domain or (min([*values, 0.0]), max([*values, 1.0]) * 1.08)
    ticks = nice_ticks(lo, hi)
    sx = _Scale(ticks[0], ticks[-1], left, _W - _RIGHT - 130)
    parts = _open(name, title, height)
    bottom = float(_TOP + row_h * len(rows))
    for t in ticks:
        parts.append(_line("grid", sx(t), float(_TOP), sx(t), bottom))
    for i, r in enumerate(rows):
        y = _TOP + row_h * i + row_h / 2
        parts.append(_el("text", esc(_short(r.label)), class_="rl", x=left - 8.0, y=y + 4, text_anchor="end"))
        if r.lo is not None and r.hi is not None and _finite(r.lo, r.hi):
            parts.append(_line("mark whisker", sx(r.lo), y, sx(r.hi), y, stroke=r.color))
        if r.value is not None and _finite(r.value):
            tip = _tip(f"{r.label}: {fmt(r.value)}")
            parts.append(_el("circle", tip, class_="mark", cx=sx(r.value), cy=y, r=5.0, fill=r.color))
        if r.text:
            parts.append(
                _el("text", esc(r.text), class_="rv", x=float(_W - _RIGHT), y=y + 4, text_anchor="end")
            )
    if reference is not None:
        _vref(parts, sx(reference[0]), _TOP - 6.0, bottom, reference[1])
    _x_axis(parts, sx, ticks, bottom, fmt, x_label)
    return "".join([*parts, "</svg>"])


@dataclass(frozen=True)
class Bar:
    series: str
    value: float | None
    lo: float | None = None
    hi: float | None = None


def grouped_bars(
    name: str, title: str, groups: Sequence[tuple[str, Sequence[Bar]]], colors: dict[str, str], *,
    y_label: str, reference: tuple[float, str] | None = None, fmt: Fmt = _num,
) -> str:  # fmt: skip
    """Vertical bars, one group per item and one bar per series, with optional interval whiskers."""
    legend = list(colors.items())
    top = _top(legend)
    height = 264 + top
    values = [v for _, bars in groups for b in bars for v in (b.value, b.hi) if v is not None and _finite(v)]
    ticks = nice_ticks(0.0, max([*values, reference[0] if reference else 0.0, 1e-9]) * 1.1)
    sy = _Scale(ticks[0], ticks[-1], height - _BOTTOM, top)
    parts = _open(name, title, height, legend)
    _y_axis(parts, sy, ticks, _LEFT, _W - _RIGHT, fmt, y_label)
    slot = (_W - _LEFT - _RIGHT) / max(len(groups), 1)
    for gi, (label, bars) in enumerate(groups):
        width = slot * 0.8 / max(len(bars), 1)
        x0 = _LEFT + slot * gi + slot * 0.1
        for bi, b in enumerate(bars):
            if b.value is None or not _finite(b.value):
                continue
            x, y = x0 + bi * width, sy(max(b.value, 0.0))
            tip = _tip(f"{label} · {b.series}: {fmt(b.value)}")
            color = colors.get(b.series, PALETTE[0])
            parts.append(
                _el("rect", tip, class_="mark", x=x, y=y, width=width * 0.9, height=sy(0) - y, fill=color)
            )
            if b.lo is not None and b.hi is not None and _finite(b.lo, b.hi):
                cx = x + width * 0.45
                parts.append(_line("whisker", cx, sy(b.lo), cx, sy(b.hi)))
        text = esc(_short(label, int(slot / 7)))
        parts.append(
            _el("text", text, class_="tl", x=x0 + slot * 0.4, y=height - _BOTTOM + 16.0, text_anchor="middle")
        )
    if reference is not None:
        _href(parts, sy(reference[0]), _LEFT, _W - _RIGHT, reference[1])
    parts.append(_line("axis", float(_LEFT), sy(0), float(_W - _RIGHT), sy(0)))
    return "".join([*parts, "</svg>"])


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[float, float | None]]
    color: str = PALETTE[0]
    dashed: bool = False
    legend: bool = True


def line_chart(
    name: str, title: str, series: Sequence[Series], *, x_label: str, y_label: str,
    y_domain: tuple[float, float] | None = None, reference: tuple[float, str] | None = None, fmt: Fmt = _num,
) -> str:  # fmt: skip
    """Lines over integer x (positions, k), with a dot per point; gaps where y is missing."""
    legend = [(s.name, s.color) for s in series if s.legend]
    top = _top(legend)
    height = 244 + top
    xs = [x for s in series for x, y in s.points if y is not None and _finite(x, y)]
    ys = [y for s in series for _, y in s.points if y is not None and math.isfinite(y)]
    x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    sx = _Scale(x_lo - 0.3, x_hi + 0.3, _LEFT, _W - _RIGHT)
    lo = min([*ys, reference[0] if reference else 0.0, 0.0])
    y_ticks = nice_ticks(*(y_domain or (lo, max([*ys, 1e-9]) * 1.08)))
    sy = _Scale(y_ticks[0], y_ticks[-1], height - _BOTTOM, top)
    parts = _open(name, title, height, legend)
    _y_axis(parts, sy, y_ticks, _LEFT, _W - _RIGHT, fmt, y_label)
    for s in series:
        runs: list[list[tuple[float, float]]] = [[]]
        for x, y in s.points:
            if y is not None and _finite(x, y):
                runs[-1].append((sx(x), sy(y)))
            elif runs[-1]:
                runs.append([])
        dash = "6 4" if s.dashed else None
        for pts in runs:
            if len(pts) > 1:
                d = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
                parts.append(_el("polyline", class_="mark", points=d, fill="none", stroke=s.color,
                                 stroke_width="2", stroke_dasharray=dash))  # fmt: skip
            for px, py in pts:
                parts.append(_el("circle", _tip(s.name), class_="mark", cx=px, cy=py, r=3.5, fill=s.color))
    if reference is not None:
        _href(parts, sy(reference[0]), _LEFT, _W - _RIGHT, reference[1])
    ticks = [float(x) for x in range(math.floor(x_lo), math.ceil(x_hi) + 1)]
    _x_axis(parts, sx, ticks, float(height - _BOTTOM), lambda v: f"{v:g}", x_label)
    return "".join([*parts, "</svg>"])


def ecdf(name: str, title: str, series: Sequence[tuple[str, Sequence[float], str]], *, x_label: str) -> str:
    """Empirical CDFs on a log x axis: where each run's gaps sit, and how long its tail is."""
    legend = [(n, c) for n, _, c in series]
    top = _top(legend)
    height = 244 + top
    pos = [v for _, vals, _ in series for v in vals if math.isfinite(v) and v > 0]
    lo, hi = (min(pos), max(pos)) if pos else (1.0, 10.0)
    lo_t, hi_t = 10.0 ** math.floor(math.log10(lo)), 10.0 ** math.ceil(math.log10(hi * 1.0001))
    sx = _Scale(lo_t, hi_t, _LEFT, _W - _RIGHT, log=True)
    sy = _Scale(0.0, 1.0, height - _BOTTOM, top)
    parts = _open(name, title, height, legend)
    _y_axis(
        parts, sy, [0, 0.25, 0.5, 0.75, 1.0], _LEFT, _W - _RIGHT, lambda v: f"{v:g}", "fraction of gaps ≤ x"
    )
    for label, values, color in series:
        vals = sorted(v for v in values if math.isfinite(v) and v > 0)
        if not vals:
            continue
        step = max(1, len(vals) // 400)  # a few hundred vertices draw the same curve as 10^5
        n = len(vals)
        pts = [(sx(v), sy((i + 1) / n)) for i, v in enumerate(vals) if i % step == 0 or i == n - 1]
        d = f"M{pts[0][0]:.1f},{sy(0):.1f} " + " ".join(f"L{x:.1f},{y:.1f}" for x, y in pts)
        parts.append(
            _el("path", _tip(label), class_="mark", d=d, fill="none", stroke=color, stroke_width="2")
        )
    ticks = [10.0**e for e in range(round(math.log10(lo_t)), round(math.log10(hi_t)) + 1)]
    _x_axis(parts, sx, ticks, float(height - _BOTTOM), lambda v: f"{v:g}", x_label)
    return "".join([*parts, "</svg>"])


@dataclass(frozen=True)
class Lane:
    label: str
    events: Sequence[tuple[float, int]]  # (time ms, tokens)
    stalls: set[int] = field(default_factory=set)  # indexes of events that ended a stall
    color: str = PALETTE[0]


def timeline(
    name: str, title: str, lanes: Sequence[Lane], *, x_label: str = "time since request start (ms)"
) -> str:
    """One lane per run of the same request: a tick per emission, its height the tokens it carried.

    Stalls (gaps > 3× the request's median gap) are drawn as red bars over the waiting time, so the
    stutter the field report's users felt is visible at a glance.
    """
    left, lane_h = 170, 46
    legend = [("stall (gap > 3× the request's median)", DANGER_COLOR)]
    top = _top(legend)
    height = top + lane_h * max(len(lanes), 1) + _BOTTOM
    t_max = max([t for lane in lanes for t, _ in lane.events if math.isfinite(t)] + [1e-9])
    ticks = nice_ticks(0.0, t_max)
    sx = _Scale(0.0, ticks[-1], left, _W - _RIGHT)
    tokens_max = max([n for lane in lanes for _, n in lane.events] + [1])
    parts = _open(name, title, height, legend)
    for i, lane in enumerate(lanes):
        base = top + lane_h * (i + 1) - 8.0
        parts.append(_el("text", esc(_short(lane.label, 24)), class_="rl", x=left - 8.0, y=base - 8,
                         text_anchor="end"))  # fmt: skip
        parts.append(_line("grid", float(left), base, float(_W - _RIGHT), base))
        prev = 0.0
        for j, (t, n) in enumerate(lane.events):
            if not math.isfinite(t):
                continue
            if j in lane.stalls:
                width = max(sx(t) - sx(prev), 1.0)
                parts.append(_el("rect", class_="mark stall", x=sx(prev), y=base - 4, width=width, height=4.0,
                                 fill=DANGER_COLOR))  # fmt: skip
            h = 6 + 28 * n / tokens_max
            tip = _tip(f"{t:.1f} ms: {n} token(s)")
            parts.append(_el("rect", tip, class_="mark", x=sx(t) - 1, y=base - h, width=2.0, height=h,
                             fill=lane.color))  # fmt: skip
            prev = t
    _x_axis(parts, sx, ticks, top + lane_h * len(lanes) + 2.0, lambda v: f"{v:g}", x_label)
    return "".join([*parts, "</svg>"])


def hbars(
    name: str, title: str, rows: Sequence[tuple[str, Sequence[tuple[float, str, str]]]], *, x_label: str,
    fmt: Fmt = _num, legend: bool = True,
) -> str:  # fmt: skip
    """Stacked horizontal bars: one row per item, segments (value, color, name); the total at the right."""
    left, row_h = 230, 26
    items = list({n: c for _, segs in rows for _, c, n in segs}.items()) if legend else []
    top = _top(items)
    height = top + row_h * max(len(rows), 1) + _BOTTOM
    totals = [sum(v for v, _, _ in segs if _finite(v) and v > 0) for _, segs in rows]
    ticks = nice_ticks(0.0, max([*totals, 1e-9]) * 1.05)
    sx = _Scale(0.0, ticks[-1], left, _W - _RIGHT - 80)
    parts = _open(name, title, height, items)
    bottom = top + row_h * len(rows)
    for t in ticks:
        parts.append(_line("grid", sx(t), top, sx(t), bottom))
    for i, (label, segs) in enumerate(rows):
        y = top + row_h * i + 4.0
        parts.append(_el("text", esc(_short(label)), class_="rl", x=left - 8.0, y=y + 13, text_anchor="end"))
        acc = 0.0
        for value, color, seg in segs:
            if not _finite(value) or value <= 0:
                continue
            tip = _tip(f"{label} · {seg}: {fmt(value)}")
            width = sx(acc + value) - sx(acc)
            parts.append(_el("rect", tip, class_="mark", x=sx(acc), y=y, width=width, height=row_h - 8.0,
                             fill=color))  # fmt: skip
            acc += value
        parts.append(_el("text", esc(fmt(totals[i])), class_="rv", x=float(_W - _RIGHT), y=y + 13,
                         text_anchor="end"))  # fmt: skip
    _x_axis(parts, sx, ticks, bottom, fmt, x_label)
    return "".join([*parts, "</svg>"])
