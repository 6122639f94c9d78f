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

import statistics
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
    from specmeter.engine.proposers.proposer import ModelFreeProposer
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

            # A model-free method drafts only where it finds a match: a step at exactly k drafts comes
            # rarely, and timing one would decode for minutes. Its surface holds the plain steps only; its
            # price at B is replay/select --costs' (pricing: the target's step plus its lookup time).
            free = isinstance(timed.model, ModelFreeProposer)
            samplers[draft.info.name] = SurfaceSampler(
                state.target.model, None if free else timed.model, contexts, batches=surface_batches(batch),
                ks=[0] if free else [0, *ks],
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
            surface = sampler.surface()
            if not any(p.k > 0 for p in surface.points):
                continue  # a model-free method's plain steps only: no price for its drafting steps
            curve = curve_at(surface, batch, k_max + 1)
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
    m: Measurement, source: RunRecord, *, k_max: int, reporter: Reporter, others: Sequence[Any] = ()
) -> dict[str, Any] | None:
    """tune --batch: the surface at every batch size asked for, timed after the sweep, and what it says;
    with ``others`` (more --draft candidates) each one's own proposing cost beside it (``surfaces``,
    ``lookups``: what ``replay``/``select --costs`` price each candidate with, ``pricing.book``)."""
    from specmeter.engine.surface import measure_cost_surface
    from specmeter.selection.batch_analysis import analyse_batch_tune, surface_section

    if not m.cfg.batch or not source.requests or m.interrupted:
        return None
    draft = m.drafts[0]
    draft = draft.fresh() if hasattr(draft, "fresh") else draft  # a method's surface: a proposer of its own
    rates = measured_rates(source.requests, source.k)
    rates += [rates[-1] * 0.9 ** (i + 1) for i in range(k_max - len(rates))]  # beyond the source k
    surface: CostSurface
    prompts = [p.ids for p in m.prompts]
    max_tokens = max(p.max_tokens for p in m.prompts)
    with reporter.status("timing the cost surface t_step(B, k) in the loop's rhythm…"):
        surface = measure_cost_surface(
            m.state.target.model, draft.model, prompts, batches=m.cfg.batch,
            ks=range(k_max + 1), rates=rates, max_tokens=max_tokens,
            repeats=surface_steps(m.cfg.cost_repeats),
        )  # fmt: skip
    section = analyse_batch_tune(source, surface, k_max=k_max, draft_path=str(draft.info.path))
    candidates = [draft, *[load_other(m, o) for o in others]] if others else []
    if candidates:
        surfaces, lookups, timed = candidate_costs(m, candidates, surface, rates, k_max, reporter)
        section["surfaces"] = {name: surface_section(s) for name, s in surfaces.items()}
        section["lookups"] = lookups
        section["timed"] = timed
    return section


def load_other(m: Measurement, spec: Any) -> Any:
    """A further tune --draft candidate (its proposing cost is timed). A method is built on the run's own
    target, whose forwards it times and reads (an EAGLE head sets the target's hidden-state capture,
    ``layers:n`` runs its first layers); a draft directory is loaded as the run loads drafts."""
    from specmeter.measuring.models import load_method, load_models
    from specmeter.methods import MethodSpec

    if isinstance(spec, MethodSpec):
        return load_method(spec, m.state.target)
    _, loaded = load_models(replace(m.cfg, drafts=(spec,)))
    return loaded[0]


def candidate_costs(
    m: Measurement,
    candidates: Sequence[Any],
    first: CostSurface,
    rates: Sequence[float],
    k_max: int,
    reporter: Reporter,
) -> tuple[dict[str, CostSurface], dict[str, dict[str, Any]], dict[str, str]]:
    """Each candidate's own proposing cost: a surface timed with it in the loop (a model: draft, head,
    ``layers:n``), or its host lookup time per row and step (a model-free method), timed in the loop too.
    Returns (surfaces by name, lookups by name, how each was timed)."""
    from specmeter.engine.proposers.proposer import ModelFreeProposer
    from specmeter.engine.surface import measure_cost_surface, measure_lookup_time

    surfaces: dict[str, CostSurface] = {}
    lookups: dict[str, dict[str, Any]] = {}
    timed: dict[str, str] = {}
    prompts = [p.ids for p in m.prompts]
    max_tokens = max(p.max_tokens for p in m.prompts)
    target = m.state.target.model
    for i, cand in enumerate(candidates):
        name = cand.info.name
        model = cand.fresh().model if hasattr(cand, "fresh") else cand.model
        if isinstance(model, ModelFreeProposer):
            with reporter.status(f"timing {name}'s lookups in the loop…"):
                got = measure_lookup_time(
                    target, model, prompts, batches=m.cfg.batch, k=k_max, max_tokens=max_tokens,
                    eos_ids=m.state.target.eos_ids, steps=surface_steps(m.cfg.cost_repeats),
                )  # fmt: skip
            lookups[name] = {
                "per_row_ms": statistics.median([t for t, _, _ in got.values()]) * 1000.0 if got else 0.0,
                "by_batch": {str(b): {"per_row_ms": t * 1000.0, "spread_ms": s * 1000.0, "steps": n}
                             for b, (t, s, n) in got.items()},
            }  # fmt: skip
            timed[name] = "host lookup per row and step, in the loop (greedy, the workload's prompts)"
            continue
        if i == 0:
            surfaces[name] = first
        else:
            with reporter.status(f"timing {name}'s proposing cost t_step(B, k) in the loop…"):
                surfaces[name] = measure_cost_surface(
                    target, model, prompts, batches=m.cfg.batch, ks=range(k_max + 1), rates=rates,
                    max_tokens=max_tokens, repeats=surface_steps(m.cfg.cost_repeats),
                )  # fmt: skip
        timed[name] = "its own surface: its proposing and the target's verification, in the loop"
    return surfaces, lookups, timed
