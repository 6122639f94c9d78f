"""The money cells and rows every ``roi`` table shares (from a run, ``--from-sweep``, ``--from-whatif``).

One wording for an amount, an ROI and a payback, and the rows an ROI table ends with (monthly savings, the
change in monthly cost, ROI over the horizon, payback), whichever way the hours before and after were found.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from specmeter.cli.common import console

if TYPE_CHECKING:
    from specmeter.economics.roi import Money, RoiResult

__all__ = ["DASH", "money", "outcome_rows", "payback_cell", "print_roi_table", "roi_cell"]

DASH = "—"


def money(x: float) -> str:
    return f"{x:,.2f}"


def roi_cell(roi: float | None) -> str:
    return DASH if roi is None else f"{roi:.2f}"


def payback_cell(months: float | None) -> str:
    return "never" if months is None else f"{months:.1f} months"


def outcome_rows(r: Money | RoiResult, horizon_months: float) -> list[tuple[str, str]]:
    """Monthly savings, change in monthly cost, ROI over the horizon and payback of one priced outcome."""
    change = DASH if r.savings_fraction is None else f"{-r.savings_fraction:+.1%}"
    return [
        ("monthly savings", money(r.monthly_savings)),
        ("change in monthly cost", change),
        (f"ROI over {horizon_months:g} months", roi_cell(r.roi)),
        ("payback", payback_cell(r.payback_months)),
    ]


def print_roi_table(title: str, rows: list[tuple[str, str]], r: Money | RoiResult, loss: str) -> None:
    """A two-column table (figure, value), then ``loss`` in red when speculation saves nothing."""
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for key, value in rows:
        table.add_row(key, value)
    console.print(table)
    if r.monthly_savings <= 0:
        console.print(f"[bold red]{loss}[/]")
