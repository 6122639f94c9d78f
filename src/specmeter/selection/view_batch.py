"""Console view of the batched sections: the E(B, k) table with the schedule (tune --batch) and measured
against predicted at batch B (bench --batch). Works from the result dict alone."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from specmeter.metrics.records import run_label
from specmeter.report.fmt import fmt_ms, fmt_pct, fmt_speedup

_GOOD, _BAD = "bold green", "bold red"


def _surface_table(surface: Mapping[str, Any]) -> Table:
    table = Table(
        title="cost surface t_step(B, k) (ms, median; timed in the loop's rhythm)",
        title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1),
    )  # fmt: skip
    ks = sorted({p["k"] for p in surface["points"]})
    table.add_column("B", justify="right")
    for k in ks:
        table.add_column(f"k={k}", justify="right")
    table.add_column("t_D(B,1)", justify="right")
    by = {(p["batch"], p["k"]): p for p in surface["points"]}
    for entry in surface["by_batch"]:
        b = entry["batch"]
        cells = []
        for k in ks:
            p = by.get((b, k))
            text = "—" if p is None else fmt_ms(p["step_ms"])
            cells.append(Text(text + ("!" if p is not None and p["noisy"] else "")))
        table.add_row(str(b), *cells, fmt_ms(entry["draft_ms"]))
    caption = "t_step = k draft forwards + one target forward over B·(k+1) tokens + the loop's bookkeeping"
    if surface.get("noisy"):
        caption += "\n! NOISY: the step's spread exceeds 25% of its median; measure on a quiet machine"
    table.caption = caption
    return table


def render_batch_tune(section: Mapping[str, Any], console: Console) -> None:
    console.print(_surface_table(section["surface"]))
    table = Table(
        title=f"E(B, k) predicted (τ(k) from the k={section['source_k']} run; k=0: plain decoding)",
        title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1),
    )  # fmt: skip
    rows = section["table"]
    ks = [r["k"] for r in rows[0]["by_k"]] if rows else []
    table.add_column("B", justify="right")
    for k in ks:
        table.add_column(f"k={k}", justify="right")
    table.add_column("best k", justify="right")
    for r in rows:
        cells = []
        for cell in r["by_k"]:
            e = cell["speedup_predicted"]
            style = "bold" if cell["k"] == r["best_k"] else ""
            cells.append(Text(fmt_speedup(e), style=style))
        style = _GOOD if r["best_k"] > 0 else _BAD
        table.add_row(str(r["batch"]), *cells, Text(str(r["best_k"]), style=style))
    table.caption = section["assumes"]
    console.print(table)
    crossover = section.get("crossover_batch")
    if crossover is None:
        console.print("Speculation pays at every batch size measured.")
    else:
        console.print(f"Speculation stops paying at batch size {crossover} (best k = 0 from there on).")
    console.print(f"Schedule: {section['schedule_description']}")
    if section.get("agreement"):
        console.print(f"Batch 1: {section['agreement']}", soft_wrap=True)
    console.print(f"  serve:  --k-schedule '{section['serve_k_schedule']}'")

    console.print(
        f"  vLLM:   --speculative-config '{json.dumps(section['speculative_config'])}'", soft_wrap=True
    )


def render_batch_bench(section: Mapping[str, Any], console: Console) -> None:
    b = section["batch"]
    table = Table(
        title=f"decode-only E at batch size {b}: measured (waves of {b}) vs predicted from the cost surface",
        title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1),
    )  # fmt: skip
    for column in ("candidate", "τ", "E_meas", "95% CI", "E_pred (waves)", "error", "E(B,k) steady"):
        table.add_column(column, justify="right")
    for r in section["candidates"]:
        ci = r.get("speedup_measured_decode_ci")
        e = r.get("speedup_measured_decode")
        style = "" if e is None else (_GOOD if e >= 1.0 else _BAD)
        table.add_row(
            run_label(r["draft"], r["k"]),
            "—" if r["acceptance_length"] is None else f"{r['acceptance_length']:.2f}",
            Text(fmt_speedup(e), style=style),
            "—" if not ci else f"{fmt_speedup(ci[0])}–{fmt_speedup(ci[1])}",
            fmt_speedup(r.get("speedup_predicted_waves")),
            fmt_pct(r.get("error")),
            fmt_speedup(r.get("speedup_predicted")),
        )
    table.caption = f"{section['waves']}.\n{section['assumes']}."
    console.print(table)
    for name, surface in section.get("surfaces", {}).items():
        console.print(f"[bold]{name}[/]")
        console.print(_surface_table(surface))
