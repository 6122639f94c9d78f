"""``specmeter select``: which draft, at which k, for which traffic — ranked, with intervals, recommended.

Runs the baseline and every (draft, k) over the golden set interleaved (the same measurement as ``bench``,
via ``cli.measure.run_candidates``), then ranks the candidates by traffic-weighted measured speedup for the
``--mix`` given (``selection.select``). The mix is checked against the workload's categories before any
model is loaded, so a typo costs a second, not a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from specmeter.cli import options as opt
from specmeter.cli.bench import BenchConfig
from specmeter.cli.common import console, fail, parse_int_list

if TYPE_CHECKING:
    from specmeter.engine.loader import LoadedModel
    from specmeter.engine.runner import RunState


def check_mix(mix: str | None, prompts: Path, limit: int | None) -> dict[str, float] | None:
    """Parse ``--mix`` and match it against the workload's categories; one-line error on any problem."""
    if mix is None:
        return None
    from specmeter.selection.mix import MixError, assign_domains, parse_mix
    from specmeter.workloads import WorkloadError, load_workload

    try:
        weights = parse_mix(mix)
        workload = load_workload(prompts)
        if limit is not None and limit >= 1:
            workload = workload.limit(limit)
        assign_domains(workload.categories, weights)
    except (MixError, WorkloadError) as e:
        fail(str(e))
    return weights


def select(
    target: opt.Target,
    draft: Annotated[
        list[Path], typer.Option("--draft", help="Candidate draft directory; repeat for several.")
    ],
    prompts: opt.Prompts,
    k: Annotated[
        str, typer.Option("--k", help="Draft lengths to try with every draft, e.g. 2,4,8.")
    ] = "1,2,4",
    mix: Annotated[
        str | None,
        typer.Option(
            "--mix",
            help="Traffic mix by category prefix, e.g. legal=0.7,general=0.3 (default: the golden set's).",
        ),
    ] = None,
    temperature: opt.Temperature = 0.0,
    top_p: opt.TopP = 1.0,
    max_tokens: opt.MaxTokens = 128,
    limit: opt.Limit = None,
    seed: opt.Seed = 0,
    json_out: opt.JsonOut = None,
    csv_out: opt.CsvOut = None,
    log_out: opt.LogOut = None,
    dtype: opt.Dtype = "auto",
    device: opt.Device = "auto",
    implementation: opt.Implementation = "auto",
    trust_remote_code: opt.TrustRemoteCode = False,
    cost_repeats: opt.CostRepeats = 9,
    threads: opt.Threads = None,
    quiet: opt.Quiet = False,
    store: opt.Store = None,
    no_store: opt.NoStore = False,
) -> None:
    """Rank drafts × k by traffic-weighted speedup; per-domain α and E, memory; draft and k per domain."""
    ks = parse_int_list(k, "--k")
    weights = check_mix(mix, prompts, limit)
    cfg = opt.measure_config(locals(), drafts=list(draft), k=ks, kind="select", extra={"mix": weights})
    execute_select(cfg, weights, quiet=quiet)


def execute_select(cfg: BenchConfig, mix: dict[str, float] | None, *, quiet: bool = False) -> dict[str, Any]:
    """Measure every candidate and return the result dict with its ``select`` section."""
    from specmeter.cli.measure import exit_if_interrupted, finish, run_candidates
    from specmeter.engine.runner import measure_costs
    from specmeter.selection.select import analyse_select

    def measure(state: RunState[LoadedModel], context: Sequence[int]) -> None:
        measure_costs(state, context, repeats=cfg.cost_repeats)

    m = run_candidates(cfg, measure=measure, quiet=quiet)
    runs = [m.state.candidate_run(i) for i in range(len(m.state.candidates))]
    out = finish(m, analyse_select(m.state.baseline_run(), runs, mix, seed=cfg.seed))
    if not quiet:
        from specmeter.selection.console_select import render_select

        render_select(out, console)
    exit_if_interrupted(m)
    return out
