"""Run a baseline and several (draft, k) candidates over the same prompts, interleaved prompt by prompt.

Interleaving is what makes E_meas honest on a shared, noisy machine: for every prompt the baseline and each
candidate run back to back (in an order that rotates from prompt to prompt), so slow drift of the machine
hits all of them alike. Records are handed to a callback the moment they exist, so an interrupted run keeps
everything it finished.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

import torch

from specmeter.engine.base import CausalLM
from specmeter.engine.costs import measure_cost_curve
from specmeter.engine.loader import LoadedModel
from specmeter.engine.proposers.proposer import DraftModelProposer, Proposer
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import Generation, speculative_decode
from specmeter.metrics.records import CostCurve, ModelInfo, RequestRecord, RunRecord, run_label


class ModelLike(Protocol):
    """What the run bookkeeping needs of a model: the native engine's LoadedModel, or a vLLM model handle."""

    @property
    def info(self) -> ModelInfo: ...

    @property
    def tokenizer(self) -> Any: ...

    @property
    def max_positions(self) -> int | None: ...


M = TypeVar("M", bound=ModelLike)


@dataclass(frozen=True)
class Candidate(Generic[M]):
    draft: M
    k: int

    @property
    def label(self) -> str:
        return run_label(self.draft.info.name, self.k)


@dataclass(frozen=True)
class PreparedPrompt:
    """A golden-set prompt as token ids. A conversation has ``turn_ids`` (the request id of each turn) and
    ``next_turn``: given the output ids of the turns so far (the model's own answers), the ids of the next
    turn's prompt."""

    id: str
    category: str
    ids: tuple[int, ...]
    max_tokens: int
    turn_ids: tuple[str, ...] = ()
    next_turn: Callable[[Sequence[Sequence[int]]], tuple[int, ...]] | None = None

    @property
    def turns(self) -> int:
        return max(1, len(self.turn_ids))


@dataclass
class RunState(Generic[M]):
    """Records collected so far; ``*_run()`` turn them into RunRecords at any moment (even mid-run)."""

    target: M
    candidates: Sequence[Candidate[M]]
    params: SamplingParams
    baseline: list[RequestRecord] = field(default_factory=list)
    per_candidate: dict[int, list[RequestRecord]] = field(default_factory=dict)
    cost_curves: dict[str, CostCurve] = field(default_factory=dict)
    cut_turns: int = 0  # conversation turns not run because the conversation outgrew the context

    def baseline_run(self) -> RunRecord:
        return RunRecord(
            target=self.target.info,
            draft=None,
            k=0,
            temperature=self.params.temperature,
            top_p=self.params.top_p,
            requests=tuple(self.baseline),
            cost_curve=self.cost_curves.get(self.target.info.name),
        )

    def candidate_run(self, index: int) -> RunRecord:
        c = self.candidates[index]
        return RunRecord(
            target=self.target.info,
            draft=c.draft.info,
            k=c.k,
            temperature=self.params.temperature,
            top_p=self.params.top_p,
            requests=tuple(self.per_candidate.get(index, [])),
            cost_curve=self.cost_curves.get(c.draft.info.name),
        )


def make_record(prompt: PreparedPrompt, g: Generation, matches: bool | None) -> RequestRecord:
    return RequestRecord(
        id=prompt.id,
        category=prompt.category,
        prompt_tokens=len(prompt.ids),
        output_tokens=len(g.output_ids),
        latency_s=g.latency_s,
        ttft_s=g.ttft_s,
        prefill_s=g.prefill_s,
        steps=g.steps,
        emissions=g.emissions,
        output_ids=g.output_ids,
        finish_reason=g.finish_reason,
        matches_baseline=matches,
    )


def measure_costs(state: RunState[LoadedModel], context: Sequence[int], repeats: int = 9) -> None:
    """One cost curve per draft (t_T(n) up to its k+1, t_D(1)), plus the target's own up to max k+1."""
    k_max = max((c.k for c in state.candidates), default=1)
    curve = measure_cost_curve(state.target.model, None, context, k_max + 1, repeats)
    state.cost_curves[state.target.info.name] = curve
    for c in state.candidates:
        name = c.draft.info.name
        if name not in state.cost_curves:
            draft = forward_model(c.draft.model)
            if draft is None:  # a model-free method runs no forward: t_D(1) = 0 (E_meas times its lookups)
                state.cost_curves[name] = replace(curve, draft_s=0.0, draft_spread=0.0)
                continue
            # t_D(1) in the loop's rhythm: groups of k draft forwards, k the largest this draft runs with.
            k = max(o.k for o in state.candidates if o.draft.info.name == name)
            d = measure_cost_curve(state.target.model, draft, context, k + 1, repeats)
            state.cost_curves[name] = CostCurve(
                target_s=curve.target_s,
                draft_s=d.draft_s,
                target_spread=curve.target_spread,
                draft_spread=d.draft_spread,
                repeats=repeats,
            )


