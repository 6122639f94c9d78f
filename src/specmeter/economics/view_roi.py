"""The console views of ``roi``: one wording for an amount, an ROI and a payback, and the tables.

The rows an ROI table ends with (monthly savings, the change in monthly cost, ROI over the horizon,
payback) are the same whichever way the hours before and after were found: from a speedup
(:func:`render_roi`), from a sweep's measured capacity (:func:`render_sweep_roi`) or from the what-if
surface (``selection.view_whatif_roi``).
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specmeter.economics.capacityroi import CapacityRoi
from specmeter.economics.roi import Money, RoiResult

__all__ = [
    "DASH",
    "money",
    "outcome_rows",
    "payback_cell",
    "render_roi",
    "render_sweep_roi",
    "roi_cell",
    "roi_table",
]

DASH = "—"


def money(x: float) -> str:
    return f"{x:,.2f}"


def roi_cell(roi: float | None) -> str:
    return DASH if roi is None else f"{roi:.2f}"


def payback_cell(months: float | None) -> str:
    """``never`` (no savings), ``immediate`` (savings and no engineering cost: docs/economics.md), else
    the months."""
    if months is None:
        return "never"
    return "immediate" if months == 0 else f"{months:.1f} months"


def outcome_rows(r: Money | RoiResult, horizon_months: float) -> list[tuple[str, str]]:
    """Monthly savings, change in monthly cost, ROI over the horizon and payback of one priced outcome."""
    change = DASH if r.savings_fraction is None else f"{-r.savings_fraction:+.1%}"
    return [
        ("monthly savings", money(r.monthly_savings)),
        ("change in monthly cost", change),
        (f"ROI over {horizon_months:g} months", roi_cell(r.roi)),
        ("payback", payback_cell(r.payback_months)),
    ]


def roi_table(
    console: Console, title: str, rows: list[tuple[str, str]], r: Money | RoiResult, loss: str
) -> None:
    """A two-column table (figure, value), then ``loss`` in red when speculation saves nothing."""
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    if r.monthly_savings <= 0:
        console.print(f"[bold red]{loss}[/]")


def render_roi(r: RoiResult, source: str, console: Console) -> None:
    """``roi`` from a speedup (a run's E_meas or ``--speedup``; ``source`` says which)."""
    rows = [
        ("instance-hours / month before → after", f"{r.hours_before:,.1f} → {r.hours_after:,.1f}"),
        ("average instances before → after", f"{r.instances_before:,.2f} → {r.instances_after:,.2f}"),
        ("monthly cost before", money(r.cost_before)),
        ("monthly cost after", money(r.cost_after)),
        ("GPU-time cost saved / month", money(r.gpu_time_saved)),
        ("extra memory cost / month (price delta)", money(r.extra_memory_cost)),
        *outcome_rows(r, r.inputs.horizon_months),
    ]
    loss = "Speculation costs more than it saves at these prices."
    roi_table(console, f"ROI at {r.inputs.speedup:.2f}× ({source})", rows, r, loss)


def render_sweep_roi(r: CapacityRoi, name: str, console: Console) -> None:
    """``roi --from-sweep``: the measured capacity's instances and money beside today's batch-1 figure;
    ``name`` is the sweep result's file name."""
    m, b, cap = r.money, r.batch1_money, r.capacity
    measured = f"measured capacity ({cap.spec_run})"
    batch1 = f"batch-1 E ({cap.batch1_level})" if cap.batch1_e is not None else "batch-1 E"
    table = Table(title=f"ROI at {r.traffic:g} req/s from {name}", title_justify="left")
    table.add_column("", style="bold")
    table.add_column(measured, justify="right")
    table.add_column(batch1, justify="right")
    rows = [
        ("requests/s per instance: baseline → speculative",
         f"{cap.baseline_rps:.2f} → {cap.spec_rps:.2f}",
         DASH if cap.batch1_e is None else f"{cap.baseline_rps:.2f} → {cap.baseline_rps * cap.batch1_e:.2f}"),
        ("instances before → after", f"{r.instances_before} → {r.instances_after}",
         DASH if r.batch1_instances_after is None else f"{r.instances_before} → {r.batch1_instances_after}"),
        ("monthly cost before", money(m.cost_before), DASH if b is None else money(b.cost_before)),
        ("monthly cost after", money(m.cost_after), DASH if b is None else money(b.cost_after)),
        ("GPU-time cost saved / month", money(m.gpu_time_saved),
         DASH if b is None else money(b.gpu_time_saved)),
        ("extra memory cost / month (price delta)", money(m.extra_memory_cost),
         DASH if b is None else money(b.extra_memory_cost)),
        ("monthly savings", money(m.monthly_savings), DASH if b is None else money(b.monthly_savings)),
        (f"ROI over {r.horizon_months:g} months", roi_cell(m.roi), DASH if b is None else roi_cell(b.roi)),
        ("payback", payback_cell(m.payback_months), DASH if b is None else payback_cell(b.payback_months)),
    ]  # fmt: skip
    for row in rows:
        table.add_row(*row)
    console.print(table)
    where = f" at {cap.spec_load}" if cap.spec_load else ""
    console.print(
        f"[dim]measured: instances = ⌈traffic / capacity⌉, capacity{where} = "
        + escape(cap.assumption or cap.source)
        + (f"; SLO {escape(cap.slo)}" if cap.slo else "")
        + "[/]",
        soft_wrap=True,
    )
    if cap.batch1_e is not None:
        console.print(
            f"[dim]batch-1: assumes E = {cap.batch1_e:.2f} (the best k at {cap.batch1_level}) holds at the "
            "fleet's load, as roi --speedup does, ignoring what load does to latency and speedup[/]",
            soft_wrap=True,
        )
    if m.monthly_savings <= 0:
        console.print(
            "[bold red]At the measured capacity, speculation costs more than it saves at these prices.[/]"
        )
