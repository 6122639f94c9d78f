"""The console view of ``specmeter doctor`` (``hygiene.doctor.diagnose``): one row per check with its
finding and advice, then one line saying whether the machine is ready to measure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["render_doctor"]

_STYLE = {"ok": "green", "info": "cyan", "warn": "bold yellow", "bad": "bold red"}


def render_doctor(report: Mapping[str, Any], console: Console) -> None:
    table = Table(title="specmeter doctor", title_justify="left", title_style="bold")
    for column in ("check", "", "finding", "advice"):
        table.add_column(column)
    for c in report["checks"]:
        table.add_row(
            c["name"], Text(c["status"], style=_STYLE[c["status"]]), Text(c["finding"]), Text(c["advice"])
        )
    console.print(table)
    style = {"ready": "bold green", "warnings": "bold yellow", "not ready": "bold red"}[report["status"]]
    advice = [c for c in report["checks"] if c["status"] in ("warn", "bad")]
    summary = (
        "ready to measure"
        if not advice
        else f"{len(advice)} thing(s) to fix before measuring: "
        + "; ".join(c["advice"] or c["finding"] for c in advice)
    )
    console.print(Text(f"Doctor: {summary}.", style=style), soft_wrap=True)
