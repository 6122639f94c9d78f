"""Baseline and candidates over the same prompts at batch size B: the golden set as B concurrent sequences.

The prompts are cut into *waves* of B consecutive prompts. Every wave is decoded by the baseline and by each
candidate in turn — B sequences together in ``engine.batched``, one run right after the other, in an order
that rotates from wave to wave — so drift of a shared machine hits all of them alike, as prompt-by-prompt
interleaving does at batch 1. In a wave all B rows are prefilled together, so a request's decode time
(first token → last token) holds decode steps only. The last wave may be smaller than B.

What happens when a row finishes before the others:

* ``keep_full`` (``bench --batch``): the batch stays at B, as an engine with continuous batching under
  steady load keeps it. *Background* rows take the freed rows — the golden set's other prompts, from the
  one after the wave on, cyclically — until every request of the wave has finished; they are then dropped.
  Their outputs are not recorded, and a proposer that learns across requests (suffix decoding) forgets
  them (``Proposer.discard``), so no request is drafted from a response it has not yet "seen". The live
  rows' clocks stop while a background row is prefilled (``BatchedDecoder(pause_for_joins=True)``), so a
  request's decode time still holds decode steps only. The last wave is filled to B too.
* otherwise (``whatif``'s synthetic runs, where every request runs to the same length): the row leaves and
  the batch shrinks for the wave's last steps.

Either way the records say how big each step's batch was. Why keep it full: on a CPU a step of B − 1 rows
can cost more than one of B (measured on the bundled target: 13.7 ms at 3 rows, 12.0 ms at 4), and a
shrinking wave prices the baseline's many cheap steps differently from speculation's few wide ones; the
cost surface and ``select``'s prediction are for B rows kept live.

Conversations run their first turn only (later turns depend on each run's own answers, which would break
the lockstep of a wave); ``state.cut_turns`` counts the turns left out.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, replace

import torch

from specmeter.engine.base import BatchedCausalLM
from specmeter.engine.batched import BatchedDecoder, SequenceRequest, decode_batch
from specmeter.engine.loader import LoadedModel
from specmeter.engine.proposers.proposer import Proposer
from specmeter.engine.runner import PreparedPrompt, RunState, make_record
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import Generation
from specmeter.metrics.records import RequestRecord

__all__ = ["WaveSlot", "decode_kept_full", "run_batched_interleaved", "run_waves", "waves"]


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
    keep_full: bool = False,
) -> int:
    """Every wave of ``batch`` prompts through every slot, the order rotating wave by wave.

    ``on_outputs(slot, prompt, generation, baseline_generation)`` gets each request once its wave has run
    in every slot; ``slots[0]`` is the reference the others are paired with (the baseline). With
    ``ignore_eos`` every request runs to its token limit, so all slots produce the same number of tokens.
    ``keep_full``: background rows keep the batch at ``batch`` (module docstring). Returns the conversation
    turns left out (waves run first turns only).
    """
    eos = frozenset() if ignore_eos else target.eos_ids
    device = target.model.device

    def request(
        slot: WaveSlot, p: PreparedPrompt, n: int, limit: int | None, background: bool = False
    ) -> SequenceRequest:
        generator = (
            None if params.greedy and slot.synthetic is None
            else torch.Generator(device=device).manual_seed(seed * 1_000_003 + n)
        )  # fmt: skip
        tokens = p.max_tokens if limit is None else min(limit, p.max_tokens)
        return SequenceRequest(p.ids, tokens, params, generator, background=background)

    def run(
        slot: WaveSlot, group: Sequence[PreparedPrompt], first: int, limit: int | None = None
    ) -> list[Generation]:
        reqs = [request(slot, p, first + i, limit) for i, p in enumerate(group)]
        draft = None if slot.draft is None else _batched(slot.draft)
        # Background prompts: the ones after the wave, then the ones before it (none in the wave itself).
        others = [*prompts[first + len(group) :], *prompts[:first]] if keep_full and batch > 1 else []
        if not others:
            return decode_batch(
                _batched(target), draft, reqs, schedule=slot.k, max_batch=batch, eos_ids=eos,
                synthetic=slot.synthetic,
            )  # fmt: skip
        background = (
            request(slot, others[j % len(others)], len(prompts) + j, limit, background=True)
            for j in itertools.count()
        )  # seeds past every measured request's
        return decode_kept_full(
            _batched(target), draft, reqs, background, batch=batch, eos_ids=eos, k=slot.k,
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


def decode_kept_full(
    target: BatchedCausalLM,
    draft: BatchedCausalLM | Proposer | None,
    requests: Sequence[SequenceRequest],
    background: Iterator[SequenceRequest],
    *,
    batch: int,
    eos_ids: Collection[int],
    k: int,
    synthetic: Sequence[float] | None = None,
) -> list[Generation]:
    """``requests`` decoded with ``batch`` rows live until the last of them finishes: whenever a row is free
    and nothing waits, the next ``background`` request takes it. Background generations are dropped (those
    still live at the end are abandoned). The live rows' clocks stop while joiners are prefilled.
    Generations come back in the order of ``requests``; the first one that failed raises."""
    decoder = BatchedDecoder(
        target, draft, schedule=k, max_batch=batch, eos_ids=eos_ids, synthetic=synthetic,
        pause_for_joins=True,
    )  # fmt: skip
    for i, r in enumerate(requests):
        decoder.add(replace(r, tag=i))
    results: dict[int, Generation] = {}
    try:
        while len(results) < len(requests):
            while decoder.free_rows > 0:
                decoder.add(replace(next(background), tag=None))
            for tag, g in decoder.step():
                if tag is not None:
                    results[tag] = g
            failed = [e for tag, e in decoder.errors.items() if tag is not None]
            if failed:  # as decode_batch: a caller of the whole wave gets the first failure
                raise failed[0]
    finally:
        decoder.abandon()
    return [results[i] for i in range(len(requests))]


def run_batched_interleaved(
    state: RunState[LoadedModel],
    prompts: Sequence[PreparedPrompt],
    batch: int,
    *,
    seed: int = 0,
    on_record: Callable[[int | None, RequestRecord], None] | None = None,
    on_wave_done: Callable[[int], None] | None = None,
) -> None:
    """Every wave of ``batch`` prompts with the baseline (index None) and every candidate, interleaved; the
    batch kept at ``batch`` rows by background requests (``keep_full``, the module docstring)."""
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
        on_wave_done=on_wave_done, keep_full=True,
    )  # fmt: skip
