"""``bench --batch B`` and ``tune --batch …``: speculation measured and predicted under batched decoding.

``bench --batch B`` runs the golden set as waves of B concurrent sequences (``engine.batch_runner``),
baseline and candidates interleaved wave by wave. Between waves it times the cost surface a chunk at a time
(``engine.surface.SurfaceSampler``: batch sizes 1, 2, 4, … up to B, k = 0 and every k run, acceptance as
measured so far), so the surface and the runs share the machine's drift. The summaries price steps with
the surface at B (``metrics.batch_surface.curve_at``) instead of the batch-1 cost curve, and the ``batch``
section puts E_meas beside its predictions (``selection.batch_analysis``).

``tune --batch`` keeps tune's batch-1 sweep; afterwards it times the surface at every batch size asked
for and k = 0 … k_max, verifying at the source run's per-position acceptance, and predicts E(B, k), the
best k per batch size, the crossover and the schedule.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from specmeter.measuring.run import Measurement, Outcome, close, run_candidates

if TYPE_CHECKING:
    from specmeter.engine.runner import PreparedPrompt, RunState
    from specmeter.engine.surface import SurfaceSampler
    from specmeter.measuring.config import MeasureConfig
    from specmeter.measuring.progress import Reporter
    from specmeter.metrics.batch_surface import CostSurface
    from specmeter.metrics.records import RequestRecord, RunRecord

__all__ = [
    "SURFACE_STEPS_PER_REPEAT",
    "measured_rates",
    "run_bench_batched",
    "surface_batches",
    "surface_steps",
    "tune_batch_section",
]


# Steps per surface point for each --cost-repeats: one step of B rows is a noisier sample than one forward of
# the batch-1 cost curve (it holds the loop's bookkeeping), and on a shared VM the step time drifts by up to
# 30% from one half-minute to the next. Measured with benchmarks/batched_spec.py (32 legal prompts, k = 4):
# at 9 steps per point the wave prediction was off by +8%, −36% and −10% at B = 1, 4, 16; at 27 by −2%, +3%
# and +11%.
SURFACE_STEPS_PER_REPEAT = 3


def surface_steps(cost_repeats: int) -> int:
    """The steps timed per (B, k) point of the cost surface for ``--cost-repeats``."""
    return SURFACE_STEPS_PER_REPEAT * cost_repeats


def surface_batches(batch: int) -> list[int]:
    """1, 2, 4, … below ``batch``, and ``batch``: enough points to price a wave whose batch shrinks."""
    out, b = [], 1
    while b < batch:
        out.append(b)
        b *= 2
    return [*out, batch]


def measured_rates(records: Sequence[RequestRecord], k: int) -> list[float]:
    """Cumulative per-position acceptance of the records so far (0.8^i before there are any), made
    non-increasing: the unconditional rates synthetic verification takes (``metrics.synthetic``)."""
    from specmeter.metrics.acceptance import per_position_acceptance

    measured = [p.cumulative for p in per_position_acceptance(records, positions=k)] if records else []
    if len(measured) < k or any(p is None for p in measured):
        return [0.8 ** (i + 1) for i in range(k)]
    out, last = [], 1.0
    for p in measured:
        last = min(last, float(p or 0.0))  # non-increasing, as synthetic verification requires
        out.append(last)
    return out


def run_bench_batched(
    cfg: MeasureConfig, reporter: Reporter, *, render: Callable[[dict[str, Any]], None] | None = None
) -> Outcome:
    """``bench --batch B``: waves of B, the surface between waves, measured vs predicted; close."""
    from specmeter.engine.batch_runner import run_batched_interleaved, waves
    from specmeter.engine.surface import SurfaceSampler

    batch = cfg.batch[0]
    samplers: dict[str, SurfaceSampler] = {}

    def no_curve(state: RunState[Any], context: Sequence[int]) -> None:
        """The batch-1 cost curve says nothing at B; the surface is timed between the waves instead."""

    def runner(
        state: RunState[Any],
        prompts: Sequence[PreparedPrompt],
        on_record: Callable[[int | None, RequestRecord], None],
        advance: Callable[[int], None],
    ) -> None:
        contexts = [p.ids for p in prompts]
        for draft in {c.draft.info.name: c.draft for c in state.candidates}.values():
            same = [c.draft.info.name == draft.info.name for c in state.candidates]
            ks = [c.k for c, s in zip(state.candidates, same, strict=True) if s]
            slots = {c.k: i for i, (c, s) in enumerate(zip(state.candidates, same, strict=True)) if s}
            # A method's proposer learns from what it sees: the surface gets one of its own (``fresh``).
            timed = draft.fresh() if hasattr(draft, "fresh") else draft

            def rates(k: int, slots: dict[int, int] = slots) -> list[float]:
                return measured_rates(state.per_candidate.get(slots[k], []), k)

            samplers[draft.info.name] = SurfaceSampler(
                state.target.model, timed.model, contexts, batches=surface_batches(batch), ks=[0, *ks],
                rates=rates, max_tokens=max(p.max_tokens for p in prompts),
                repeats=surface_steps(cfg.cost_repeats),
            )  # fmt: skip
        groups = waves(prompts, batch)
        per_wave = -(-sum(s.chunks_left for s in samplers.values()) // max(1, len(groups)))

        def between(w: int) -> None:
            advance(len(groups[w]))
            for _ in range(per_wave):
                pending = [s for s in samplers.values() if not s.done]
                if pending:
                    max(pending, key=lambda s: s.chunks_left).sample()

        run_batched_interleaved(
            state, prompts, batch, seed=cfg.seed, on_record=on_record, on_wave_done=between
        )
        with reporter.status("timing the rest of the cost surface…"):
            for s in samplers.values():
                while not s.done:
                    s.sample()

    def after_runs(m: Measurement) -> None:
        from specmeter.metrics.batch_surface import curve_at

        k_max = max(m.cfg.k)
        for name, sampler in samplers.items():
            curve = curve_at(sampler.surface(), batch, k_max + 1)
            if curve is not None:
                m.state.cost_curves[name] = curve
                m.state.cost_curves.setdefault(m.state.target.info.name, replace(curve, draft_s=0.0))

    m = run_candidates(cfg, reporter, measure=no_curve, after_runs=after_runs, runner=runner)
    return close(m, {"batch": bench_batch_section(m, batch, samplers)}, render=render)


def bench_batch_section(m: Measurement, batch: int, samplers: dict[str, SurfaceSampler]) -> dict[str, Any]:
    """Measured against predicted for every candidate, each draft with its own surface."""
    from specmeter.selection.batch_analysis import analyse_batch_bench

    base = m.state.baseline_run()
    out: dict[str, Any] = {"batch": batch, "candidates": [], "surfaces": {}}
    for name, sampler in samplers.items():
        runs = [
            m.state.candidate_run(i) for i, c in enumerate(m.state.candidates) if c.draft.info.name == name
        ]
        part = analyse_batch_bench(batch, base, runs, sampler.surface())
        out["candidates"] += part["candidates"]
        out["surfaces"][name] = part["surface"]
        out["assumes"], out["waves"] = part["assumes"], part["waves"]
    return out


def tune_batch_section(
    m: Measurement, source: RunRecord, *, k_max: int, reporter: Reporter
) -> dict[str, Any] | None:
    """tune --batch: the surface at every batch size asked for, timed after the sweep, and what it says."""
    from specmeter.engine.surface import measure_cost_surface
    from specmeter.selection.batch_analysis import analyse_batch_tune

    if not m.cfg.batch or not source.requests or m.interrupted:
        return None
    draft = m.drafts[0]
    draft = draft.fresh() if hasattr(draft, "fresh") else draft  # a method's surface: a proposer of its own
    rates = measured_rates(source.requests, source.k)
    rates += [rates[-1] * 0.9 ** (i + 1) for i in range(k_max - len(rates))]  # beyond the source k
    surface: CostSurface
    with reporter.status("timing the cost surface t_step(B, k) in the loop's rhythm…"):
        surface = measure_cost_surface(
            m.state.target.model, draft.model, [p.ids for p in m.prompts], batches=m.cfg.batch,
            ks=range(k_max + 1), rates=rates, max_tokens=max(p.max_tokens for p in m.prompts),
            repeats=surface_steps(m.cfg.cost_repeats),
        )  # fmt: skip
    return analyse_batch_tune(source, surface, k_max=k_max, draft_path=str(draft.info.path))
