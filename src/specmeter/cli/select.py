"""``specmeter select``: which draft, at which k, for which traffic — ranked, with intervals, recommended.

Runs the baseline and every (draft, k) over the golden set interleaved (the same measurement as ``bench``,
via ``cli.measure.run_candidates``), then ranks the candidates by traffic-weighted measured speedup for the
``--mix`` given (``selection.select``). The mix is checked against the workload's categories before any
model is loaded, so a typo costs a second, not a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from specmeter.cli.bench import BenchConfig
from specmeter.cli.common import console, fail, parse_int_list, resolve_store

if TYPE_CHECKING:
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
    target: Path = typer.Option(..., "--target", help="Target model directory (Hugging Face format)."),
    draft: list[Path] = typer.Option(..., "--draft", help="Candidate draft directory; repeat for several."),
    prompts: Path = typer.Option(..., "--prompts", help="Golden set: specmeter JSONL or Spec-Bench."),
    k: str = typer.Option("1,2,4", "--k", help="Draft lengths to try with every draft, e.g. 2,4,8."),
    mix: str | None = typer.Option(
        None,
        "--mix",
        help="Traffic mix by category prefix, e.g. legal=0.7,general=0.3 (default: the golden set's).",
    ),
    temperature: float = typer.Option(0.0, help="0 = greedy (exact-match verification)."),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus filtering applied to target and draft alike."),
    max_tokens: int = typer.Option(
        128, "--max-tokens", help="Output tokens per request (unless the prompt says)."
    ),
    limit: int | None = typer.Option(None, help="Only the first N prompts."),
    seed: int = typer.Option(0, help="Seed for sampling and the bootstrap."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the whole result as JSON."),
    csv_out: Path | None = typer.Option(None, "--csv", help="Write one CSV row per request."),
    log_out: Path | None = typer.Option(None, "--log", help="Per-request JSONL log."),
    dtype: str = typer.Option("auto", help="auto, float32, bfloat16 or float16."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:N."),
    implementation: str = typer.Option("auto", help="auto, native (Llama family) or transformers."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Allow custom model code."),
    cost_repeats: int = typer.Option(9, "--cost-repeats", help="Repeats per point of the cost curve."),
    threads: int | None = typer.Option(
        None,
        "--threads",
        help="CPU threads for torch (default: torch's choice; 1 is steadier on shared hosts).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no tables."),
    store: Path | None = typer.Option(
        None,
        "--store",
        help="Run store to record this run in (default: $SPECMETER_STORE or the user data dir).",
    ),
    no_store: bool = typer.Option(False, "--no-store", help="Do not record this run in the run store."),
) -> None:
    """Rank drafts × k by traffic-weighted speedup; per-domain α and E, memory; draft and k per domain."""
    if implementation not in ("auto", "native", "transformers"):
        fail(f"--implementation: {implementation!r} is not one of auto, native, transformers")
    if cost_repeats < 1:
        fail("--cost-repeats must be >= 1")
    ks = parse_int_list(k, "--k")
    weights = check_mix(mix, prompts, limit)
    cfg = BenchConfig(
        target=target, drafts=list(draft), prompts=prompts, k=ks, temperature=temperature, top_p=top_p,
        max_tokens=max_tokens, limit=limit, seed=seed, json_out=json_out, csv_out=csv_out, log_out=log_out,
        dtype=dtype, device=device, implementation=implementation, trust_remote_code=trust_remote_code,
        cost_repeats=cost_repeats, kind="select", store=resolve_store(store, no_store), threads=threads,
        extra={"mix": weights},
    )  # fmt: skip
    execute_select(cfg, weights, quiet=quiet)


def execute_select(cfg: BenchConfig, mix: dict[str, float] | None, *, quiet: bool = False) -> dict[str, Any]:
    """Measure every candidate and return the result dict with its ``select`` section."""
    from specmeter.cli.measure import exit_if_interrupted, finish, run_candidates
    from specmeter.engine.runner import measure_costs
    from specmeter.selection.select import analyse_select

    def measure(state: RunState, context: Sequence[int]) -> None:
        measure_costs(state, context, repeats=cfg.cost_repeats)

    m = run_candidates(cfg, measure=measure, quiet=quiet)
    runs = [m.state.candidate_run(i) for i in range(len(m.state.candidates))]
    out = finish(m, analyse_select(m.state.baseline_run(), runs, mix, seed=cfg.seed))
    if not quiet:
        from specmeter.selection.console_select import render_select

        render_select(out, console)
    exit_if_interrupted(m)
    return out
