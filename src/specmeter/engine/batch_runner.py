"""Baseline and candidates over the same prompts at batch size B: the golden set as B concurrent sequences.

The prompts are cut into *waves* of B consecutive prompts. Every wave is decoded by the baseline and by each
candidate in turn — B sequences together in ``engine.batched``, one run right after the other, in an order
that rotates from wave to wave — so drift of a shared machine hits all of them alike, as prompt-by-prompt
interleaving does at batch 1. In a wave all B rows are prefilled together, so a request's decode time
(first token → last token) holds decode steps only; rows that finish early leave and the batch shrinks for
the wave's last steps (the records say how big each step's batch was). The last wave may be smaller than B.

Conversations run their first turn only (later turns depend on each run's own answers, which would break
the lockstep of a wave); ``state.cut_turns`` counts the turns left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from specmeter.engine.base import BatchedCausalLM
from specmeter.engine.batched import SequenceRequest, decode_batch
from specmeter.engine.loader import LoadedModel
from specmeter.engine.runner import PreparedPrompt, RunState, make_record
from specmeter.engine.speculative import Generation
from specmeter.metrics.records import RequestRecord

__all__ = ["run_batched_interleaved", "waves"]


def waves(prompts: Sequence[PreparedPrompt], batch: int) -> list[list[PreparedPrompt]]:
    """Consecutive groups of ``batch`` prompts (the last one may be smaller)."""
    if batch < 1:
        raise ValueError("batch must be >= 1")
    return [list(prompts[i : i + batch]) for i in range(0, len(prompts), batch)]


def _batched(model: LoadedModel) -> BatchedCausalLM:
    return model.model  # type: ignore[return-value]  # native and transformers models both batch


def run_batched_interleaved(
    state: RunState[LoadedModel],
    prompts: Sequence[PreparedPrompt],
    batch: int,
    *,
    seed: int = 0,
    on_record: Callable[[int | None, RequestRecord], None] | None = None,
    on_wave_done: Callable[[int], None] | None = None,
) -> None:
    """Every wave of ``batch`` prompts with the baseline (index None) and every candidate, interleaved."""
    target = state.target
    slots: list[int | None] = [None, *range(len(state.candidates))]

    def run(
        slot: int | None, group: Sequence[PreparedPrompt], first: int, limit: int | None = None
    ) -> list[Generation]:
        draft = None if slot is None else _batched(state.candidates[slot].draft)
        k = 0 if slot is None else state.candidates[slot].k
        device = target.model.device
        reqs = [
            SequenceRequest(
                p.ids, p.max_tokens if limit is None else min(limit, p.max_tokens), state.params,
                None if state.params.greedy
                else torch.Generator(device=device).manual_seed(seed * 1_000_003 + first + i),
            )
            for i, p in enumerate(group)
        ]  # fmt: skip
        return decode_batch(
            _batched(target), draft, reqs, schedule=k, max_batch=batch, eos_ids=target.eos_ids
        )

    groups = waves(prompts, batch)
    if groups:  # warm-up: allocation and kernel selection at this batch size stay out of the numbers
        for slot in slots:
            run(slot, groups[0], 0, limit=8)
    first = 0
    for w, group in enumerate(groups):
        state.cut_turns += sum(p.turns - 1 for p in group)
        shift = w % len(slots)
        outputs: dict[int | None, list[Generation]] = {}
        for slot in slots[shift:] + slots[:shift]:
            outputs[slot] = run(slot, group, first)
        for slot in slots:  # report in a stable order whatever order they ran in
            for i, (prompt, g) in enumerate(zip(group, outputs[slot], strict=True)):
                base = outputs[None][i]
                matches = None if slot is None or not state.params.greedy else g.output_ids == base.output_ids
                rec = make_record(prompt, g, matches)
                (state.baseline if slot is None else state.per_candidate.setdefault(slot, [])).append(rec)
                if on_record is not None:
                    on_record(slot, rec)
        first += len(group)
        if on_wave_done is not None:
            on_wave_done(w)