def forward_model(draft: CausalLM | Proposer) -> CausalLM | None:
    """The model whose forwards the cost curve times as t_D(1): a draft model, or the one a
    ``DraftModelProposer`` wraps (``layers:n``'s first layers); None for any other proposer (model-free
    methods: t_D(1) = 0). A proposer that runs a model of another shape (an EAGLE head) needs its own timing
    here before its E_cal can be trusted; E_meas times it end to end either way."""
    if not isinstance(draft, Proposer):
        return draft
    return draft.model if isinstance(draft, DraftModelProposer) else None


def run_interleaved(
    state: RunState[LoadedModel],
    prompts: Sequence[PreparedPrompt],
    *,
    seed: int = 0,
    on_record: Callable[[int | None, RequestRecord], None] | None = None,
    on_prompt_done: Callable[[int], None] | None = None,
) -> None:
    """Decode every prompt with the baseline (index None) and every candidate (index i), interleaved."""
    target = state.target
    slots: list[int | None] = [None, *range(len(state.candidates))]
    if prompts:  # warm-up: first calls pay for allocation and kernel selection; keep that out of the numbers
        for slot in slots:
            draft = None if slot is None else state.candidates[slot].draft.model
            k = 0 if slot is None else state.candidates[slot].k
            speculative_decode(
                target.model, draft, prompts[0].ids, k=k, params=state.params,
                max_tokens=min(8, prompts[0].max_tokens), eos_ids=target.eos_ids,
                generator=torch.Generator().manual_seed(seed),
            )  # fmt: skip
        for c in state.candidates:  # the warm-up's response is not an earlier request (suffix decoding)
            if isinstance(c.draft.model, Proposer):
                c.draft.model.forget()
    k_max = max((c.k for c in state.candidates), default=0)
    for n, prompt in enumerate(prompts):
        shift = n % len(slots)
        # A conversation: every slot replays it with its own answers (turn t's prompt holds them), turn by
        # turn, the slots interleaved within each turn as single prompts are.
        answers: dict[int | None, list[tuple[int, ...]]] = {slot: [] for slot in slots}
        for turn in range(prompt.turns):
            ids = {s: prompt.ids if turn == 0 else _next_ids(prompt, answers[s]) for s in slots}
            context = target.max_positions
            if context is not None and any(
                len(v) + prompt.max_tokens + k_max + 1 > context for v in ids.values()
            ):
                state.cut_turns += prompt.turns - turn  # the conversation outgrew the context: stop here
                break
            outputs: dict[int | None, Generation] = {}
            for slot in slots[shift:] + slots[:shift]:
                draft = None if slot is None else state.candidates[slot].draft.model
                k = 0 if slot is None else state.candidates[slot].k
                gen = torch.Generator(device=target.model.device).manual_seed(
                    seed * 1_000_003 + n + 7919 * turn
                )
                outputs[slot] = speculative_decode(
                    target.model, draft, ids[slot], k=k, params=state.params, max_tokens=prompt.max_tokens,
                    eos_ids=target.eos_ids, generator=gen,
                )  # fmt: skip
            base = outputs[None]
            for slot in slots:  # report in a stable order whatever order they ran in
                g = outputs[slot]
                # Equal outputs mean something only for equal prompts (earlier turns matched too).
                same = ids[slot] == ids[None]
                greedy = state.params.greedy
                matches = None if slot is None or not greedy or not same else g.output_ids == base.output_ids
                rec = make_record(prompt, g, matches)
                if turn > 0:
                    rec = dataclasses.replace(rec, id=prompt.turn_ids[turn], prompt_tokens=len(ids[slot]))
                answers[slot].append(tuple(g.output_ids))
                (state.baseline if slot is None else state.per_candidate.setdefault(slot, [])).append(rec)
                if on_record is not None:
                    on_record(slot, rec)
        if on_prompt_done is not None:
            on_prompt_done(n)


def _next_ids(prompt: PreparedPrompt, answers: Sequence[Sequence[int]]) -> tuple[int, ...]:
    assert prompt.next_turn is not None, f"prompt {prompt.id!r} has {prompt.turns} turns but no next_turn"
    return prompt.next_turn(answers)
