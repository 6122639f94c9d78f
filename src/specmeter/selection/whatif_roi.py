"""``roi --from-whatif``: the field report's ROI of a draft that would reach α, priced with the speedup the
what-if surface measured at that α (``selection.whatif_surface``), and the α a draft must reach to pay back
within N months (``economics.roi.speedup_for_payback``).

Two ways to size the fleet, side by side when both are given: monthly tokens at a baseline throughput
(``RoiInputs``: hours / E), and a traffic of R requests/s at the baseline's SLO capacity (a sweep's, or
given: :class:`CapacityAsk`): whole instances without speculation and with an *assumed* speculative
capacity of baseline capacity × E(α, B), labelled as such (``economics.capacityroi.scaled_capacity``). B is
the one asked for, else the measured batch size nearest the concurrency of the sweep's baseline capacity
level. :func:`price_whatif` answers; ``selection.view_whatif_roi`` prints the answer.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmeter.economics.capacityroi import (
    SCALED_ASSUMPTION,
    CapacityRoi,
    SweepCapacity,
    TooManyInstances,
    capacity_roi,
    level_concurrency,
    scaled_capacity,
    speedup_for_capacity_payback,
    sweep_baseline_capacity,
)
from specmeter.economics.roi import RoiInputs, RoiResult, compute_roi, speedup_for_payback
from specmeter.selection.acceptance_source import AcceptanceSourceError, Source
from specmeter.selection.whatif_surface import alpha_for_speedup, speedup_at

__all__ = ["CapacityAsk", "WhatifRoi", "alpha_from_source", "baseline_capacity", "price_whatif"]


@dataclass(frozen=True)
class CapacityAsk:
    """A traffic with the baseline's capacity: from a sweep result (``sweep``) or given (requests/s per
    instance)."""

    traffic: float
    sweep: Path | None
    baseline_capacity: float | None
    baseline_price: float
    spec_price: float
    engineering_cost: float
    horizon_months: float


@dataclass(frozen=True)
class Payback:
    """A payback question's answer: the E it needs and the α (k, extrapolated) reaching it, if any."""

    months: float
    needed: float | None
    found: tuple[float, int, bool] | None
    engineering_cost: float
    instances: tuple[int, int | None] | None = None  # the fleet's (before, after); None when by tokens

    def to_dict(self) -> dict[str, Any]:
        a, k_used, extrapolated = (None, None, None) if self.found is None else self.found
        return {"months": self.months, "speedup_needed": self.needed, "alpha_needed": a, "k": k_used,
                "extrapolated": extrapolated}  # fmt: skip


@dataclass(frozen=True)
class WhatifRoi:
    """What ``roi --from-whatif`` found: ``data`` is its JSON, the rest what the view prints."""

    data: dict[str, Any]
    batch: int
    alpha: float | None
    point: dict[str, Any] | None  # alpha, k, speedup, extrapolated at --alpha
    how: str  # interpolated on the measured surface, or extrapolated beyond it
    roi: RoiResult | None  # priced by monthly tokens at --alpha
    fleet: CapacityRoi | None  # whole instances at the traffic, speculative capacity assumed
    payback: Payback | None  # by monthly tokens
    fleet_payback: Payback | None  # by whole instances at the traffic
    ask: CapacityAsk | None
    base: SweepCapacity | None
    batch_from: str
    alpha_from: dict[str, Any] | None = None  # --alpha-from: where α came from (alpha_from_source)


