"""The console view of a sweep: the E_meas(k, level) matrix, the cells' figures, drift, best k, the schedule,
its validation and the SLO capacity; everything from the result's ``sweep`` section (so a saved sweep
renders the same)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from specmeter.load.view import slow_start_line

__all__ = ["render_sweep"]

DASH = "—"


def _f(value: Any, digits: int = 2) -> str:
    return DASH if not isinstance(value, int | float) else f"{value:.{digits}f}"


def _e(value: Any, ci: Sequence[float] | None) -> str:
    if not isinstance(value, int | float):
        return DASH
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.2f}"


def _pct(block: Mapping[str, Any] | None) -> str:
    if not block:
        return DASH
    return f"{_f(block.get('p50'), 1)} / {_f(block.get('p99'), 1)}"


def render_sweep(result: Mapping[str, Any], console: Console) -> None:
    section = result.get("sweep") or {}
    cells: list[Mapping[str, Any]] = section.get("cells") or []
    levels: list[str] = section.get("levels") or []
    runs = [r for r in dict.fromkeys(c["run"] for c in cells) if r != "k=0"]
    matrix = Table(
        title="E_meas(k, level) — paired over the same requests, drift in the interval", title_justify="left"
    )
    matrix.add_column("level")
    for run in runs:
        matrix.add_column(run, justify="right")
    matrix.add_column("best k", justify="right")
    best = {b["level"]: b for b in section.get("best") or []}
    for level in levels:
        row = [level]
        for run in runs:
            cell = next((c for c in cells if c["run"] == run and c["level"] == level), None)
            row.append(DASH if cell is None else _e(cell.get("e"), cell.get("e_ci")))
        b = best.get(level)
        row.append(DASH if b is None else f"{b['k']}" + ("" if b.get("sure") else " (not sure)"))
        matrix.add_row(*row)
    console.print(matrix)

    figures = Table(title="Per cell (ms: p50 / p99)", title_justify="left")
    for name in (
        "config",
        "level",
        "α",
        "τ",
        "TTFT",
        "TPOT",
        "chunk gap",
        "stalls",
        "req/s",
        "held",
        "counters",
    ):
        figures.add_column(name, justify="left" if name in ("config", "level") else "right")
    judged = any(c.get("slo") for c in cells)
    if judged:
        figures.add_column("SLO met [95% CI]", justify="right")
        figures.add_column("goodput req/s", justify="right")
    for c in cells:
        counters = c.get("counters") or {}
        equal = counters.get("equal")
        row = [
            c["run"], c["level"], _f(c.get("alpha")), _f(c.get("tau")), _pct(c.get("ttft_ms")),
            _pct(c.get("tpot_ms")), _pct(c.get("gap_ms")), _f(c.get("stalls"), 0),
            _f(c.get("requests_per_s")), _f(c.get("effective_concurrency"), 1),
            DASH if equal is None else ("= server" if equal else "≠ server"),
        ]  # fmt: skip
        if judged:
            row += _slo_cells(c.get("slo") or {})
        figures.add_row(*row)
    console.print(figures)

    for c in cells:
        line = slow_start_line({"slow_start": c.get("slow_start")})
        if line is not None:
            console.print(
                f"[yellow]{escape(c['run'])} at {escape(c['level'])}: {escape(line)}[/]", soft_wrap=True
            )
    for d in section.get("drift") or []:
        console.print(
            f"baseline drift at {d['level']}: first run ÷ last run = "
            f"{_e(d.get('first_over_end'), d.get('ci'))} "
            "(1 = no drift; in every cell's interval)"
        )
    if not section.get("drift"):
        console.print(escape(str(section.get("drift_note") or "")))
    if section.get("crossover"):
        console.print(f"crossover: from {section['crossover']} on, no k beats k = 0")
    schedule = section.get("schedule")
    if schedule:
        console.print(f"schedule: {escape(schedule['describe'])}")
        console.print(f"  serve {escape(schedule['serve'])}")
        console.print(
            "  vLLM --speculative-config " + escape(_json(schedule["speculative_config"])), soft_wrap=True
        )
        if schedule.get("validated"):
            console.print(
                f"  (--validate launched {_json(schedule['validated'])}, the schedule before the last "
                "baseline run; with both baseline runs in E the best k moved)",
                soft_wrap=True,
            )
    validate = section.get("validate")
    if validate:
        _render_validate(validate, console)
    capacity = section.get("capacity")
    if capacity and capacity.get("headline"):
        console.print(f"[bold]{escape(capacity['headline'])}[/]", soft_wrap=True)


def _slo_cells(slo: Mapping[str, Any]) -> list[str]:
    share = (slo.get("attainment") or {}).get("share")
    ci = (slo.get("attainment") or {}).get("ci")
    met = DASH if share is None else f"{share:.0%}" + (f" [{ci[0]:.0%}, {ci[1]:.0%}]" if ci else "")
    return [met, _f((slo.get("goodput") or {}).get("requests_per_s"))]


def _render_validate(validate: Mapping[str, Any], console: Console) -> None:
    table = Table(title="Validation: the schedule's own server vs the best static k", title_justify="left")
    for name in ("level", "k (schedule)", "E (schedule)", "best static", "E (best static)", ""):
        table.add_column(name, justify="right")
    for r in validate.get("levels") or []:
        table.add_row(
            r["level"], str(r["k_scheduled"]), _e(r.get("e"), r.get("e_ci")),
            DASH if r.get("best_static_k") is None
            else f"k={r['best_static_k']}" + (" (interpolated)" if r.get("best_static_interpolated") else ""),
            _e(r.get("best_static_e"), r.get("best_static_e_ci")),
            "[bold red]below[/]" if r.get("below_best_static") else "",
        )  # fmt: skip
    console.print(table)
    if validate.get("error"):
        console.print(f"[bold red]validate:[/] {escape(validate['error'])}", soft_wrap=True)
    elif validate.get("collapse"):
        console.print(
            "[bold red]The schedule falls below the best static k at "
            + ", ".join(validate["collapse"])
            + "[/]"
        )


def _json(value: Any) -> str:
    import json

    return json.dumps(value)
