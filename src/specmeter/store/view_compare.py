"""The console view of ``specmeter compare``: per candidate and category, A, B, B − A with its interval and
whether the change is significant; the banner when the runs are not comparable; the ``--fail-on`` gate."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from specmeter.report.fmt import DASH
from specmeter.store.compare import Block, Comparison, Diff
from specmeter.store.gate import Regression

__all__ = ["render_comparison", "render_gate"]


def render_comparison(
    cmp: Comparison, a_name: str, b_name: str, found: Sequence[Regression], untested: Sequence[str],
    console: Console,
) -> None:  # fmt: skip
    """The comparison's tables between two banners (a reader of a long comparison looks last at the end);
    ``found`` are the regressions beyond ``--fail-on``, ``untested`` its metrics without an interval."""
    flagged = {(id(r.block), r.diff.metric) for r in found}
    legend = "intervals withheld" if cmp.withheld else "▲/▼ = 95% interval excludes 0"
    console.print(f"[bold]A[/] = {a_name}    [bold]B[/] = {b_name}    (B − A; {legend})")
    _mismatch_banner(cmp, console)
    for block in cmp.blocks:
        console.print(_block_table(block, flagged, withheld=cmp.withheld))
    for note in cmp.notes:
        console.print(f"[yellow]note:[/] {note}", soft_wrap=True)
    for key in untested:
        console.print(f"[yellow]--fail-on {key}: not tested, the comparison has no interval for it[/]")
    _mismatch_banner(cmp, console)


def render_gate(found: Sequence[Regression], console: Console) -> None:
    """``--fail-on``'s verdict: one line per regression beyond a threshold, or that there is none."""
    for r in found:
        t = f"{r.threshold.value:.0%}" if r.threshold.relative else f"{r.threshold.value:g}"
        console.print(
            f"[bold red]REGRESSION[/] {r.block.candidate} · {r.block.category}: {r.diff.label} "
            f"{_fmt(r.diff.metric, r.diff.a)} → {_fmt(r.diff.metric, r.diff.b)} (beyond {t})",
            soft_wrap=True,
        )
    if not found:
        console.print("[green]No significant regression beyond the --fail-on thresholds.[/]")


def _fmt(metric: str, value: float | None, signed: bool = False) -> str:
    if value is None:
        return DASH
    sign = "+" if signed else ""
    if metric in ("ttft", "tpot", "gap_p99"):
        return f"{value:{sign}.2f} ms"
    if metric == "e_meas":
        return f"{value:{sign}.3f}×"
    return f"{value:{sign}.3f}"


def _mark(d: Diff) -> Text:
    marks = {
        "better": ("▲ better", "bold green"),
        "worse": ("▼ worse", "bold red"),
        "same": ("· not significant", "dim"),
        "unknown": ("? no interval", "yellow"),
    }
    text, style = marks[d.change]
    return Text(text, style=style)


def _mismatch_banner(cmp: Comparison, console: Console) -> None:
    if not cmp.mismatches:
        return
    what = "; ".join(cmp.mismatches)
    if cmp.withheld:
        console.print(
            f"[bold red]⚠ NOT COMPARABLE: {escape(what)}. Differences are shown, intervals and significance "
            "are withheld: they would not be the change's. --force computes them anyway.[/]",
            soft_wrap=True,
        )
    else:
        console.print(f"[bold yellow]⚠ compared with --force although: {escape(what)}.[/]", soft_wrap=True)


def _block_table(block: Block, flagged: set[tuple[int, str]], *, withheld: bool = False) -> Table:
    n_a = "?" if block.requests_a is None else str(block.requests_a)
    n_b = "?" if block.requests_b is None else str(block.requests_b)
    how = "paired by request id" if block.paired else "independent resamples"
    if block.rows and block.rows[0].approximate:
        how = "approximate intervals"
    title = f"{block.candidate} · {block.category}  (requests A {n_a}, B {n_b}; {how})"
    table = Table(title=Text(title), title_justify="left", title_style="bold")
    for column in ("metric", "A", "B", "B − A", "95% CI of B − A", "change"):
        table.add_column(column)
    for d in block.rows:
        ci = "—" if d.ci is None else f"[{_fmt(d.metric, d.ci[0], True)}, {_fmt(d.metric, d.ci[1], True)}]"
        if d.ci is not None and d.approximate:
            ci = "≈ " + ci
        mark = Text("withheld: not comparable", style="bold red") if withheld else _mark(d)
        if (id(block), d.metric) in flagged:
            mark.append("  REGRESSION", style="bold red")
        table.add_row(
            d.label, _fmt(d.metric, d.a), _fmt(d.metric, d.b), _fmt(d.metric, d.diff, True), ci, mark
        )
    return table
