"""Baseline and every (draft, k) through vLLM's offline engine, one engine at a time.

A vLLM engine has one speculative config for its life and holds most of the accelerator's memory, so the
native runner's prompt-by-prompt interleaving is not possible: each run gets its own engine (built, warmed
up on one short request, then every prompt one at a time), and the runs follow one another. Slow drift of
the machine therefore biases E_meas more than with the native engine; the result file says the schedule
was sequential.

Besides the records, each run reports vLLM's own counters over exactly the measured requests (the delta of
``get_metrics()`` around them, warm-up excluded) next to the totals of the records, so anyone can check that
specmeter's α and τ are vLLM's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmeter.engine.runner import PreparedPrompt, RunState, make_record
from specmeter.engine.vllm_backend import (
    EngineRequestStats,
    SpecCounters,
    VllmEngine,
    VllmSettings,
    speculative_config,
)
from specmeter.metrics.latency import percentiles
from specmeter.metrics.records import BASELINE, ModelInfo, RequestRecord

__all__ = ["ModelHandle", "run_sequential"]

MS = 1000.0


@dataclass(frozen=True)
class ModelHandle:
    """A model vLLM will load: where it is, its tokenizer for rendering prompts, and its static facts.

    ``path`` is None for proposers that are not a model directory (n-gram lookup, the target's MTP layers).
    """

    path: Path | None
    tokenizer: Any
    eos_ids: frozenset[int]
    info: ModelInfo
    max_positions: int | None = None


def _recorded(records: Sequence[RequestRecord], k: int) -> dict[str, Any]:
    per_pos = [0] * k
    drafts = drafted = accepted = 0
    for r in records:
        for s in r.steps:
            if s.drafted:
                drafts += 1
            drafted += s.drafted
            accepted += s.accepted
            for i in range(min(s.accepted, k)):
                per_pos[i] += 1
    return {
        "num_drafts": drafts,
        "num_draft_tokens": drafted,
        "num_accepted_tokens": accepted,
        "num_accepted_tokens_per_pos": per_pos,
        "output_tokens": sum(r.output_tokens for r in records),
        "prompt_tokens": sum(r.prompt_tokens for r in records),
    }


def reconcile(
    counters: SpecCounters, records: Sequence[RequestRecord], engine: Sequence[EngineRequestStats], k: int
) -> dict[str, Any]:
    """vLLM's counters and own timings beside what specmeter recorded for the same requests."""
    mine = _recorded(records, k)
    theirs = counters.as_dict()
    keys = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
    counts_match = all(mine[key] == theirs[key] for key in keys) and (
        k == 0 or mine["num_accepted_tokens_per_pos"] == theirs["num_accepted_tokens_per_pos"][:k]
    )

    def ms(values: Sequence[float | None]) -> dict[str, float] | None:
        return percentiles([v for v in values if v is not None], scale=MS)

    compared = [r.matches_baseline for r in records if r.matches_baseline is not None]
    return {
        "vllm_counters": theirs,
        "recorded": mine,
        "counts_match": counts_match,
        "tokens_match": mine["output_tokens"] == counters.generation_tokens,
        "greedy_matches_baseline": [sum(compared), len(compared)] if compared else None,
        "timing": {
            "specmeter_ttft_ms": ms([r.ttft_s for r in records]),
            "vllm_ttft_ms": ms([e.ttft_s for e in engine]),
            "specmeter_latency_ms": ms([r.latency_s for r in records]),
            "vllm_e2e_ms": ms([e.e2e_s for e in engine]),
            "vllm_prefill_ms": ms([e.prefill_s for e in engine]),
            "vllm_decode_ms": ms([e.decode_s for e in engine]),
            "vllm_queued_ms": ms([e.queued_s for e in engine]),
        },
    }


def run_sequential(
    state: RunState[ModelHandle],
    prompts: Sequence[PreparedPrompt],
    settings: VllmSettings,
    *,
    seed: int = 0,
    on_record: Callable[[int | None, RequestRecord], None] | None = None,
    on_request_done: Callable[[], None] | None = None,
    on_run_start: Callable[[str], None] | None = None,
    on_run_done: Callable[[str, dict[str, Any]], None] | None = None,
    synthetic: Sequence[Sequence[float] | None] | None = None,
    ignore_eos: bool = False,
    labels: Sequence[str] | None = None,
) -> None:
    """Baseline first (its outputs are what greedy candidates must match), then each candidate.

    ``synthetic[i]`` forces candidate i's acceptance (vLLM's ``rejection_sample_method: "synthetic"`` with
    these unconditional ``synthetic_acceptance_rates``); its outputs are then not compared with the
    baseline's. ``ignore_eos`` runs every request to its token limit; ``labels`` name the candidates' runs.
    """
    target = state.target
    assert target.path is not None
    params = state.params
    need = max((len(p.ids) + p.max_tokens for p in prompts), default=0)
    k_max = max((c.k for c in state.candidates), default=0)
    # The engine's context must hold the longest request plus the draft positions of its last step (the
    # caller has checked that this fits the target's own context).
    context = need + k_max + 1
    base_out: dict[str, tuple[int, ...]] = {}
    for slot in [None, *range(len(state.candidates))]:
        cand = None if slot is None else state.candidates[slot]
        label = BASELINE if cand is None else cand.label if labels is None else labels[slot]  # type: ignore[index]
        spec = None
        forced = None if slot is None or synthetic is None else synthetic[slot]
        if cand is not None:
            draft = None if cand.draft.path is None else str(cand.draft.path)
            spec = speculative_config(settings.method, draft, cand.k)
            if forced is not None:
                spec.update(rejection_sample_method="synthetic", synthetic_acceptance_rates=list(forced))
        if on_run_start is not None:
            on_run_start(label)
        with VllmEngine.start(target.path, settings, spec, max_model_len=context) as engine:
            if prompts:  # first requests pay for allocation and kernel selection
                engine.generate(
                    prompts[0].ids, max_tokens=min(8, prompts[0].max_tokens), temperature=params.temperature,
                    top_p=params.top_p, eos_ids=target.eos_ids, seed=seed, ignore_eos=ignore_eos,
                )  # fmt: skip
            before = engine.counters()
            records: list[RequestRecord] = []
            stats: list[EngineRequestStats] = []
            for n, prompt in enumerate(prompts):
                g, engine_stats = engine.generate(
                    prompt.ids, max_tokens=prompt.max_tokens, temperature=params.temperature,
                    top_p=params.top_p, eos_ids=target.eos_ids, seed=seed * 1_000_003 + n,
                    ignore_eos=ignore_eos,
                )  # fmt: skip
                matches = None
                if cand is not None and forced is None and params.greedy and prompt.id in base_out:
                    matches = g.output_ids == base_out[prompt.id]
                rec = make_record(prompt, g, matches)
                if cand is None:
                    base_out[prompt.id] = g.output_ids
                    state.baseline.append(rec)
                else:
                    state.per_candidate.setdefault(slot, []).append(rec)  # type: ignore[arg-type]
                records.append(rec)
                stats.append(engine_stats)
                if on_record is not None:
                    on_record(slot, rec)
                if on_request_done is not None:
                    on_request_done()
            delta = engine.counters().minus(before)
        if on_run_done is not None:
            on_run_done(label, reconcile(delta, records, stats, 0 if cand is None else cand.k))
