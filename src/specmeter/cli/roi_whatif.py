"""``roi --from-whatif whatif.json --alpha A``: the field report's ROI of a draft that would reach α, priced
with the speedup the what-if surface measured at that α (``selection.whatif``), and with ``--target-roi N``
(alias ``--payback-within``) the α a draft must reach to pay back within N months
(``economics.roi.speedup_for_payback``).

Two ways to size the fleet, side by side when both are given: monthly tokens at a baseline throughput
(``--monthly-tokens``, ``--baseline-throughput``: hours / E), and ``--traffic R`` requests/s at the baseline's
SLO capacity (``--from-sweep S.json`` or ``--baseline-capacity``): whole instances without speculation and
with an *assumed* speculative capacity of baseline capacity × E(α, B), labelled as such
(``economics.capacityroi.scaled_capacity``). B is ``--batch``, else the measured batch size nearest the
concurrency of the sweep's baseline capacity level."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.markup import escape

from specmeter.cli.common import console, fail, read_json_option
from specmeter.cli.roi_table import money, outcome_rows, print_roi_table

__all__ = ["CapacityAsk", "roi_from_whatif"]


@dataclass(frozen=True)
class CapacityAsk:
    """``--traffic`` with the baseline's capacity: from a sweep result or given (requests/s per instance)."""

    traffic: float
    sweep: Path | None
    baseline_capacity: float | None
    baseline_price: float
    spec_price: float
    engineering_cost: float
    horizon_months: float


def _read(path: Path) -> dict[str, Any]:
    from specmeter.report.validate import validate_whatif

    result = read_json_option(path, "--from-whatif")
    if isinstance(result, dict) and result.get("kind") == "whatif":
        problems = validate_whatif(result)  # every cell's α, k and B before the surface is read
        if problems:
            fail("\n".join(f"--from-whatif: {path}: {p}" for p in problems))
    if (
        not isinstance(result, dict)
        or result.get("kind") != "whatif"
        or not (result.get("whatif") or {}).get("cells")
    ):
        kind = result.get("kind") if isinstance(result, dict) else None
        fail(
            f"--from-whatif: {path} is not a whatif result with measured cells (kind {kind!r}); "
            "run specmeter whatif --json"
        )
    return result


def _batch(
    section: dict[str, Any], batch: int | None, path: Path, load: str | None = None
) -> tuple[int, str]:
    """(B, why): ``--batch``, else the measured B nearest the load's concurrency, else the only one."""
    from specmeter.economics.capacityroi import level_concurrency

    measured = sorted({int(c["batch"]) for c in section["cells"]})
    listed = ", ".join(map(str, measured))
    if batch is not None:
        if batch not in measured:
            fail(f"--batch {batch}: {path} was measured at B = {listed} only")
        return batch, "given with --batch"
    concurrency = level_concurrency(load)
    if concurrency is not None:
        b = min(measured, key=lambda m: (abs(m - concurrency), -m))  # a tie goes to the larger B
        how = "the same as" if b == concurrency else "the measured B nearest"
        return b, f"{how} the sweep's baseline capacity level {load}"
    if len(measured) > 1:
        fail(f"--batch: {path} was measured at B = {listed}; say which batch size your instances run at")
    return measured[0], "the only batch size measured"


def roi_from_whatif(
    path: Path,
    inputs: Any,
    *,
    alpha: float | None,
    k: int | None,
    batch: int | None,
    payback_months: float | None,
    json_out: Path | None,
    capacity: CapacityAsk | None = None,
) -> None:
    """Print (and write) the ROI at ``alpha`` and/or the α needed to pay back within ``payback_months``.

    ``inputs`` (RoiInputs, or None) prices monthly tokens; ``capacity`` (or None) sizes the fleet for a
    traffic at the baseline's capacity. At least one of them is given.
    """
    from specmeter.economics import compute_roi
    from specmeter.report.files import write_json_atomic
    from specmeter.selection.whatif import speedup_at

    section = _read(path)["whatif"]
    base = None if capacity is None else _baseline(capacity)
    b, batch_from = _batch(section, batch, path, None if base is None else base.baseline_load)
    if k is not None and k not in {int(c["k"]) for c in section["cells"]}:
        fail(f"--k {k}: {path} has no cells at k = {k}")
    out: dict[str, Any] = {"source": str(path), "batch": b, "batch_from": batch_from}
    if inputs is not None:
        out["inputs"] = dataclasses.asdict(inputs)
    if alpha is not None:
        got = speedup_at(section, alpha, b, k)
        if got is None:
            fail(
                f"--alpha {alpha:g}: {path} has fewer than two measured α at B = {b}; "
                "the surface cannot be read"
            )
        e, k_used, extrapolated = got
        if e <= 0:
            fail(f"--alpha {alpha:g}: the surface gives no positive speedup there")
        how = "extrapolated beyond the α measured" if extrapolated else "interpolated on the measured surface"
        point = {"alpha": alpha, "k": k_used, "speedup": e, "extrapolated": extrapolated}
        if inputs is not None:
            r = compute_roi(dataclasses.replace(inputs, speedup=e))
            _table(r, f"ROI at α {alpha:.2f} → E {e:.2f}× (k={k_used}, B={b}; {how})")
            out["at_alpha"] = {**point, **dataclasses.asdict(r)}
        if capacity is not None and base is not None:
            out["capacity"] = _capacity_at(capacity, base, point, b, batch_from, how)
    if payback_months is not None and inputs is not None:
        out["payback"] = _payback(section, inputs, payback_months, b, k)
    if payback_months is not None and capacity is not None and base is not None:
        out.setdefault("capacity", _capacity_facts(capacity, base, b, batch_from))
        out["capacity"]["payback"] = _capacity_payback(section, capacity, base, payback_months, b, k)
    if capacity is not None and base is not None:
        _say_assumption(capacity, base, b, batch_from)
    if json_out is not None:
        write_json_atomic(json_out, out)


