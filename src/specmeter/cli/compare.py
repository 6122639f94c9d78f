"""``specmeter compare RUN_A RUN_B``: what did yesterday's change do, and is the change real?

RUN_A is the reference (before), RUN_B the new run (after); each is a store run (``12``, ``latest``,
``latest~1``) or a result JSON file. Exit codes, for CI pipelines:

- 0: no significant regression beyond the ``--fail-on`` thresholds (always 0 without ``--fail-on``);
- 1: at least one significant regression beyond a threshold;
- 2: usage error (unknown run, unreadable file, bad ``--fail-on``, nothing in common to compare).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from specmeter.cli.common import check_outputs, console, fail, parse_option, run_inputs, store_path
from specmeter.cli.options import STORE, shared
from specmeter.exitcodes import EXIT_FAILED

EXIT_REGRESSION = EXIT_FAILED

_FAIL_ON_HELP = (
    "Exit 1 on a significant regression beyond a threshold, e.g. alpha=0.05,e_meas=0.1,ttft=10%. "
    "Metrics: alpha, beta, tau, position (every P_i), e_meas, ttft, tpot, gap_p99. A bare number is an "
    "absolute change (ms for latencies); N% is relative to run A."
)


@shared(tail=STORE)
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
        "set, kind of run, target, k or temperature; and replace a --json file that is not specmeter's.",
    ),
    *,
    options: dict[str, Any],
) -> None:
    """Compare two runs: per candidate and category, B − A with a bootstrap 95% interval and significance.

    α, β, τ, per-position rates, E_meas, TTFT, TPOT and gap p99. Exit 1 on a significant regression beyond
    --fail-on thresholds, 2 on a usage error.
    """
    from specmeter.report.files import write_json_atomic
    from specmeter.store import StoreError, load_source
    from specmeter.store.compare import compare_sources
    from specmeter.store.gate import comparison_to_dict, parse_thresholds, regressions
    from specmeter.store.view_compare import render_comparison, render_gate

    store = options["store"]
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
    render_comparison(cmp, a.name, b.name, found, untested, console)
    if json_out is not None:
        write_json_atomic(json_out, comparison_to_dict(cmp, found), marker="compare")
    if thresholds is None:
        return
    render_gate(found, console)
    if found:
        raise typer.Exit(EXIT_REGRESSION)
