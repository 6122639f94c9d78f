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
from dataclasses import dataclass

import torch

from specmeter.engine.base import BatchedCausalLM
from specmeter.engine.batched import SequenceRequest, decode_batch
from specmeter.engine.loader import LoadedModel
from specmeter.engine.proposers.proposer import Proposer
from specmeter.engine.runner import PreparedPrompt, RunState, make_record
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import Generation
from specmeter.metrics.records import RequestRecord

__all__ = ["WaveSlot", "run_batched_interleaved", "run_waves", "waves"]


def waves(prompts: Sequence[PreparedPrompt], batch: int) -> list[list[PreparedPrompt]]:
    """Consecutive groups of ``batch`` prompts (the last one may be smaller)."""
    if batch < 1:
        raise ValueError("batch must be >= 1")
    return [list(prompts[i : i + batch]) for i in range(0, len(prompts), batch)]


def _batched(model: LoadedModel) -> BatchedCausalLM:
    return model.model  # type: ignore[return-value]  # native and transformers models both batch


@dataclass(frozen=True)
class WaveSlot:
    """One run of the waves: a draft and k (none and 0: the baseline), optionally synthetic acceptance.

    ``synthetic`` are vLLM-style unconditional per-position rates (``engine.batched``): acceptance is
    forced, so the slot's outputs are not the target's text and never compared with the baseline's.
    """

    draft: LoadedModel | None = None
    k: int = 0
    synthetic: tuple[float, ...] | None = None


def run_waves(
    target: LoadedModel,
    slots: Sequence[WaveSlot],
    prompts: Sequence[PreparedPrompt],
    batch: int,
    *,
    params: SamplingParams,
    seed: int = 0,
    ignore_eos: bool = False,
    on_outputs: Callable[[int, PreparedPrompt, Generation, Generation], None],
    on_wave_done: Callable[[int], None] | None = None,
) -> int:
    """Every wave of ``batch`` prompts through every slot, the order rotating wave by wave.

    ``on_outputs(slot, prompt, generation, baseline_generation)`` gets each request once its wave has run
    in every slot; ``slots[0]`` is the reference the others are paired with (the baseline). With
    ``ignore_eos`` every request runs to its token limit, so all slots produce the same number of tokens.
    Returns the conversation turns left out (waves run first turns only).
    """
    eos = frozenset() if ignore_eos else target.eos_ids

    def run(
        slot: WaveSlot, group: Sequence[PreparedPrompt], first: int, limit: int | None = None
    ) -> list[Generation]:
        device = target.model.device
        reqs = [
            SequenceRequest(
                p.ids, p.max_tokens if limit is None else min(limit, p.max_tokens), params,
                None if params.greedy and slot.synthetic is None
                else torch.Generator(device=device).manual_seed(seed * 1_000_003 + first + i),
            )
            for i, p in enumerate(group)
        ]  # fmt: skip
        draft = None if slot.draft is None else _batched(slot.draft)
        return decode_batch(
            _batched(target), draft, reqs, schedule=slot.k, max_batch=batch, eos_ids=eos,
            synthetic=slot.synthetic,
        )  # fmt: skip

    groups = waves(prompts, batch)
    if groups:  # warm-up: allocation and kernel selection at this batch size stay out of the numbers
        for slot in slots:
            run(slot, groups[0], 0, limit=8)
            if slot.draft is not None and isinstance(slot.draft.model, Proposer):
                slot.draft.model.forget()  # the warm-up's responses are not earlier requests (suffix)
    first, cut = 0, 0
    order = list(range(len(slots)))
    for w, group in enumerate(groups):
        cut += sum(p.turns - 1 for p in group)
        shift = w % len(slots)
        outputs: dict[int, list[Generation]] = {}
        for i in order[shift:] + order[:shift]:
            outputs[i] = run(slots[i], group, first)
        for i in order:  # report in a stable order whatever order they ran in
            for j, (prompt, g) in enumerate(zip(group, outputs[i], strict=True)):
                on_outputs(i, prompt, g, outputs[0][j])
        first += len(group)
        if on_wave_done is not None:
            on_wave_done(w)
    return cut


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
    slots = [WaveSlot(), *(WaveSlot(c.draft, c.k) for c in state.candidates)]

    def on_outputs(i: int, prompt: PreparedPrompt, g: Generation, base: Generation) -> None:
        slot = None if i == 0 else i - 1
        matches = None if slot is None or not state.params.greedy else g.output_ids == base.output_ids
        rec = make_record(prompt, g, matches)
        (state.baseline if slot is None else state.per_candidate.setdefault(slot, [])).append(rec)
        if on_record is not None:
            on_record(slot, rec)

    state.cut_turns += run_waves(
        state.target, slots, prompts, batch, params=state.params, seed=seed, on_outputs=on_outputs,
        on_wave_done=on_wave_done,
    )  # fmt: skip
