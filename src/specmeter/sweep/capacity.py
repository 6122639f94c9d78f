"""SLO capacity: the highest load whose attainment stays at or above a target, found by bisection.

:func:`search_capacity` knows nothing about servers: it takes ``run_level(load) -> Attainment`` (or a bare
share), which runs one level — a concurrency or a request rate — against whatever is serving and judges
its requests (:func:`specmeter.metrics.slo.attainment`). ``sweep --search`` is its caller: it passes one
per server configuration (baseline and speculative) that runs a level on that configuration's own server
(``sweep.search.make_search``), so "speculation moves SLO capacity from N to M" is two calls.

Attainment is assumed to fall as load rises (docs/metrics.md, "capacity"). The search measures the lower
bound, then the upper bound, then bisects between the highest passing and the lowest failing load until the
two are adjacent or ``max_steps`` levels have run. Concurrency is bisected at the arithmetic midpoint
(stopping at one apart: ⌈log2(high − low)⌉ levels after the bounds); a rate at the geometric midpoint
(stopping within ``rel_tol``, a relative criterion: each level halves log(high/low)). Noise near the
target can make a level pass or fail by chance; the result therefore also names the levels whose whole
Wilson interval lies above the target (surely passing) and below it (surely failing), which bound the
capacity with the intervals' confidence.

vLLM's ``vllm bench sweep serve_sla`` (``vllm/benchmarks/sweep/serve_sla.py``, ``solve_sla``) also keeps
the highest passing and lowest failing value of concurrency or rate and stops when they are one apart,
but it judges a level by its aggregate percentiles (``p99_e2el_ms <= 500``) and steps to the root of a
PCHIP interpolation of the margins, starting from the maximum; here a level is judged by per-request
attainment, and plain bisection keeps the number of levels bounded and known before the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from specmeter.metrics.slo import DEFAULT_ATTAINMENT, Attainment

__all__ = [
    "DEFAULT_MAX_STEPS",
    "DEFAULT_REL_TOL",
    "SEARCH_KINDS",
    "CapacityResult",
    "Probe",
    "SearchKind",
    "search_capacity",
]

SearchKind = Literal["concurrency", "rate"]
SEARCH_KINDS: tuple[SearchKind, ...] = ("concurrency", "rate")
DEFAULT_MAX_STEPS = 8  # levels run at most, both bounds included (1 … 64 by concurrency needs 8)
DEFAULT_REL_TOL = 0.1  # a rate search stops when the failing rate is within 10% of the passing one


@dataclass(frozen=True)
class Probe:
    """One level the search ran: the load, its attainment, and whether it passed the target."""

    load: float
    attainment: Attainment | None  # None when run_level returned a bare share
    share: float | None
    passed: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "load": self.load,
            "share": self.share,
            "passed": self.passed,
            "attainment": None if self.attainment is None else self.attainment.to_dict(),
        }


@dataclass(frozen=True)
class CapacityResult:
    """What the search found.

    ``capacity`` is the highest load measured at or above the target (None: even ``low`` failed);
    ``first_failing`` the lowest load measured below it (None: even ``high`` passed, so capacity ≥ high).
    ``sure_pass`` / ``sure_fail`` are the highest load whose whole Wilson interval is at or above the target
    and the lowest whose whole interval is below it: the capacity lies in [sure_pass, sure_fail) with the
    intervals' confidence (None: no level was that clear; more requests per level narrow it).
    """

    kind: SearchKind
    target: float
    low: float
    high: float
    capacity: float | None
    first_failing: float | None
    sure_pass: float | None
    sure_fail: float | None
    probes: tuple[Probe, ...]
    stopped: str  # why the search ended, in words

    def text(self) -> str:
        """One line: ``capacity 8 concurrency (target 95%; 4 passes surely, 16 fails surely)``."""
        unit = "concurrency" if self.kind == "concurrency" else "req/s"
        target = f"attainment ≥ {self.target:.0%}"
        if self.capacity is None:
            return f"no capacity: {target} fails already at {self.kind} {_fmt(self.low)}"
        head = f"capacity {_fmt(self.capacity)} {unit} ({target}"
        if self.first_failing is None:
            head = f"capacity ≥ {_fmt(self.capacity)} {unit} (the upper bound passes; {target}"
        sure = "; interval " + _fmt_interval(self.sure_pass, self.sure_fail, self.low)
        return head + sure + ")"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "target": self.target,
            "bounds": [self.low, self.high],
            "capacity": self.capacity,
            "first_failing": self.first_failing,
            "interval": [self.sure_pass, self.sure_fail],
            "probes": [p.to_dict() for p in self.probes],
            "stopped": self.stopped,
        }


def _fmt(load: float) -> str:
    return f"{load:g}"


def _fmt_interval(sure_pass: float | None, sure_fail: float | None, low: float) -> str:
    lo = f"[{_fmt(sure_pass)}" if sure_pass is not None else f"[< {_fmt(low)}"
    hi = f"{_fmt(sure_fail)})" if sure_fail is not None else "not bounded)"
    return f"{lo}, {hi}"


def _midpoint(lo: float, hi: float, integer: bool) -> float | None:
    """A load strictly between lo and hi: the arithmetic midpoint rounded down for integers (concurrency),
    the geometric one for rates; None when none is left."""
    mid = float((int(lo) + int(hi)) // 2) if integer else math.sqrt(lo * hi)
    return mid if lo < mid < hi else None


def search_capacity(
    run_level: Callable[[float], Attainment | float],
    *,
    kind: SearchKind,
    low: float,
    high: float,
    target: float = DEFAULT_ATTAINMENT,
    max_steps: int = DEFAULT_MAX_STEPS,
    rel_tol: float = DEFAULT_REL_TOL,
    on_probe: Callable[[Probe], None] | None = None,
) -> CapacityResult:
    """The highest load in [low, high] whose attainment stays ≥ ``target``, running ≤ ``max_steps`` levels.

    ``kind="concurrency"`` searches integers (loads passed to ``run_level`` are whole floats: 1.0, 4.0);
    ``kind="rate"`` searches requests/s until the failing rate is within ``rel_tol`` of the passing one.
    ``on_probe`` sees every level as soon as it is judged (progress, partial results). An exception from
    ``run_level`` ends the search and propagates; the probes so far have reached ``on_probe``.
    """
    if kind not in SEARCH_KINDS:
        raise ValueError(f"kind must be one of {', '.join(SEARCH_KINDS)}")
    integer = kind == "concurrency"
    if not (0 < target <= 1):
        raise ValueError("target attainment must lie in (0, 1]")
    if not (0 < low < high) or not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError("bounds must satisfy 0 < low < high")
    if integer and (low != int(low) or high != int(high)):
        raise ValueError("concurrency bounds must be whole numbers")
    if max_steps < 2:
        raise ValueError("max_steps must be at least 2 (both bounds)")
    if rel_tol <= 0:
        raise ValueError("rel_tol must be positive")

    probes: list[Probe] = []

    def probe(load: float) -> Probe:
        result = run_level(float(load))
        if isinstance(result, Attainment):
            share = result.share
            judged: Probe = Probe(float(load), result, share, result.passes(target))
        else:
            share = float(result)
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"run_level({load:g}) returned {share!r}, not a share in [0, 1]")
            judged = Probe(float(load), None, share, share >= target)
        probes.append(judged)
        if on_probe is not None:
            on_probe(judged)
        return judged

    def finish(capacity: float | None, first_failing: float | None, stopped: str) -> CapacityResult:
        sure_pass = max(
            (p.load for p in probes if p.attainment is not None and p.attainment.surely_passes(target)),
            default=None,
        )
        sure_fail = min(
            (p.load for p in probes if p.attainment is not None and p.attainment.surely_fails(target)),
            default=None,
        )
        return CapacityResult(
            kind, target, float(low), float(high), capacity, first_failing, sure_pass, sure_fail,
            tuple(probes), stopped,
        )  # fmt: skip

    if not probe(low).passed:
        return finish(None, float(low), "the lower bound fails")
    if not probe(high).passed:
        lo, hi = float(low), float(high)
    else:
        return finish(float(high), None, "the upper bound passes")
    while True:
        if integer and hi - lo <= 1:
            return finish(lo, hi, "adjacent levels bracket it")
        if not integer and hi <= lo * (1 + rel_tol):
            return finish(lo, hi, f"bracketed within {rel_tol:.0%}")
        if len(probes) >= max_steps:
            return finish(lo, hi, f"max steps ({max_steps}) reached")
        mid = _midpoint(lo, hi, integer)
        if mid is None:
            return finish(lo, hi, "adjacent levels bracket it")
        if probe(mid).passed:
            lo = mid
        else:
            hi = mid
