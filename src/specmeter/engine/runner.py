"""Run a baseline and several (draft, k) candidates over the same prompts, interleaved prompt by prompt.

Interleaving is what makes E_meas honest on a shared, noisy machine: for every prompt the baseline and each
candidate run back to back (in an order that rotates from prompt to prompt), so slow drift of the machine
hits all of them alike. Records are handed to a callback the moment they exist, so an interrupted run keeps
everything it finished.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import torch

from specmeter.engine.costs import measure_cost_curve
from specmeter.engine.loader import LoadedModel
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
    id: str
    category: str
    ids: tuple[int, ...]
    max_tokens: int


@dataclass
class RunState(Generic[M]):
    """Records collected so far; ``*_run()`` turn them into RunRecords at any moment (even mid-run)."""

    target: M
    candidates: Sequence[Candidate[M]]
    params: SamplingParams
    baseline: list[RequestRecord] = field(default_factory=list)
    per_candidate: dict[int, list[RequestRecord]] = field(default_factory=dict)
    cost_curves: dict[str, CostCurve] = field(default_factory=dict)

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
            # t_D(1) in the loop's rhythm: groups of k draft forwards, k the largest this draft runs with.
            k = max(o.k for o in state.candidates if o.draft.info.name == name)
            d = measure_cost_curve(state.target.model, c.draft.model, context, k + 1, repeats)
            state.cost_curves[name] = CostCurve(
                target_s=curve.target_s,
                draft_s=d.draft_s,
                target_spread=curve.target_spread,
                draft_spread=d.draft_spread,
                repeats=repeats,
            )


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
    for n, prompt in enumerate(prompts):
        shift = n % len(slots)
        outputs: dict[int | None, Generation] = {}
        for slot in slots[shift:] + slots[:shift]:
            draft = None if slot is None else state.candidates[slot].draft.model
            k = 0 if slot is None else state.candidates[slot].k
            gen = torch.Generator(device=target.model.device).manual_seed(seed * 1_000_003 + n)
            outputs[slot] = speculative_decode(
                target.model, draft, prompt.ids, k=k, params=state.params, max_tokens=prompt.max_tokens,
                eos_ids=target.eos_ids, generator=gen,
            )  # fmt: skip
        base = outputs[None]
        for slot in slots:  # report in a stable order whatever order they ran in
            g = outputs[slot]
            matches = None if slot is None or not state.params.greedy else g.output_ids == base.output_ids
            rec = make_record(prompt, g, matches)
            (state.baseline if slot is None else state.per_candidate.setdefault(slot, [])).append(rec)
            if on_record is not None:
                on_record(slot, rec)
        if on_prompt_done is not None:
            on_prompt_done(n)
