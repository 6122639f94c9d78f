"""``specmeter tune``: parse the sweep's options, run ``measuring.tune_run``, render the best k per category.

The measurement (cost curve to k_max + 1, baseline and every k interleaved) is ``measuring.tune_run``; the
analysis (four speedups per k, predictions tested on a held-out k, best k per category) is
``selection.tune_analysis``.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from specmeter.cli import options as opt
from specmeter.cli.common import RichReporter, console, end, measure_errors, parse_int_list
from specmeter.measuring.config import TUNE_K_MAX


@opt.measuring_command()
def tune(
    draft: Annotated[
        list[str] | None,
        typer.Option(
            "--draft",
            help="Draft model directory or method spec (ngram, suffix, layers:n=2; docs/methods.md); "
            "none for vLLM's ngram/mtp. The k sweep is the first's; with --batch, repeat to time every "
            "candidate's own proposing cost (replay/select --costs price each at its own).",
        ),
    ] = None,
    k_max: Annotated[
        int, typer.Option("--k-max", help="Largest draft length; the cost curve goes to k_max+1.")
    ] = TUNE_K_MAX,
    k: Annotated[
        str | None, typer.Option("--k", help="k values to run, e.g. 1,2,4,8 (default: 1..k_max).")
    ] = None,
    holdout: Annotated[
        int | None,
        typer.Option(
            "--holdout", help="k run but kept out of every fit, to test predictions (default: auto; 0: none)."
        ),
    ] = None,
    batch: Annotated[
        str | None,
        typer.Option(
            "--batch",
            help="Batch sizes to predict at, e.g. 1,2,4,8,16: the cost surface, E(B, k), the best k per B "
            "and the schedule (vLLM num_speculative_tokens_per_batch_size, serve --k-schedule).",
        ),
    ] = None,
    *,
    options: dict[str, Any],
) -> None:
    """Best draft length k per category: cost curve, four speedups per k, predictions tested on held-out k."""
    from specmeter.measuring.tune_run import resolve_ks

    with measure_errors():
        ks, held = resolve_ks(k_max, None if k is None else parse_int_list(k, "--k"), holdout)
    cfg = opt.measure_config(
        options, drafts=list(draft or []), k=ks, kind="tune",
        extra={"k_max": k_max, "holdout": held},
        batch=() if batch is None else tuple(parse_int_list(batch, "--batch")),
    )  # fmt: skip
    from specmeter.measuring.tune_run import run_tune

    quiet = options["quiet"]
    with measure_errors():
        outcome = run_tune(
            cfg, RichReporter(quiet=quiet), k_max=k_max, holdout=held,
            render=None if quiet else lambda out: _render(out),
        )  # fmt: skip
    end(outcome.exit_code)


def _render(out: dict[str, Any]) -> None:
    from specmeter.selection.view_tune import render_tune

    render_tune(out, console)
    section = (out.get("tune") or {}).get("batch")
    if section:
        from specmeter.selection.view_batch import render_batch_tune

        render_batch_tune(section, console)
