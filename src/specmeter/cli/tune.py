"""``specmeter tune``: the best draft length k, per category, with the cost curve that decides it.

Measures t_T(n), n = 1..k_max+1, and t_D(1) on warm caches, runs the baseline and the draft at every k of
the sweep interleaved prompt by prompt (``engine.runner``), and analyses the sweep (``selection.tune``):
the four speedups side by side per k, the gap between them as factors, E predicted for k that were not
run, the prediction checked against a held-out k, the best k per category and overall.

The measuring itself (load, cost curve, interleaved runs, files, run store) is ``cli.measure``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from specmeter.cli import options as opt
from specmeter.cli.bench import BenchConfig
from specmeter.cli.common import console, fail, parse_int_list
from specmeter.cli.measure import Measurement, exit_if_interrupted, finish, report_recorded, run_candidates

if TYPE_CHECKING:
    from specmeter.engine.loader import LoadedModel
    from specmeter.engine.runner import RunState

K_MAX_LIMIT = 64


def resolve_ks(k_max: int, k: str | None, holdout: int | None) -> tuple[list[int], int | None]:
    """The k values to run and the held-out one, validated against ``--k-max``."""
    from specmeter.selection.tune import auto_holdout

    if not 1 <= k_max <= K_MAX_LIMIT:
        fail(f"--k-max: must be between 1 and {K_MAX_LIMIT}, got {k_max}")
    ks = list(range(1, k_max + 1)) if k is None else parse_int_list(k, "--k")
    if max(ks) > k_max:
        fail(f"--k: {max(ks)} is above --k-max {k_max}")
    if holdout is None:
        return ks, auto_holdout(ks)
    if holdout == 0:
        return ks, None
    if holdout not in ks or holdout == max(ks):
        fail(
            f"--holdout: {holdout} must be one of the k values run, below the largest ({max(ks)}); 0 for none"
        )
    return ks, holdout


def tune(
    target: opt.Target,
    prompts: opt.Prompts,
    draft: Annotated[
        Path | None, typer.Option("--draft", help="Draft model directory (none for vLLM's ngram/mtp).")
    ] = None,
    k_max: Annotated[
        int, typer.Option("--k-max", help="Largest draft length; the cost curve goes to k_max+1.")
    ] = 8,
    k: Annotated[
        str | None, typer.Option("--k", help="k values to run, e.g. 1,2,4,8 (default: 1..k_max).")
    ] = None,
    holdout: Annotated[
        int | None,
        typer.Option(
            "--holdout", help="k run but kept out of every fit, to test predictions (default: auto; 0: none)."
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
    backend: opt.Backend = "native",
    method: opt.SpecMethod = "draft_model",
    tensor_parallel_size: opt.TensorParallel = 1,
    max_model_len: opt.MaxModelLen = None,
    gpu_memory_utilization: opt.GpuMemory = 0.9,
    enforce_eager: opt.EnforceEager = False,
) -> None:
    """Best draft length k per category: cost curve, four speedups per k, predictions tested on held-out k."""
    ks, held = resolve_ks(k_max, k, holdout)
    cfg = opt.measure_config(
        locals(),
        drafts=[] if draft is None else [draft],
        k=ks,
        kind="tune",
        extra={"k_max": k_max, "holdout": held},
    )
    execute_tune(cfg, k_max=k_max, holdout=held, quiet=quiet)


def execute_tune(cfg: BenchConfig, *, k_max: int, holdout: int | None, quiet: bool = False) -> dict[str, Any]:
    """Run the sweep and return the result dict (also written to ``cfg.json_out``)."""
    from specmeter.engine.costs import measure_cost_curve
    from specmeter.metrics.costmodel import step_cost_curve
    from specmeter.metrics.records import CostCurve
    from specmeter.selection.tune import analyse_tune, cost_curve_section

    def measure(state: RunState[LoadedModel], context: Sequence[int]) -> None:
        draft = state.candidates[0].draft
        curve = measure_cost_curve(state.target.model, draft.model, context, k_max + 1, cfg.cost_repeats)
        # The baseline's curve is the target's alone (bench stores it the same way).
        state.cost_curves[state.target.info.name] = replace(curve, draft_s=0.0, draft_spread=0.0)
        state.cost_curves[draft.info.name] = curve

    def draft_curve(m: Measurement) -> CostCurve:
        return m.state.cost_curves[m.drafts[0].info.name]

    def on_costs(m: Measurement) -> None:
        # The curve is on disk before the sweep starts: minutes of measurement are never lost.
        m.result.set_section({"cost_curve": cost_curve_section(draft_curve(m))})

    def derive(m: Measurement) -> None:
        # vLLM times whole steps only: an effective curve from them, fitted on the k the predictions may use.
        by_k = {c.k: m.state.per_candidate.get(i, []) for i, c in enumerate(m.state.candidates)}
        fitted = {k: r for k, r in by_k.items() if k != holdout}
        curve = step_cost_curve(m.state.baseline, fitted, k_max + 1)
        if curve is None:
            if m.interrupted:
                return
            fail("vLLM produced no decode steps to time; raise --max-tokens")
        m.state.cost_curves[m.state.target.info.name] = replace(curve, draft_s=0.0)
        m.state.cost_curves[m.drafts[0].info.name] = curve

    m = run_candidates(
        cfg,
        measure=measure,
        on_costs=on_costs,
        after_runs=derive if cfg.backend == "vllm" else None,
        quiet=quiet,
    )
    if m.drafts[0].info.name not in m.state.cost_curves:  # interrupted before vLLM timed a step
        finish(m)
        exit_if_interrupted(m)
    runs = [m.state.candidate_run(i) for i in range(len(m.state.candidates))]
    section = analyse_tune(m.state.baseline_run(), runs, draft_curve(m), k_max=k_max, holdout=holdout)
    if cfg.backend == "vllm":
        section["cost_curve"]["source"] = "effective: fitted to vLLM step times (t_T(n) flat, t_D(1) = slope)"
    out = finish(m, section)
    if not quiet:
        from specmeter.selection.console_tune import render_tune

        render_tune(out, console)
    report_recorded(m, quiet)
    exit_if_interrupted(m)
    return out
