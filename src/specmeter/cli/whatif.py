"""``specmeter whatif``: parse the grid's options, run ``measuring.whatif_run``, render the surface.

The measurement (baseline and one synthetic-acceptance run per (α, k), waves of B, interleaved) is
``measuring.whatif_run``; what the surface says (E at any α, break-even, best k, the overlay) is
``selection.whatif_surface``; the view is ``selection.view_whatif``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from specmeter.cli import options as opt
from specmeter.cli.common import (
    RichReporter,
    check_range,
    console,
    end,
    fail,
    measure_errors,
    parse_float_list,
    parse_int_list,
)
from specmeter.measuring.config import BENCH_K
from specmeter.measuring.whatif_run import WHATIF_ALPHAS, WHATIF_BATCHES


def _list(values: tuple[float, ...] | tuple[int, ...]) -> str:
    return ",".join(f"{v:g}" for v in values)


def _rates(text: str) -> list[float]:
    """One ``--rates`` profile, in order and with repeats (``1,1,0.5`` is three positions)."""
    out = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            fail(f"--rates: {text!r} is not a comma-separated list of rates")
        check_range("--rates", value, low=0, high=1)
        out.append(value)
    return out


@opt.measuring_command()
def whatif(
    draft: Annotated[
        str | None,
        typer.Option(
            "--draft",
            help="Draft model directory (or layers:n=N) whose proposal cost is timed (or --standin).",
        ),
    ] = None,
    standin: Annotated[
        float | None,
        typer.Option(
            "--standin",
            help="No draft yet: a stand-in made of this share of the target's first layers, e.g. 0.1 "
            "(its measured cost ratio c is printed).",
        ),
    ] = None,
    alpha: Annotated[
        str,
        typer.Option(
            "--alpha", help="Acceptance rates α (A/D of full drafts) to force, e.g. 0.3,0.5,0.65,0.8."
        ),
    ] = _list(WHATIF_ALPHAS),
    rates: Annotated[
        list[str] | None,
        typer.Option(
            "--rates",
            help="An explicit per-position profile instead (vLLM's synthetic_acceptance_rates: "
            "unconditional, non-increasing, one per position, e.g. 0.9,0.8,0.7,0.6); repeat for several.",
        ),
    ] = None,
    length: Annotated[
        str | None,
        typer.Option(
            "--length",
            help="Mean acceptance lengths L instead (vLLM's synthetic_acceptance_length: tokens per step, "
            "in [1, k+1]; as vLLM: ⌊L−1⌋ positions always accepted, one with the remainder), e.g. 2.5,3.2.",
        ),
    ] = None,
    k: Annotated[str, typer.Option("--k", help="Draft lengths, e.g. 2,4.")] = _list(BENCH_K),
    batch: Annotated[
        str, typer.Option("--batch", help="Batch sizes to measure at (waves of B sequences), e.g. 1,4,16.")
    ] = _list(WHATIF_BATCHES),
    overlay: Annotated[
        list[Path] | None,
        typer.Option(
            "--overlay",
            help="A bench/select/tune result or monitor --requests JSON: place each measured domain on the "
            "surface; repeat for several.",
        ),
    ] = None,
    at_alpha: Annotated[
        float | None,
        typer.Option(
            "--at-alpha", help="Also read the overlay at this α (the rate a new draft would reach)."
        ),
    ] = None,
    alpha_from: Annotated[
        Path | None,
        typer.Option(
            "--alpha-from",
            help="A replay (or bench) result: measure at --candidate's per-position rates, one profile per "
            "domain (and all together), each placed on the surface.",
        ),
    ] = None,
    candidate: Annotated[
        str | None,
        typer.Option("--candidate", help="With --alpha-from: METHOD@k (default: the result's only one)."),
    ] = None,
    *,
    options: dict[str, Any],
) -> None:
    """What an acceptance rate you do not have yet would buy: E(α, k, B) measured with forced acceptance."""
    lengths = [] if length is None else parse_float_list(length, "--length", low=1)
    alphas = (
        []
        if (rates or lengths or alpha_from is not None) and alpha == _list(WHATIF_ALPHAS)
        else parse_float_list(alpha, "--alpha", low=0, high=1)
    )
    profiles = [_rates(r) for r in rates or []]
    ks = parse_int_list(k, "--k")
    batches = parse_int_list(batch, "--batch")
    cfg_measure = opt.measure_config(
        options, drafts=[] if draft is None else [draft], k=ks, kind="whatif", standin=standin
    )
    from specmeter.measuring.whatif_run import WhatifConfig, run_whatif
    from specmeter.measuring.whatif_run_vllm import run_whatif_vllm
    from specmeter.selection.view_whatif import render_whatif

    with measure_errors():
        cfg = WhatifConfig(
            measure=cfg_measure, alphas=alphas, rates=profiles, lengths=lengths, batches=batches,
            overlay=overlay or [],
            at_alpha=at_alpha, alpha_from=alpha_from, candidate=candidate,
        )  # fmt: skip
    quiet = options["quiet"]
    with measure_errors():
        run = run_whatif_vllm if cfg_measure.backend == "vllm" else run_whatif
        outcome = run(
            cfg, RichReporter(quiet=quiet), render=None if quiet else lambda out: render_whatif(out, console)
        )
    end(outcome.exit_code)
