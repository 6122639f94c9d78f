"""``roi --from-sweep sweep.json --traffic R``: instances and money at the sweep's measured capacity, beside
today's batch-1 figure (``economics.capacityroi``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from specmeter.cli.common import check_range, console, fail, read_json_option
from specmeter.cli.roi_table import DASH, money, payback_cell, roi_cell
from specmeter.safetext import markup

__all__ = ["read_sweep", "roi_from_sweep"]

OPTIONS = {
    "traffic": "--traffic",
    "baseline_price": "--price-baseline",
    "spec_price": "--price-speculative",
    "engineering_cost": "--engineering-cost",
    "horizon_months": "--horizon-months",
}


def read_sweep(path: Path) -> dict[str, Any]:
    """``--from-sweep``'s result file, checked against the sweep section's schema (one line per problem)."""
    from specmeter.report.validate import validate_sweep

    result = read_json_option(path, "--from-sweep")
    if not isinstance(result, dict):
        fail(f"--from-sweep: {path}: not a result object")
    problems = validate_sweep(result)
    if problems:
        fail("\n".join(f"--from-sweep: {path}: {p}" for p in problems))
    return result


def roi_from_sweep(
    path: Path,
    traffic: float,
    baseline_price: float,
    spec_price: float | None,
    engineering_cost: float,
    horizon_months: float,
    json_out: Path | None,
) -> None:
    from specmeter.economics.capacityroi import TooManyInstances, capacity_roi, sweep_capacity
    from specmeter.report.files import write_json_atomic

    check_range("--traffic", traffic, low=0, low_open=True)
    result = read_sweep(path)
    try:
        capacity = sweep_capacity(result, where=str(path))
        r = capacity_roi(
            capacity, traffic, baseline_price, baseline_price if spec_price is None else spec_price,
            engineering_cost, horizon_months,
        )  # fmt: skip
    except TooManyInstances as e:
        fail(f"--from-sweep: {path}: {e}")
    except ValueError as e:
        message = str(e)
        field = message.split(" ")[0]
        fail(f"{OPTIONS[field]} {message.removeprefix(field).strip()}" if field in OPTIONS else message)

    m, b = r.money, r.batch1_money
    cap = capacity
    measured = f"measured capacity ({cap.spec_run})"
    batch1 = f"batch-1 E ({cap.batch1_level})" if cap.batch1_e is not None else "batch-1 E"
    table = Table(title=f"ROI at {traffic:g} req/s from {path.name}", title_justify="left")
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
        (f"ROI over {horizon_months:g} months", roi_cell(m.roi), DASH if b is None else roi_cell(b.roi)),
        ("payback", payback_cell(m.payback_months), DASH if b is None else payback_cell(b.payback_months)),
    ]  # fmt: skip
    for row in rows:
        table.add_row(*row)
    console.print(table)
    where = f" at {markup(cap.spec_load)}" if cap.spec_load else ""
    console.print(
        f"[dim]measured: instances = ⌈traffic / capacity⌉, capacity{where} = "
        + escape(cap.assumption or cap.source)
        + (f"; SLO {escape(cap.slo)}" if cap.slo else "")
        + "[/]",
        soft_wrap=True,
    )
    if cap.batch1_e is not None:
        console.print(
            f"[dim]batch-1: assumes E = {cap.batch1_e:.2f} (the best k at {markup(cap.batch1_level)}) holds "
            "at the fleet's load, as roi --speedup does, ignoring what load does to latency and speedup[/]",
            soft_wrap=True,
        )
    if m.monthly_savings <= 0:
        console.print(
            "[bold red]At the measured capacity, speculation costs more than it saves at these prices.[/]"
        )
    if json_out is not None:
        write_json_atomic(json_out, r.to_dict())
