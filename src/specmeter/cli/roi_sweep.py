"""``roi --from-sweep sweep.json --traffic R``: instances and money at the sweep's measured capacity, beside
today's batch-1 figure (``economics.capacityroi``)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from specmeter.cli.common import check_range, console, fail

__all__ = ["roi_from_sweep"]

OPTIONS = {
    "traffic": "--traffic",
    "baseline_price": "--price-baseline",
    "spec_price": "--price-speculative",
    "engineering_cost": "--engineering-cost",
    "horizon_months": "--horizon-months",
}


def roi_from_sweep(
    path: Path,
    traffic: float,
    baseline_price: float,
    spec_price: float | None,
    engineering_cost: float,
    horizon_months: float,
    json_out: Path | None,
) -> None:
    from specmeter.economics.capacityroi import capacity_roi, sweep_capacity
    from specmeter.report.files import write_json_atomic

    check_range("--traffic", traffic, low=0, low_open=True)
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        fail(f"--from-sweep: {path}: unreadable ({e})")
    except json.JSONDecodeError as e:
        fail(f"--from-sweep: {path}: not JSON ({e.msg} at line {e.lineno})")
    if not isinstance(result, dict):
        fail(f"--from-sweep: {path}: not a result object")
    try:
        capacity = sweep_capacity(result, where=str(path))
        r = capacity_roi(
            capacity, traffic, baseline_price, baseline_price if spec_price is None else spec_price,
            engineering_cost, horizon_months,
        )  # fmt: skip
    except ValueError as e:
        message = str(e)
        field = message.split(" ")[0]
        fail(f"{OPTIONS[field]} {message.removeprefix(field).strip()}" if field in OPTIONS else message)

    def money(x: float) -> str:
        return f"{x:,.2f}"

    m, b = r.money, r.batch1_money
    cap = capacity
    measured = f"measured capacity ({cap.spec_run})"
    batch1 = f"batch-1 E ({cap.batch1_level})" if cap.batch1_e is not None else "batch-1 E"
    table = Table(title=f"ROI at {traffic:g} req/s from {path.name}", title_justify="left")
    table.add_column("", style="bold")
    table.add_column(measured, justify="right")
    table.add_column(batch1, justify="right")
    dash = "—"
    rows = [
        ("requests/s per instance: baseline → speculative",
         f"{cap.baseline_rps:.2f} → {cap.spec_rps:.2f}",
         dash if cap.batch1_e is None else f"{cap.baseline_rps:.2f} → {cap.baseline_rps * cap.batch1_e:.2f}"),
        ("instances before → after", f"{r.instances_before} → {r.instances_after}",
         dash if r.batch1_instances_after is None else f"{r.instances_before} → {r.batch1_instances_after}"),
        ("monthly cost before", money(m.cost_before), dash if b is None else money(b.cost_before)),
        ("monthly cost after", money(m.cost_after), dash if b is None else money(b.cost_after)),
        ("GPU-time cost saved / month", money(m.gpu_time_saved),
         dash if b is None else money(b.gpu_time_saved)),
        ("extra memory cost / month (price delta)", money(m.extra_memory_cost),
         dash if b is None else money(b.extra_memory_cost)),
        ("monthly savings", money(m.monthly_savings), dash if b is None else money(b.monthly_savings)),
        (f"ROI over {horizon_months:g} months", dash if m.roi is None else f"{m.roi:.2f}",
         dash if b is None or b.roi is None else f"{b.roi:.2f}"),
        ("payback", "never" if m.payback_months is None else f"{m.payback_months:.1f} months",
         dash if b is None else "never" if b.payback_months is None else f"{b.payback_months:.1f} months"),
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
    if json_out is not None:
        write_json_atomic(json_out, r.to_dict())