def alpha_from_source(
    source: Source, candidate: str | None, k: int | None
) -> tuple[float, int, dict[str, Any]]:
    """``--alpha-from``: (α, k, what it rests on) for ``candidate`` of a replay (or bench) result.

    α is the full-draft α of the candidate's per-position acceptance at k — (τ(k) − 1) / k with τ(k) = 1 +
    Σ_{i<k} P_i (``selection.acceptance_source``) — the α the what-if cells are measured at (every draft k
    tokens long), not the pooled A/D, which steps near the token limit and steps that propose fewer tokens
    pull away from it. k is the candidate's own, or a shorter one (``--k``): the rates of the first k
    positions are those a run at that k would have (docs/metrics.md, "choosing k")."""
    c = source.candidate(candidate)
    k_read = c.k if k is None else k
    alpha = c.overall.full_draft_alpha(k_read)
    if alpha is None:
        why = (
            f"it drafted to position {c.k} only"
            if k_read > c.k
            else f"no step reached a position up to {k_read}"
        )
        raise AcceptanceSourceError(f"--alpha-from: {source.path}: {c.name} has no α at k = {k_read} ({why})")
    facts = {
        "from": str(source.path), "kind": source.kind, "candidate": c.name, "k": k_read, "alpha": alpha,
        "alpha_pooled": c.overall.alpha, "tau": c.overall.tau(k_read), "requests": c.overall.requests,
        "exact": source.exact,
    }  # fmt: skip
    return alpha, k_read, facts


def baseline_capacity(ask: CapacityAsk, sweep: Mapping[str, Any] | None) -> SweepCapacity:
    """The baseline's capacity: the sweep result's (``ask.sweep`` names its file) or the given one;
    ValueError (one line) when the sweep has none."""
    if ask.sweep is None or sweep is None:
        rps = float(ask.baseline_capacity or 0.0)
        return SweepCapacity(rps, rps, "", "given", None, None, None, None, None, "--baseline-capacity")
    return sweep_baseline_capacity(sweep, where=f"--from-sweep {ask.sweep}")


def _batch(section: Mapping[str, Any], batch: int | None, path: Path, load: str | None) -> tuple[int, str]:
    """(B, why): the given B, else the measured B nearest the load's concurrency, else the only one."""
    measured = sorted({int(c["batch"]) for c in section["cells"]})
    listed = ", ".join(map(str, measured))
    if batch is not None:
        if batch not in measured:
            raise ValueError(f"--batch {batch}: {path} was measured at B = {listed} only")
        return batch, "given with --batch"
    concurrency = level_concurrency(load)
    if concurrency is not None:
        b = min(measured, key=lambda m: (abs(m - concurrency), -m))  # a tie goes to the larger B
        how = "the same as" if b == concurrency else "the measured B nearest"
        return b, f"{how} the sweep's baseline capacity level {load}"
    if len(measured) > 1:
        raise ValueError(
            f"--batch: {path} was measured at B = {listed}; say which batch size your instances run at"
        )
    return measured[0], "the only batch size measured"