def _payback(
    section: dict[str, Any], inputs: Any, payback_months: float, b: int, k: int | None
) -> dict[str, Any]:
    from specmeter.economics.roi import speedup_for_payback
    from specmeter.selection.whatif import alpha_for_speedup

    needed = speedup_for_payback(inputs, payback_months)
    found = None if needed is None else alpha_for_speedup(section, needed, b, k)
    cost = f"{inputs.engineering_cost:,.0f}"
    if needed is None:
        console.print(f"No speedup pays {cost} back within {payback_months:g} months: the whole baseline "
                      "bill is smaller than that.", style="bold red")  # fmt: skip
    elif found is None:
        console.print(f"Paying {cost} back within {payback_months:g} months needs E ≥ {needed:.2f}×, "
                      f"which no α reaches on this surface at B={b}.", style="bold red")  # fmt: skip
    else:
        a, k_used, extrapolated = found
        note = " (extrapolated beyond the α measured)" if extrapolated else ""
        console.print(f"To pay {cost} back within {payback_months:g} months a draft must reach "
                      f"α ≥ {a:.2f} (k={k_used}, B={b}: E ≥ {needed:.2f}×){note}.",
                      style="bold")  # fmt: skip
    return _payback_facts(payback_months, needed, found)


def _payback_facts(
    months: float, needed: float | None, found: tuple[float, int, bool] | None
) -> dict[str, Any]:
    """The JSON of a payback question: the E it needs and the α (k, extrapolated) that reaches it."""
    a, k_used, extrapolated = (None, None, None) if found is None else found
    return {"months": months, "speedup_needed": needed, "alpha_needed": a, "k": k_used,
            "extrapolated": extrapolated}  # fmt: skip


def _baseline(ask: CapacityAsk) -> Any:
    """The baseline's capacity (a SweepCapacity): read from ``--from-sweep`` or as ``--baseline-capacity``."""
    from specmeter.economics.capacityroi import SweepCapacity, sweep_baseline_capacity

    if ask.sweep is None:
        rps = float(ask.baseline_capacity or 0.0)
        return SweepCapacity(rps, rps, "", "given", None, None, None, None, None, "--baseline-capacity")
    from specmeter.cli.roi_sweep import read_sweep

    result = read_sweep(ask.sweep)
    try:
        return sweep_baseline_capacity(result, where=f"--from-sweep {ask.sweep}")
    except ValueError as e:
        fail(str(e))


def _capacity_facts(ask: CapacityAsk, base: Any, b: int, batch_from: str) -> dict[str, Any]:
    from specmeter.economics.capacityroi import SCALED_ASSUMPTION

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


def _baseline_words(ask: CapacityAsk, base: Any) -> str:
    if ask.sweep is None:
        return f"baseline capacity {base.baseline_rps:g} req/s per instance (--baseline-capacity)"
    where = f" at {base.baseline_load}" if base.baseline_load else ""
    how = f"within the SLO {base.slo}" if base.slo else f"capacity source {base.source}, no SLO"
    return (
        f"baseline capacity {base.baseline_rps:.2f} req/s per instance from {ask.sweep.name}{where} ({how})"
    )


