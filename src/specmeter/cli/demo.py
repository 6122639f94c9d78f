"""``specmeter demo``: check the bundled models are there, run ``bundled.demo``, print its story.

What the demo measures and writes is :mod:`specmeter.bundled.demo`, its closing summary
:mod:`specmeter.bundled.view`; this module parses the options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from specmeter.bundled.view import print_machine, render_summary
from specmeter.cli.common import (
    RichReporter,
    check_outputs,
    console,
    end,
    fail,
    measure_errors,
    resolve_store,
)
from specmeter.cli.options import RECORD, shared


@shared(tail=RECORD)
def demo(
    out: Path = typer.Option(Path("specmeter-demo"), "--out", help="Directory for all results."),
    quick: bool = typer.Option(False, "--quick", help="A smoke run: few prompts, short outputs (< 2 min)."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads for torch (default: torch's)."),
    models: Path | None = typer.Option(
        None,
        "--models",
        help="Directory with target/ draft-general/ draft-tiny/ draft-legal/, and eagle-legal/ (an EAGLE "
        "head for that target) to bench one (default: bundled).",
    ),
    strict: bool = typer.Option(
        False,
        "--strict",
        help="Exit 4 when other processes made the machine busy during any of the demo's runs "
        "(results still written).",
    ),
    *,
    options: dict[str, Any],
) -> None:
    """The field report on bundled models: compat, bench of A/B/C, n-gram, suffix decoding, layer skipping
    and the EAGLE head on general and legal, the router by category, k sweep, where speculation stops
    paying under batching (B = 1, 4, 16 measured, the predicted curve, a schedule), ROI."""
    from specmeter.bundled.demo import run_demo
    from specmeter.bundled.models import missing_models

    stored = resolve_store(options["store"], options["no_store"])
    check_outputs({"--store": stored}, {"--models": models}, directories={"--out": out})
    missing = missing_models(models)
    if missing:
        where = f"in {models}" if models else "(bundled); rebuild them with `make models`"
        fail(f"demo models missing: {', '.join(missing)} {where}")
    with measure_errors():
        outcome = run_demo(
            out, RichReporter(), quick=quick, store=stored, threads=threads,
            models=models, strict=strict,
        )  # fmt: skip
    if outcome.summary is None:  # interrupted: what was measured is on disk, the reporter said so
        end(outcome.exit_code)
        return
    print_machine(outcome.runs, console)  # a busy demo's warning frames its summary, as bench's does
    render_summary(outcome.summary, console)
    console.print(
        f"\nEverything is in [bold]{out}/[/]: summary.json, compat.json, general/legal .json .csv .jsonl, "
        "report-general.html, report-legal.html, tune-legal.json, batch-legal-B.json (one per batch size), "
        "load-legal.json, roi.json.",
        soft_wrap=True,
    )
    print_machine(outcome.runs, console)  # the bottom lines: which of its runs to distrust
    end(outcome.exit_code)
