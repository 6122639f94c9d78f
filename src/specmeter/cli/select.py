"""``specmeter select``: parse the options and the traffic mix, run ``measuring.select_run``, render the
ranking — or, with ``--from``, rank a replay (or bench) result without running a model
(``selection.replay_analysis``, a ``--costs`` surface read by ``replay --costs``' predictor).

The mix is checked against the workload's categories before any model is loaded, so a typo costs a second,
not a run; the ranking itself is ``selection.select_analysis``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from specmeter.cli import options as opt
from specmeter.cli.common import (
    RichReporter,
    check_outputs,
    console,
    end,
    fail,
    measure_errors,
    parse_int_list,
)
from specmeter.measuring.config import SELECT_K, MeasureConfig

_K_DEFAULT = ",".join(map(str, SELECT_K))
# The measuring options that mean nothing to a ranking from a result file: (parameter, option).
_MEASURING_ONLY = (
    ("temperature", "--temperature"), ("top_p", "--top-p"), ("max_tokens", "--max-tokens"),
    ("limit", "--limit"), ("seed", "--seed"), ("csv_out", "--csv"), ("log_out", "--log"),
    ("dtype", "--dtype"), ("device", "--device"), ("implementation", "--implementation"),
    ("trust_remote_code", "--trust-remote-code"), ("cost_repeats", "--cost-repeats"),
    ("threads", "--threads"), ("strict", "--strict"), ("store", "--store"),
)  # fmt: skip


@opt.measuring_command(vllm=False, optional_head=True)
def select(
    draft: Annotated[
        list[str] | None,
        typer.Option(
            "--draft",
            help="Candidate: a draft directory or a method spec (ngram, suffix, layers:n=2; "
            "docs/methods.md); repeat for several.",
        ),
    ] = None,
    k: Annotated[
        str, typer.Option("--k", help="Draft lengths to try with every draft, e.g. 2,4,8.")
    ] = _K_DEFAULT,
    mix: Annotated[
        str | None,
        typer.Option(
            "--mix",
            help="Traffic mix by category prefix, e.g. legal=0.7,general=0.3 (default: the golden set's).",
        ),
    ] = None,
    source: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="A replay (or bench) result: rank its methods × k per domain without running a model "
            "(instead of --target/--prompts/--draft).",
        ),
    ] = None,
    costs: Annotated[
        Path | None,
        typer.Option(
            "--costs",
            help="With --from: a tune --batch, bench --batch or whatif result; rank by predicted E per batch "
            "size (without it: by tokens per step, acceptance only).",
        ),
    ] = None,
    batch: Annotated[
        int | None,
        typer.Option(
            "--batch", help="With --from --costs: the batch size to rank at (default: the smallest)."
        ),
    ] = None,
    *,
    options: dict[str, Any],
) -> None:
    """Rank drafts × k by traffic-weighted speedup; per-domain α and E, memory; draft and k per domain."""
    if source is not None:
        _select_from(source, costs, batch, mix, k, draft, options)
        return
    missing = [name for name, given in (("--target", options["target"]), ("--prompts", options["prompts"]),
                                        ("--draft", draft)) if not given]  # fmt: skip
    if missing:
        fail(f"give {', '.join(missing)} (a measurement), or --from RESULT (rank a replay or bench result)")
    if costs is not None or batch is not None:
        fail("--costs and --batch go with --from RESULT (a measurement times its own speedup)")
    from specmeter.measuring.select_run import check_mix, run_select
    from specmeter.selection.view_select import render_select

    ks = parse_int_list(k, "--k")
    with measure_errors():
        weights = check_mix(mix, options["prompts"], options["limit"])
    cfg = opt.measure_config(options, drafts=list(draft or []), k=ks, kind="select", extra={"mix": weights})
    quiet = options["quiet"]
    with measure_errors():
        outcome = run_select(
            cfg, RichReporter(quiet=quiet), weights,
            render=None if quiet else lambda out: render_select(out, console),
        )  # fmt: skip
    end(outcome.exit_code)


def _select_from(
    source: Path, costs: Path | None, batch: int | None, mix: str | None, k: str, draft: list[str] | None,
    options: dict[str, Any],
) -> None:  # fmt: skip
    """``select --from``: the result's candidates ranked per domain (``selection.replay_analysis``)."""
    given = [name for name, value in (("--target", options["target"]), ("--prompts", options["prompts"]),
                                      ("--draft", draft)) if value]  # fmt: skip
    given += [flag for name, flag in _MEASURING_ONLY if options[name] != getattr(MeasureConfig, name, None)]
    given += ["--k"] if k != _K_DEFAULT else []
    if given:
        fail(f"--from ranks a result file without running a model: drop {', '.join(given)}")
    if batch is not None and costs is None:
        fail("--batch: a batch size needs a cost surface (--costs)")
    json_out = options["json_out"]
    check_outputs({"--json": json_out}, {"--from": source, "--costs": costs})
    from specmeter.pricing import CostsError, predictor
    from specmeter.report.files import write_json_atomic
    from specmeter.selection.acceptance_source import AcceptanceSourceError, read_source
    from specmeter.selection.mix import MixError, parse_mix
    from specmeter.selection.replay_analysis import select_from_source
    from specmeter.selection.view_select import render_select

    try:
        weights = None if mix is None else parse_mix(mix)
        read = read_source(source, "--from")
        predict = None if costs is None else predictor(costs)
        result = select_from_source(
            read, weights, predict, batch, costs_path=None if costs is None else str(costs)
        )
    except (AcceptanceSourceError, CostsError, MixError) as e:
        fail(str(e))
    if not options["quiet"]:
        render_select(result, console)
    if json_out is not None:
        write_json_atomic(json_out, result, marker="select")
