"""``specmeter select``: parse the options and the traffic mix, run ``measuring.select_run``, render the
ranking.

The mix is checked against the workload's categories before any model is loaded, so a typo costs a second,
not a run; the ranking itself is ``selection.select_analysis``.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from specmeter.cli import options as opt
from specmeter.cli.common import RichReporter, console, end, measure_errors, parse_int_list
from specmeter.measuring.config import SELECT_K


@opt.measuring_command(vllm=False)
def select(
    draft: Annotated[
        list[str],
        typer.Option(
            "--draft",
            help="Candidate: a draft directory or a method spec (ngram, suffix, layers:n=2; "
            "docs/methods.md); repeat for several.",
        ),
    ],
    k: Annotated[
        str, typer.Option("--k", help="Draft lengths to try with every draft, e.g. 2,4,8.")
    ] = ",".join(map(str, SELECT_K)),
    mix: Annotated[
        str | None,
        typer.Option(
            "--mix",
            help="Traffic mix by category prefix, e.g. legal=0.7,general=0.3 (default: the golden set's).",
        ),
    ] = None,
    *,
    options: dict[str, Any],
) -> None:
    """Rank drafts × k by traffic-weighted speedup; per-domain α and E, memory; draft and k per domain."""
    from specmeter.measuring.select_run import check_mix, run_select
    from specmeter.selection.view_select import render_select

    ks = parse_int_list(k, "--k")
    with measure_errors():
        weights = check_mix(mix, options["prompts"], options["limit"])
    cfg = opt.measure_config(options, drafts=list(draft), k=ks, kind="select", extra={"mix": weights})
    quiet = options["quiet"]
    with measure_errors():
        outcome = run_select(
            cfg, RichReporter(quiet=quiet), weights,
            render=None if quiet else lambda out: render_select(out, console),
        )  # fmt: skip
    end(outcome.exit_code)
