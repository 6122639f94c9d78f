"""The console view of ``roi --from-whatif`` (``selection.whatif_roi``): the ROI at α, the fleet at a
traffic with its assumed capacity, the α a payback needs, and the assumption the fleet rests on."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from specmeter.economics.capacityroi import SCALED_ASSUMPTION
from specmeter.economics.view_roi import money, outcome_rows, roi_table
from specmeter.selection.whatif_roi import Payback, WhatifRoi

__all__ = ["render_whatif_roi"]


def render_whatif_roi(w: WhatifRoi, console: Console) -> None:
    b = w.batch
    if w.alpha_from is not None:
        src = w.alpha_from
        pooled = "—" if src["alpha_pooled"] is None else f"{src['alpha_pooled']:.3f}"
        console.print(
            f"α {src['alpha']:.3f} from {escape(src['candidate'])} in {escape(src['from'])} ({src['kind']}, "
            f"{src['requests']} requests): the full-draft α of its per-position acceptance at k={src['k']}, "
            f"(τ(k) − 1)/k; its pooled A/D is {pooled}",
            soft_wrap=True,
        )
    if w.point is not None:
        alpha, e, k_used = w.point["alpha"], w.point["speedup"], w.point["k"]
        if w.roi is not None:
            r = w.roi
            rows = [
                ("instance-hours / month without → with", f"{r.hours_before:,.1f} → {r.hours_after:,.1f}"),
                ("monthly cost without speculation", money(r.cost_before)),
                ("monthly cost with it", money(r.cost_after)),
                *outcome_rows(r, r.inputs.horizon_months),
            ]
            title = f"ROI at α {alpha:.2f} → E {e:.2f}× (k={k_used}, B={b}; {w.how})"
            roi_table(
                console, title, rows, r, "At this α speculation costs more than it saves at these prices."
            )
        if w.fleet is not None:
            f, m, cap = w.fleet, w.fleet.money, w.fleet.capacity
            rows = [
                ("requests/s per instance: baseline → speculative (assumed × E)",
                 f"{cap.baseline_rps:.2f} → {cap.spec_rps:.2f}"),
                ("instances without → with", f"{f.instances_before} → {f.instances_after}"),
                ("monthly cost without speculation", money(m.cost_before)),
                ("monthly cost with it", money(m.cost_after)),
                ("GPU-time cost saved / month", money(m.gpu_time_saved)),
                ("extra memory cost / month (price delta)", money(m.extra_memory_cost)),
                *outcome_rows(m, f.horizon_months),
            ]  # fmt: skip
            title = (f"Fleet at {f.traffic:g} req/s, α {alpha:.2f} → E {e:.2f}× (k={k_used}, B={b}; "
                     f"{w.how}): speculative capacity ASSUMED = baseline × E")  # fmt: skip
            roi_table(console, title, rows, m, "At this α and traffic speculation costs more than it saves.")
    if w.payback is not None:
        _payback(w.payback, b, console)
    if w.fleet_payback is not None:
        _fleet_payback(w, w.fleet_payback, console)
    if w.ask is not None and w.base is not None:
        sizing = f"{_baseline_words(w)}; B={b}: {w.batch_from}; instances = ⌈traffic / capacity⌉"
        warning = SCALED_ASSUMPTION + ": measure it with sweep once the draft exists"
        console.print(f"[dim]{escape(sizing)}[/]\n[yellow]{escape(warning)}[/]", soft_wrap=True)


def _payback(p: Payback, b: int, console: Console) -> None:
    cost, months = f"{p.engineering_cost:,.0f}", p.months
    if p.needed is None:
        console.print(f"No speedup pays {cost} back within {months:g} months: the whole baseline "
                      "bill is smaller than that.", style="bold red")  # fmt: skip
    elif p.found is None:
        console.print(f"Paying {cost} back within {months:g} months needs E ≥ {p.needed:.2f}×, "
                      f"which no α reaches on this surface at B={b}.", style="bold red")  # fmt: skip
    else:
        a, k_used, extrapolated = p.found
        note = " (extrapolated beyond the α measured)" if extrapolated else ""
        console.print(f"To pay {cost} back within {months:g} months a draft must reach "
                      f"α ≥ {a:.2f} (k={k_used}, B={b}: E ≥ {p.needed:.2f}×){note}.",
                      style="bold")  # fmt: skip


def _fleet_payback(w: WhatifRoi, p: Payback, console: Console) -> None:
    assert w.ask is not None and p.instances is not None
    cost, months, b = f"{p.engineering_cost:,.0f}", p.months, w.batch
    before, after = p.instances
    at = f"at {w.ask.traffic:g} req/s ({before} baseline instances)"
    if p.needed is None:
        console.print(f"No speedup pays {cost} back within {months:g} months {at}: even one speculative "
                      "instance costs too much.", style="bold red")  # fmt: skip
    elif p.found is None:
        console.print(f"Paying {cost} back within {months:g} months {at} needs E ≥ {p.needed:.2f}× (assumed "
                      f"capacity × E), which no α reaches on this surface at B={b}.",
                      style="bold red")  # fmt: skip
    else:
        a, k_used, extrapolated = p.found
        note = " (extrapolated beyond the α measured)" if extrapolated else ""
        fleet = f", {after} instances" if after is not None else ""
        console.print(f"To pay {cost} back within {months:g} months {at} a draft must reach α ≥ {a:.2f} "
                      f"(k={k_used}, B={b}: E ≥ {p.needed:.2f}×{fleet}; assuming capacity scales with E)"
                      f"{note}.", style="bold")  # fmt: skip


def _baseline_words(w: WhatifRoi) -> str:
    ask, base = w.ask, w.base
    assert ask is not None and base is not None
    if ask.sweep is None:
        return f"baseline capacity {base.baseline_rps:g} req/s per instance (--baseline-capacity)"
    where = f" at {base.baseline_load}" if base.baseline_load else ""
    how = f"within the SLO {base.slo}" if base.slo else f"capacity source {base.source}, no SLO"
    return (
        f"baseline capacity {base.baseline_rps:.2f} req/s per instance from {ask.sweep.name}{where} ({how})"
    )
