"""ROI from measured capacity (``roi --from-sweep``): instances needed with and without speculation.

``economics.roi`` prices a *speedup*: it assumes E holds at whatever load the fleet runs, which a batch-1 E
(``bench``) does not (docs/economics.md). A sweep measures what an instance actually serves: the highest
load whose requests meet the SLO (``sweep --slo``: capacity, as requests/s of goodput), per configuration.
With a traffic of R requests/s:

    instances before = ⌈R / capacity_baseline⌉        instances after = ⌈R / capacity_speculative⌉
    instance-hours / month = instances · 730

and the money — GPU-time cost saved, extra memory cost (the speculative instance's price delta), monthly
savings, ROI over the horizon, payback — is the field report's formula, ``economics.roi.money``, on those
hours. Whole instances: a fleet cannot run 2.3 servers. Beside it, today's batch-1 figure: the same
baseline fleet divided by the sweep's E at its lowest level (what ``roi --speedup E`` assumes), so the two
can be read side by side, each labelled with its assumption.

Before a draft exists (``roi --from-whatif … --traffic R``) there is no speculative capacity to measure: the
baseline's comes from a sweep (or is given), and the speculative one is *assumed* to be

    capacity_speculative = capacity_baseline · E(α, B)        (``scaled_capacity``)

with E read on the what-if surface at the batch size of the load. That holds when an instance's capacity is
throughput-bound (E more tokens per second serve E times the requests); an SLO-bound capacity — a TTFT or
TPOT limit that binds before throughput does — need not scale with E, so every figure built on it carries
``SCALED_ASSUMPTION``. ``speedup_for_capacity_payback`` is the smallest E whose whole instances pay the
engineering cost back within N months.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specmeter.economics.roi import HOURS_PER_MONTH, Money, money

# More instances than any fleet runs: a capacity that asks for them (1e-300 req/s in a hand-edited sweep
# file gave 5e301 instances and a 300-digit bill) is bad input (docs/results.md, "Input limits").
MAX_INSTANCES = 1_000_000


class TooManyInstances(ValueError):
    """A capacity that would need more than :data:`MAX_INSTANCES` instances for the traffic."""


__all__ = [
    "MAX_INSTANCES",
    "SCALED_ASSUMPTION",
    "CapacityRoi",
    "SweepCapacity",
    "TooManyInstances",
    "capacity_roi",
    "instances",
    "level_concurrency",
    "scaled_capacity",
    "speedup_for_capacity_payback",
    "sweep_baseline_capacity",
    "sweep_capacity",
]

SCALED_ASSUMPTION = (
    "assumed, not measured: speculative capacity = baseline capacity × E(α, B) from the what-if surface; "
    "this holds for a throughput-bound capacity, an SLO-bound one (a TTFT/TPOT limit) may not scale with E"
)


@dataclass(frozen=True)
class SweepCapacity:
    """What a sweep result says an instance serves, with and without speculation."""

    baseline_rps: float  # requests/s one baseline instance serves (within the SLO, or at peak)
    spec_rps: float
    spec_run: str  # the configuration behind spec_rps ("k=4", "schedule")
    source: str  # "slo" or "throughput"
    slo: str | None
    baseline_load: str | None  # the level at capacity, e.g. "c=8"
    spec_load: str | None
    batch1_e: float | None  # the best E at the sweep's lowest level
    batch1_level: str | None
    assumption: str  # how the capacity was measured, in words


@dataclass(frozen=True)
class CapacityRoi:
    traffic: float  # requests/s to serve
    capacity: SweepCapacity
    instances_before: int
    instances_after: int
    money: Money
    batch1_instances_after: int | None  # what the batch-1 E predicts
    batch1_money: Money | None
    baseline_price: float
    spec_price: float
    horizon_months: float

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) and value > 0 else None


def sweep_capacity(result: Mapping[str, Any], where: str = "the sweep") -> SweepCapacity:
    """The capacities in a sweep result (``kind: "sweep"``); ValueError (one line) when it has none."""
    if result.get("kind") != "sweep":
        raise ValueError(
            f"{where} is not a sweep result (kind {result.get('kind')!r}); run specmeter sweep --json"
        )
    section = result.get("sweep") or {}
    block = section.get("capacity") or {}
    base = block.get("baseline") or {}
    spec = block.get("speculative") or {}
    base_rps, spec_rps = _num(base.get("requests_per_s")), _num(spec.get("requests_per_s"))
    if base_rps is None or spec_rps is None:
        raise ValueError(
            f"{where} has no capacity for the baseline and a speculative configuration "
            "(every level failed the SLO, or nothing completed)"
        )
    best = section.get("best") or []
    first = best[0] if best else {}
    return SweepCapacity(
        baseline_rps=base_rps,
        spec_rps=spec_rps,
        spec_run=str(spec.get("run")),
        source=str(block.get("source")),
        slo=block.get("slo"),
        baseline_load=base.get("level"),
        spec_load=spec.get("level"),
        batch1_e=_num(first.get("e")),
        batch1_level=first.get("level"),
        assumption=str(block.get("assumption") or ""),
    )


def sweep_baseline_capacity(result: Mapping[str, Any], where: str = "the sweep") -> SweepCapacity:
    """The baseline's capacity in a sweep result, with or without a speculative one (``roi --from-whatif``).

    ``spec_rps`` is the measured speculative capacity when the sweep has one, else the baseline's; only
    ``baseline_rps``, ``baseline_load``, ``slo``, ``source`` and ``assumption`` are read by
    ``scaled_capacity``. ValueError (one line) when the sweep has no baseline capacity.
    """
    if result.get("kind") != "sweep":
        raise ValueError(
            f"{where} is not a sweep result (kind {result.get('kind')!r}); run specmeter sweep --json"
        )
    block = (result.get("sweep") or {}).get("capacity") or {}
    base = block.get("baseline") or {}
    base_rps = _num(base.get("requests_per_s"))
    if base_rps is None:
        raise ValueError(
            f"{where} has no baseline capacity (every baseline level failed the SLO, or nothing completed)"
        )
    spec = block.get("speculative") or {}
    return SweepCapacity(
        baseline_rps=base_rps,
        spec_rps=_num(spec.get("requests_per_s")) or base_rps,
        spec_run=str(spec.get("run")),
        source=str(block.get("source")),
        slo=block.get("slo"),
        baseline_load=base.get("level"),
        spec_load=spec.get("level"),
        batch1_e=None,
        batch1_level=None,
        assumption=str(block.get("assumption") or ""),
    )


def level_concurrency(level: str | None) -> int | None:
    """The concurrency of a sweep level label (``"c=8"`` -> 8); None for an open-loop rate or no level.

    A closed loop at concurrency c keeps at most c requests in the batch, so c is the batch size of that
    load (as the sweep's schedule reads it).
    """
    if not level or not level.startswith("c="):
        return None
    try:
        c = int(level[2:])
    except ValueError:
        return None
    return c if c >= 1 else None


def scaled_capacity(
    baseline_rps: float,
    speedup: float,
    run: str,
    *,
    baseline_load: str | None = None,
    slo: str | None = None,
    measured: str = "given",
) -> SweepCapacity:
    """The speculative capacity *assumed* from a baseline capacity and a what-if E: baseline · E.

    ``run`` names the what-if point ("α=0.65, k=4, B=8"), ``measured`` how the baseline capacity was found
    (the sweep's ``source``, or "given"). The assumption is ``SCALED_ASSUMPTION``; see the module docstring.
    """
    for name, value in (("baseline capacity", baseline_rps), ("speedup", speedup)):
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a number > 0 (got {value})")
    return SweepCapacity(
        baseline_rps=baseline_rps,
        spec_rps=baseline_rps * speedup,
        spec_run=run,
        source=f"{measured}, scaled by E",
        slo=slo,
        baseline_load=baseline_load,
        spec_load=None,
        batch1_e=None,
        batch1_level=None,
        assumption=SCALED_ASSUMPTION,
    )


def instances(traffic: float, capacity_rps: float, what: str = "the baseline's") -> int:
    """⌈traffic / capacity⌉, the whole instances that serve ``traffic``; :class:`TooManyInstances` when that
    is more than :data:`MAX_INSTANCES`."""
    needed = traffic / capacity_rps
    if not needed <= MAX_INSTANCES:  # also inf and NaN
        raise TooManyInstances(
            f"{what} capacity of {capacity_rps:.3g} req/s per instance needs {needed:.3g} instances for "
            f"{traffic:g} req/s, more than {MAX_INSTANCES:,}: check the capacity"
        )
    return math.ceil(needed)


def speedup_for_capacity_payback(
    baseline_rps: float,
    traffic: float,
    baseline_price: float,
    spec_price: float,
    engineering_cost: float,
    months: float,
) -> float | None:
    """The smallest E at which ⌈traffic / (baseline_rps · E)⌉ instances pay C back within ``months``.

    With n_B = ⌈traffic / baseline_rps⌉ instances before and n after, monthly savings are
    730 · (n_B · p_B − n · p_S) (``economics.roi.money``); paying C back within N months needs savings ≥ C/N,
    so n ≤ n* = ⌊(n_B · p_B − C / (730 N)) / p_S⌋, and n* instances serve the traffic once
    E ≥ traffic / (baseline_rps · n*). None when no whole fleet does it (n* < 1); 0 when the speculative
    instance is free and the baseline bill covers C/N (any E). With C = 0 any saving counts:
    n · p_S < n_B · p_B.
    """
    for name, value in (("traffic", traffic), ("months", months), ("baseline capacity", baseline_rps)):
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a number > 0 (got {value})")
    before = instances(traffic, baseline_rps)
    if engineering_cost > 0:
        room = before * baseline_price - engineering_cost / (HOURS_PER_MONTH * months)
        if room < 0:
            return None
        if spec_price <= 0:
            return 0.0
        n_max = math.floor(room / spec_price + 1e-9)
    else:  # nothing to pay back: any saving at all, n · p_S < n_B · p_B
        if spec_price <= 0:
            return 0.0 if baseline_price > 0 else None
        n_max = math.ceil(before * baseline_price / spec_price - 1e-9) - 1
    if n_max < 1:
        return None
    e = traffic / (baseline_rps * n_max)
    while math.ceil(traffic / (baseline_rps * e)) > n_max:  # rounding: the E must really give n_max instances
        e = math.nextafter(e, math.inf)
    return e


def capacity_roi(
    capacity: SweepCapacity,
    traffic: float,
    baseline_price: float,
    spec_price: float,
    engineering_cost: float = 0.0,
    horizon_months: float = 12.0,
) -> CapacityRoi:
    """Instances and money at ``traffic`` requests/s; ValueError naming a bad input."""
    for name, value in (("traffic", traffic), ("horizon_months", horizon_months)):
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a number > 0 (got {value})")
    for name, value in (("baseline_price", baseline_price), ("spec_price", spec_price),
                        ("engineering_cost", engineering_cost)):  # fmt: skip
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a number >= 0 (got {value})")
    before = instances(traffic, capacity.baseline_rps)
    after = instances(traffic, capacity.spec_rps, "the speculative")

    def priced(n_after: int) -> Money:
        return money(
            before * HOURS_PER_MONTH, n_after * HOURS_PER_MONTH, baseline_price, spec_price, engineering_cost,
            horizon_months,
        )  # fmt: skip

    batch1_after = None
    if capacity.batch1_e is not None:
        batch1_after = instances(traffic, capacity.baseline_rps * capacity.batch1_e, "the batch-1 E's")
    return CapacityRoi(
        traffic=traffic,
        capacity=capacity,
        instances_before=before,
        instances_after=after,
        money=priced(after),
        batch1_instances_after=batch1_after,
        batch1_money=None if batch1_after is None else priced(batch1_after),
        baseline_price=baseline_price,
        spec_price=spec_price,
        horizon_months=horizon_months,
    )