def price_whatif(
    section: Mapping[str, Any],
    path: Path,
    inputs: RoiInputs | None,
    *,
    alpha: float | None,
    k: int | None,
    batch: int | None,
    payback_months: float | None,
    capacity: CapacityAsk | None = None,
    base: SweepCapacity | None = None,
    alpha_from: dict[str, Any] | None = None,
) -> WhatifRoi:
    """The ROI at ``alpha`` and/or the α needed to pay back within ``payback_months``, on the what-if
    ``section`` read from ``path``.

    ``inputs`` (or None) prices monthly tokens; ``capacity`` with the baseline's capacity ``base`` (or
    None) sizes the fleet for a traffic. ValueError (one line naming the option) for a question the surface
    cannot answer.
    """
    b, batch_from = _batch(section, batch, path, None if base is None else base.baseline_load)
    ks = sorted({int(c["k"]) for c in section["cells"]})
    if k is not None and k not in ks:
        if alpha_from is not None:
            shorter = [m for m in ks if m < k]
            how = (
                f"give --k {shorter[-1]} (the first positions' rates)" if shorter else "replay at a k it has"
            )
            raise ValueError(
                f"--alpha-from: {alpha_from['candidate']} read at k = {k}; {path} has no cells at k = {k} "
                f"(k = {', '.join(map(str, ks))}): {how}"
            )
        raise ValueError(f"--k {k}: {path} has no cells at k = {k}")
    fleet_ask = capacity if base is not None else None
    out: dict[str, Any] = {"source": str(path), "batch": b, "batch_from": batch_from}
    if alpha_from is not None:
        out["alpha_from"] = alpha_from
    if inputs is not None:
        out["inputs"] = dataclasses.asdict(inputs)
    point, how, roi, fleet = None, "", None, None
    if alpha is not None:
        got = speedup_at(section, alpha, b, k)
        if got is None:
            raise ValueError(
                f"--alpha {alpha:g}: {path} has fewer than two measured α at B = {b}; "
                "the surface cannot be read"
            )
        e, k_used, extrapolated = got
        if e <= 0:
            raise ValueError(f"--alpha {alpha:g}: the surface gives no positive speedup there")
        how = "extrapolated beyond the α measured" if extrapolated else "interpolated on the measured surface"
        point = {"alpha": alpha, "k": k_used, "speedup": e, "extrapolated": extrapolated}
        if inputs is not None:
            roi = compute_roi(dataclasses.replace(inputs, speedup=e))
            out["at_alpha"] = {**point, **dataclasses.asdict(roi)}
        if fleet_ask is not None and base is not None:
            fleet = _fleet(fleet_ask, base, point, b)
            out["capacity"] = {**_capacity_facts(fleet_ask, base, b, batch_from), **point,
                               "speculative_capacity": fleet.capacity.spec_rps,
                               "instances_before": fleet.instances_before,
                               "instances_after": fleet.instances_after,
                               **dataclasses.asdict(fleet.money)}  # fmt: skip
    payback = fleet_payback = None
    if payback_months is not None and inputs is not None:
        needed = speedup_for_payback(inputs, payback_months)
        found = None if needed is None else alpha_for_speedup(section, needed, b, k)
        payback = Payback(payback_months, needed, found, inputs.engineering_cost)
        out["payback"] = payback.to_dict()
    if payback_months is not None and fleet_ask is not None and base is not None:
        fleet_payback = _fleet_payback(section, fleet_ask, base, payback_months, b, k)
        out.setdefault("capacity", _capacity_facts(fleet_ask, base, b, batch_from))
        out["capacity"]["payback"] = fleet_payback.to_dict()
    return WhatifRoi(
        out, b, alpha, point, how, roi, fleet, payback, fleet_payback, fleet_ask, base, batch_from, alpha_from
    )


def _capacity_facts(ask: CapacityAsk, base: SweepCapacity, b: int, batch_from: str) -> dict[str, Any]:
    return {
        "traffic": ask.traffic,
        "baseline_capacity": base.baseline_rps,
        "baseline_capacity_from": "--baseline-capacity" if ask.sweep is None else str(ask.sweep),
        "baseline_source": base.source,
        "baseline_level": base.baseline_load,
        "slo": base.slo,
        "batch": b,
        "batch_from": batch_from,
        "assumption": SCALED_ASSUMPTION,
    }


def _fleet(ask: CapacityAsk, base: SweepCapacity, point: dict[str, Any], b: int) -> CapacityRoi:
    """Instances and money at ``ask.traffic`` with the assumed capacity baseline × E."""
    e, alpha, k_used = point["speedup"], point["alpha"], point["k"]
    cap = scaled_capacity(
        base.baseline_rps, e, f"α={alpha:.2f}, k={k_used}, B={b}", baseline_load=base.baseline_load,
        slo=base.slo, measured=base.source,
    )  # fmt: skip
    try:
        return capacity_roi(cap, ask.traffic, ask.baseline_price, ask.spec_price, ask.engineering_cost,
                            ask.horizon_months)  # fmt: skip
    except TooManyInstances:
        raise
    except ValueError as err:
        raise ValueError(f"--{err}".replace("_", "-")) from None


def _fleet_payback(
    section: Mapping[str, Any], ask: CapacityAsk, base: SweepCapacity, months: float, b: int, k: int | None
) -> Payback:
    """The α whose assumed capacity (baseline × E) pays the engineering cost back within ``months``."""
    needed = speedup_for_capacity_payback(base.baseline_rps, ask.traffic, ask.baseline_price, ask.spec_price,
                                          ask.engineering_cost, months)  # fmt: skip
    found = None if needed is None else alpha_for_speedup(section, needed, b, k)
    before = math.ceil(ask.traffic / base.baseline_rps)
    after = None
    if found is not None and needed is not None and needed > 0:
        after = math.ceil(ask.traffic / (base.baseline_rps * needed))
    return Payback(months, needed, found, ask.engineering_cost, (before, after))
