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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specmeter.economics.roi import HOURS_PER_MONTH, Money, money

__all__ = ["CapacityRoi", "SweepCapacity", "capacity_roi", "sweep_capacity"]


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
    before = math.ceil(traffic / capacity.baseline_rps)
    after = math.ceil(traffic / capacity.spec_rps)

    def priced(n_after: int) -> Money:
        return money(
            before * HOURS_PER_MONTH, n_after * HOURS_PER_MONTH, baseline_price, spec_price, engineering_cost,
            horizon_months,
        )  # fmt: skip

    batch1_after = None
    if capacity.batch1_e is not None:
        batch1_after = math.ceil(traffic / (capacity.baseline_rps * capacity.batch1_e))
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