def _capacity_at(
    ask: CapacityAsk, base: Any, point: dict[str, Any], b: int, batch_from: str, how: str
) -> dict[str, Any]:
    """Instances and money at ``ask.traffic`` with the assumed capacity baseline × E; printed and returned."""
    from specmeter.economics.capacityroi import TooManyInstances, capacity_roi, scaled_capacity

    e, alpha, k_used = point["speedup"], point["alpha"], point["k"]
    cap = scaled_capacity(
        base.baseline_rps, e, f"α={alpha:.2f}, k={k_used}, B={b}", baseline_load=base.baseline_load,
        slo=base.slo, measured=base.source,
    )  # fmt: skip
    try:
        r = capacity_roi(cap, ask.traffic, ask.baseline_price, ask.spec_price, ask.engineering_cost,
                         ask.horizon_months)  # fmt: skip
    except TooManyInstances as err:
        fail(str(err))
    except ValueError as err:
        fail(f"--{err}".replace("_", "-"))
    m = r.money
    rows = [
        ("requests/s per instance: baseline → speculative (assumed × E)",
         f"{cap.baseline_rps:.2f} → {cap.spec_rps:.2f}"),
        ("instances without → with", f"{r.instances_before} → {r.instances_after}"),
        ("monthly cost without speculation", money(m.cost_before)),
        ("monthly cost with it", money(m.cost_after)),
        ("GPU-time cost saved / month", money(m.gpu_time_saved)),
        ("extra memory cost / month (price delta)", money(m.extra_memory_cost)),
        *outcome_rows(m, ask.horizon_months),
    ]  # fmt: skip
    title = (f"Fleet at {ask.traffic:g} req/s, α {alpha:.2f} → E {e:.2f}× (k={k_used}, B={b}; {how}): "
             "speculative capacity ASSUMED = baseline × E")  # fmt: skip
    print_roi_table(title, rows, m, "At this α and traffic speculation costs more than it saves.")
    return {**_capacity_facts(ask, base, b, batch_from), **point, "speculative_capacity": cap.spec_rps,
            "instances_before": r.instances_before, "instances_after": r.instances_after,
            **dataclasses.asdict(m)}  # fmt: skip


def _say_assumption(ask: CapacityAsk, base: Any, b: int, batch_from: str) -> None:
    from specmeter.economics.capacityroi import SCALED_ASSUMPTION

    sizing = f"{_baseline_words(ask, base)}; B={b}: {batch_from}; instances = ⌈traffic / capacity⌉"
    warning = SCALED_ASSUMPTION + ": measure it with sweep once the draft exists"
    console.print(f"[dim]{escape(sizing)}[/]\n[yellow]{escape(warning)}[/]", soft_wrap=True)


def _capacity_payback(
    section: dict[str, Any], ask: CapacityAsk, base: Any, months: float, b: int, k: int | None
) -> dict[str, Any]:
    """The α whose assumed capacity (baseline × E) pays the engineering cost back within ``months``."""
    import math

    from specmeter.economics.capacityroi import speedup_for_capacity_payback
    from specmeter.selection.whatif import alpha_for_speedup

    try:
        needed = speedup_for_capacity_payback(base.baseline_rps, ask.traffic, ask.baseline_price,
                                              ask.spec_price, ask.engineering_cost, months)  # fmt: skip
    except ValueError as err:  # TooManyInstances: the baseline's capacity is absurd for --traffic
        fail(str(err))
    found = None if needed is None else alpha_for_speedup(section, needed, b, k)
    cost = f"{ask.engineering_cost:,.0f}"
    before = math.ceil(ask.traffic / base.baseline_rps)
    at = f"at {ask.traffic:g} req/s ({before} baseline instances)"
    if needed is None:
        console.print(f"No speedup pays {cost} back within {months:g} months {at}: even one speculative "
                      "instance costs too much.", style="bold red")  # fmt: skip
    elif found is None:
        console.print(f"Paying {cost} back within {months:g} months {at} needs E ≥ {needed:.2f}× (assumed "
                      f"capacity × E), which no α reaches on this surface at B={b}.",
                      style="bold red")  # fmt: skip
    else:
        a, k_used, extrapolated = found
        note = " (extrapolated beyond the α measured)" if extrapolated else ""
        after = math.ceil(ask.traffic / (base.baseline_rps * needed)) if needed > 0 else None
        fleet = f", {after} instances" if after is not None else ""
        console.print(f"To pay {cost} back within {months:g} months {at} a draft must reach α ≥ {a:.2f} "
                      f"(k={k_used}, B={b}: E ≥ {needed:.2f}×{fleet}; assuming capacity scales with E)"
                      f"{note}.", style="bold")  # fmt: skip
    return _payback_facts(months, needed, found)


def _table(r: Any, title: str) -> None:
    rows = [
        ("instance-hours / month without → with", f"{r.hours_before:,.1f} → {r.hours_after:,.1f}"),
        ("monthly cost without speculation", money(r.cost_before)),
        ("monthly cost with it", money(r.cost_after)),
        *outcome_rows(r, r.inputs.horizon_months),
    ]
    print_roi_table(title, rows, r, "At this α speculation costs more than it saves at these prices.")
