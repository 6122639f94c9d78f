"""``specmeter compare RUN_A RUN_B``: what did yesterday's change do, and is the change real?

RUN_A is the reference (before), RUN_B the new run (after); each is a store run (``12``, ``latest``,
``latest~1``) or a result JSON file. Exit codes, for CI pipelines:

- 0: no significant regression beyond the ``--fail-on`` thresholds (always 0 without ``--fail-on``);
- 1: at least one significant regression beyond a threshold;
- 2: usage error (unknown run, unreadable file, bad ``--fail-on``, nothing in common to compare).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from specmeter.cli.common import check_outputs, console, fail, parse_option
from specmeter.cli.runs import run_inputs, store_option, store_path
from specmeter.exitcodes import EXIT_FAILED
from specmeter.safetext import markup

if TYPE_CHECKING:
    from rich.text import Text

    from specmeter.store.compare import Block, Comparison, Diff

EXIT_REGRESSION = EXIT_FAILED

_FAIL_ON_HELP = (
    "Exit 1 on a significant regression beyond a threshold, e.g. alpha=0.05,e_meas=0.1,ttft=10%. "
    "Metrics: alpha, beta, tau, position (every P_i), e_meas, ttft, tpot, gap_p99. A bare number is an "
    "absolute change (ms for latencies); N% is relative to run A."
)


def _fmt(metric: str, value: float | None, signed: bool = False) -> str:
    from specmeter.report.fmt import DASH

    if value is None:
        return DASH
    sign = "+" if signed else ""
    if metric in ("ttft", "tpot", "gap_p99"):
        return f"{value:{sign}.2f} ms"
    if metric == "e_meas":
        return f"{value:{sign}.3f}×"
    return f"{value:{sign}.3f}"


def _mark(d: Diff) -> Text:
    from rich.text import Text

    marks = {
        "better": ("▲ better", "bold green"),
        "worse": ("▼ worse", "bold red"),
        "same": ("· not significant", "dim"),
        "unknown": ("? no interval", "yellow"),
    }
    text, style = marks[d.change]
    return Text(text, style=style)


def _mismatch_banner(cmp: Comparison) -> None:
    from rich.markup import escape

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


def _block_table(block: Block, flagged: set[tuple[int, str]], *, withheld: bool = False) -> object:
    from rich.table import Table
    from rich.text import Text

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


def compare(
    run_a: str = typer.Argument(..., help="Reference run (before): run id, latest~N, or a result JSON file."),
    run_b: str = typer.Argument(..., help="New run (after): run id, latest, or a result JSON file."),
    fail_on: str | None = typer.Option(None, "--fail-on", help=_FAIL_ON_HELP),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the comparison as JSON."),
    resamples: int = typer.Option(2000, "--resamples", help="Bootstrap resamples per run."),
    independent: bool = typer.Option(
        False, "--independent", help="Resample each run's requests independently even when they match."
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Compute intervals and significance (and test --fail-on) even when A and B differ in prompt "
        "set, kind of run, target, k or temperature.",
    ),
    store: Path | None = store_option(),
) -> None:
    """Compare two runs: per candidate and category, B − A with a bootstrap 95% interval and significance.

    α, β, τ, per-position rates, E_meas, TTFT, TPOT and gap p99. Exit 1 on a significant regression beyond
    --fail-on thresholds, 2 on a usage error.
    """
    from specmeter.report.files import write_json_atomic
    from specmeter.store import StoreError, load_source
    from specmeter.store.compare import compare_sources
    from specmeter.store.gate import comparison_to_dict, parse_thresholds, regressions

    thresholds = parse_option(parse_thresholds, fail_on, ValueError)
    if resamples < 100:
        fail("--resamples must be >= 100")
    check_outputs({"--json": json_out}, run_inputs([run_a, run_b], store))
    try:
        a = load_source(run_a, store_path(store))
        b = load_source(run_b, store_path(store))
    except StoreError as e:
        fail(str(e))
    try:
        cmp = compare_sources(a, b, n_resamples=resamples, paired=not independent, force=force)
    except ValueError as e:
        fail(f"cannot compare {a.name} with {b.name}: {e}")
    if cmp.withheld and thresholds is not None:
        why = "; ".join(cmp.mismatches)
        fail(f"--fail-on: {a.name} and {b.name} are not comparable ({why}); --force tests them anyway")
    found, untested = regressions(cmp, thresholds) if thresholds else ([], [])
    flagged = {(id(r.block), r.diff.metric) for r in found}

    legend = "intervals withheld" if cmp.withheld else "▲/▼ = 95% interval excludes 0"
    console.print(f"[bold]A[/] = {markup(a.name)}    [bold]B[/] = {markup(b.name)}    (B − A; {legend})")
    _mismatch_banner(cmp)
    for block in cmp.blocks:
        console.print(_block_table(block, flagged, withheld=cmp.withheld))
    for note in cmp.notes:
        console.print(f"[yellow]note:[/] {markup(note)}", soft_wrap=True)
    for key in untested:
        console.print(f"[yellow]--fail-on {key}: not tested, the comparison has no interval for it[/]")
    _mismatch_banner(cmp)  # again at the end, where a reader of a long comparison looks last
    if json_out is not None:
        write_json_atomic(json_out, comparison_to_dict(cmp, found))
    if thresholds is None:
        return
    if found:
        for r in found:
            t = f"{r.threshold.value:.0%}" if r.threshold.relative else f"{r.threshold.value:g}"
            console.print(
                f"[bold red]REGRESSION[/] {markup(r.block.candidate)} · {markup(r.block.category)}: "
                f"{r.diff.label} "
                f"{_fmt(r.diff.metric, r.diff.a)} → {_fmt(r.diff.metric, r.diff.b)} (beyond {t})",
                soft_wrap=True,
            )
        raise typer.Exit(EXIT_REGRESSION)
    console.print("[green]No significant regression beyond the --fail-on thresholds.[/]")
