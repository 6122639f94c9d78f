"""``specmeter bench``: parse bench's options, run ``measuring.bench_run``, render the result table.

Per-request rows go to CSV/JSONL the moment each request finishes; the whole-result JSON is written at the
end, or with ``complete: false`` when the run is interrupted (Ctrl-C keeps everything finished so far).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import typer
from rich.console import Console

from specmeter.cli import options as opt
from specmeter.cli.common import RichReporter, console, end, measure_errors, parse_int_list
from specmeter.measuring.config import BENCH_K


@opt.measuring_command()
def bench(
    draft: Annotated[
        list[str] | None,
        typer.Option(
            "--draft",
            help="Draft model directory or method spec (ngram:min=2,max=4, suffix, layers:n=2; "
            "docs/methods.md); repeat for several (none for vLLM's ngram/mtp).",
        ),
    ] = None,
    k: Annotated[str, typer.Option("--k", help="Draft length, or a list such as 1,2,4,8.")] = ",".join(
        map(str, BENCH_K)
    ),
    batch: Annotated[
        int | None,
        typer.Option(
            "--batch",
            help="Run the golden set as waves of B concurrent sequences, each kept at B rows until its last "
            "request ends (continuous batching under load), and put E_meas at B beside what the cost surface "
            "predicts.",
        ),
    ] = None,
    *,
    options: dict[str, Any],
) -> None:
    """Measure candidates on a golden set: α, β, τ, per-position rates, four speedups, latency, memory."""
    cfg = opt.measure_config(
        options, drafts=list(draft or []), k=parse_int_list(k, "--k"), batch=() if batch is None else (batch,)
    )
    from specmeter.measuring.bench_run import run_bench
    from specmeter.report.view import framed_by_hygiene, render_result_body

    @framed_by_hygiene  # the batch table inside the frame: a busy machine's line stays the last one
    def view(out: Mapping[str, Any], term: Console) -> None:
        render_result_body(out, term)
        section = (out.get("bench") or {}).get("batch")
        if section:
            from specmeter.selection.view_batch import render_batch_bench

            render_batch_bench(section, term)

    def render(out: dict[str, Any]) -> None:
        view(out, console)

    quiet = options["quiet"]
    with measure_errors():
        outcome = run_bench(cfg, RichReporter(quiet=quiet), render=None if quiet else render)
    end(outcome.exit_code)
