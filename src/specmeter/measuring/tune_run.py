"""``tune``: the draft at every k of a sweep, the cost curve to k_max + 1, and the analysis that picks k.

Natively the cost curve t_T(n), n = 1..k_max+1, and t_D(1) are measured on warm caches before the sweep and
written to the result file at once; with vLLM, which times only whole engine steps, an effective curve is
fitted to the step times of the k values the predictions may use. ``selection.tune_analysis`` analyses the
sweep.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from specmeter.measuring.config import K_MAX_LIMIT
from specmeter.measuring.errors import MeasureError
from specmeter.measuring.run import Measurement, Outcome, close, run_candidates

if TYPE_CHECKING:
    from specmeter.engine.loader import LoadedModel
    from specmeter.engine.runner import RunState
    from specmeter.measuring.config import MeasureConfig
    from specmeter.measuring.progress import Reporter
    from specmeter.metrics.records import CostCurve

__all__ = ["K_MAX_LIMIT", "resolve_ks", "run_tune"]


def resolve_ks(k_max: int, ks: Sequence[int] | None, holdout: int | None) -> tuple[list[int], int | None]:
    """The k values to run (default 1..k_max) and the held-out one (None: auto; 0: none), validated."""
    from specmeter.selection.tune_analysis import auto_holdout

    if not 1 <= k_max <= K_MAX_LIMIT:
        raise MeasureError(f"--k-max: must be between 1 and {K_MAX_LIMIT}, got {k_max}")
    run = list(range(1, k_max + 1)) if ks is None else sorted(set(ks))
    if max(run) > k_max:
        raise MeasureError(f"--k: {max(run)} is above --k-max {k_max}")
    if holdout is None:
        return run, auto_holdout(run)
    if holdout == 0:
        return run, None
    if holdout not in run or holdout == max(run):
        raise MeasureError(
            f"--holdout: {holdout} must be one of the k values run, below the largest ({max(run)}); "
            "0 for none"
        )
    return run, holdout


def run_tune(
    cfg: MeasureConfig,
    reporter: Reporter,
    *,
    k_max: int,
    holdout: int | None,
    render: Callable[[dict[str, Any]], None] | None = None,
) -> Outcome:
    """Run the sweep, analyse it into the ``tune`` section, close."""
    from specmeter.engine.costs import measure_cost_curve
    from specmeter.metrics.costmodel import step_cost_curve
    from specmeter.selection.tune_analysis import analyse_tune, cost_curve_section

    def measure(state: RunState[LoadedModel], context: Sequence[int]) -> None:
        from specmeter.engine.runner import forward_model

        draft = state.candidates[0].draft
        model = forward_model(draft.model)  # None: a model-free method (t_D(1) = 0)
        curve = measure_cost_curve(state.target.model, model, context, k_max + 1, cfg.cost_repeats)
        # The baseline's curve is the target's alone (bench stores it the same way).
        state.cost_curves[state.target.info.name] = replace(curve, draft_s=0.0, draft_spread=0.0)
        state.cost_curves[draft.info.name] = curve

    def draft_curve(m: Measurement) -> CostCurve:
        return m.state.cost_curves[m.drafts[0].info.name]

    def on_costs(m: Measurement) -> None:
        # The curve is on disk before the sweep starts: minutes of measurement are never lost.
        m.result.set_section(cfg.kind, {"cost_curve": cost_curve_section(draft_curve(m))})

    def derive(m: Measurement) -> None:
        # vLLM times whole steps only: an effective curve from them, fitted on the k the predictions may use.
        by_k = {c.k: m.state.per_candidate.get(i, []) for i, c in enumerate(m.state.candidates)}
        fitted = {k: r for k, r in by_k.items() if k != holdout}
        curve = step_cost_curve(m.state.baseline, fitted, k_max + 1)
        if curve is None:
            if m.interrupted:
                return
            raise MeasureError("vLLM produced no decode steps to time; raise --max-tokens")
        m.state.cost_curves[m.state.target.info.name] = replace(curve, draft_s=0.0)
        m.state.cost_curves[m.drafts[0].info.name] = curve

    others = list(cfg.drafts[1:])  # timed for their proposing cost only (--batch); the sweep is the first's
    if others:
        cfg = replace(cfg, drafts=cfg.drafts[:1])
    m = run_candidates(
        cfg, reporter, measure=measure, on_costs=on_costs,
        after_runs=derive if cfg.backend == "vllm" else None,
    )  # fmt: skip
    if m.drafts[0].info.name not in m.state.cost_curves:  # interrupted before vLLM timed a step
        return close(m)
    runs = [m.state.candidate_run(i) for i in range(len(m.state.candidates))]
    section = analyse_tune(m.state.baseline_run(), runs, draft_curve(m), k_max=k_max, holdout=holdout)
    if cfg.backend == "vllm":
        section["cost_curve"]["source"] = "effective: fitted to vLLM step times (t_T(n) flat, t_D(1) = slope)"
    if cfg.batch and section.get("source_k") is not None:
        from specmeter.measuring.batch_run import tune_batch_section

        source = next(r for r in runs if r.k == section["source_k"])
        batched = tune_batch_section(m, source, k_max=k_max, reporter=reporter, others=others)
        if batched is not None:
            from specmeter.selection.batch_analysis import schedule_agreement

            batched["agreement"] = schedule_agreement(section, batched)
            section["batch"] = batched
    return close(m, section, render=render)
