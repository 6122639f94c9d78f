"""The console view of ``specmeter runs list``: one row per stored run, newest first, with its best
measured speedup, whether anything fell in the danger zone, and what the machine was doing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from specmeter.store.db import RunInfo

__all__ = ["render_runs"]


def render_runs(
    runs: Sequence[RunInfo], results: Mapping[int, Mapping[str, Any]], store: Path, console: Console
) -> None:
    """The listing of ``runs`` (their result dicts in ``results``, by id) in the store at ``store``."""
    if not runs:
        console.print(f"No runs in {store}.")
        return
    table = Table(title=f"runs in {store}", title_justify="left")
    for column in ("id", "status", "kind", "started (UTC)", "reqs", "best E", "α", "machine"):
        table.add_column(column, no_wrap=column not in ("kind", "started (UTC)"))
    table.add_column("target ← drafts · note", overflow="fold", ratio=1)
    for r in runs:
        e_best, alpha, danger = _best(results[r.id])
        status = Text(r.status, style="yellow" if r.status == "partial" else "green")
        e_text = Text(e_best + (" ⚠" if danger else ""), style="bold red" if danger else "")
        started = r.started_at.replace("T", " ")[:16]
        label = Text(r.label + (f" · {r.note}" if r.note else ""))
        hygiene = results[r.id].get("hygiene")  # a stored row of another shape: no verdict
        machine = str((hygiene.get("verdict") if isinstance(hygiene, Mapping) else None) or "—")
        m_text = Text(machine, style={"busy": "bold yellow", "unusable": "bold red"}.get(machine, ""))
        table.add_row(str(r.id), status, r.kind, started, str(r.requests), e_text, alpha, m_text, label)
    console.print(table)
    console.print(
        "⚠ = a candidate or category in the danger zone (α < 0.5 or E_meas < 1); machine = what else ran "
        "during the run (quiet / busy / unusable, docs/metrics.md)",
        style="dim",
    )


def _best(result: Mapping[str, Any]) -> tuple[str, str, bool]:
    """(best E_meas, its α, any danger) for the listing."""
    from specmeter.report.fmt import DASH, as_float, fmt_num, fmt_speedup

    best: tuple[float, Any] | None = None
    danger = False
    candidates = result.get("candidates")
    for c in candidates if isinstance(candidates, list) else []:  # a stored row of another shape: no best
        s = c.get("summary") if isinstance(c, Mapping) else None
        if not isinstance(s, Mapping):
            continue
        danger = danger or s.get("danger_zone") is True
        e = as_float(s.get("speedup_measured"))
        if e is not None and (best is None or e > best[0]):
            best = (e, s)
    if best is None:
        return DASH, DASH, danger
    return fmt_speedup(best[0]), fmt_num(best[1].get("acceptance_rate"), 3), danger
