"""Synthetic acceptance (vLLM's semantics), the cost surface timed in the loop, and waves of B."""

from __future__ import annotations

import math

import pytest

from specmeter.engine.batch_runner import run_batched_interleaved, waves
from specmeter.engine.batched import SequenceRequest, conditional_rates, decode_batch
from specmeter.engine.loader import load_model
from specmeter.engine.runner import Candidate, PreparedPrompt, RunState
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.surface import SurfaceSampler
from specmeter.metrics.acceptance import per_position_acceptance
from tiny_models import sample_corpus


@pytest.fixture(scope="module")
def models(tiny):
    return load_model(tiny.target), load_model(tiny.draft)


@pytest.fixture(scope="module")
def prompts(models) -> list[list[int]]:
    tok = models[0].tokenizer
    return [tok(text)["input_ids"][: 3 + i % 9] for i, text in enumerate(sample_corpus(1)[:10])]


def test_conditional_rates_follow_vllm() -> None:
    assert conditional_rates([0.8, 0.4, 0.0, 0.0]) == [0.8, 0.5, 0.0, 0.0]
    with pytest.raises(ValueError, match="non-increasing"):
        conditional_rates([0.5, 0.6])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        conditional_rates([1.2])


def test_synthetic_acceptance_matches_the_requested_rates(models, prompts) -> None:
    """The records' cumulative per-position acceptance is the requested unconditional rate, within 4 SE."""
    target, _ = models
    rates = [0.9, 0.6, 0.45, 0.2]
    # Even a random draft is "accepted" at these rates: the verifier never looks at what it proposed.
    draft = models[1]
    reqs = [SequenceRequest(prompts[i % len(prompts)], 40) for i in range(48)]
    gens = decode_batch(
        target.model, draft.model, reqs, schedule=4, max_batch=8, eos_ids=set(), synthetic=rates
    )
    positions = per_position_acceptance([s for g in gens for s in g.steps], positions=4)
    for want, got in zip(rates, positions, strict=True):
        n = got.count
        assert n > 200 and got.cumulative is not None
        assert abs(got.cumulative - want) < 4 * math.sqrt(want * (1 - want) / n) + 1e-9


def test_surface_has_every_point_and_leaves_the_models_usable(models, prompts) -> None:
    target, draft = models
    ref = decode_batch(target.model, None, [SequenceRequest(prompts[0], 12)], schedule=0, max_batch=1,
                       eos_ids=set())  # fmt: skip
    sampler = SurfaceSampler(
        target.model, draft.model, prompts, batches=[1, 3], ks=[0, 2], rates=lambda k: [0.8, 0.6],
        max_tokens=16, repeats=4,
    )  # fmt: skip
    while not sampler.done:
        sampler.sample()
    surface = sampler.surface()
    assert {(p.batch, p.k) for p in surface.points} == {(1, 0), (1, 2), (3, 0), (3, 2)}
    for p in surface.points:
        assert p.steps == 4 and p.step_s > 0 and p.verify_s > 0 and p.step_spread >= 0
    for (b, k), timings in sampler.timings.items():
        for t in timings:
            # Each step's clock encloses its drafting and its verification (and the loop's bookkeeping);
            # medians of the parts need not add up to the median step, so this is checked step by step.
            assert (t.batch, t.depth) == (b, k) and t.step_s >= t.draft_s + t.verify_s
            assert t.draft_s > 0 if k else t.draft_s < t.verify_s  # k = 0: no draft forward at all
    assert surface.t_target(3, 3) == surface.point(3, 2).verify_s  # type: ignore[union-attr]
    assert surface.t_draft(1) == pytest.approx(surface.point(1, 2).draft_s / 2)  # type: ignore[union-attr]
    after = decode_batch(target.model, None, [SequenceRequest(prompts[0], 12)], schedule=0, max_batch=1,
                         eos_ids=set())  # fmt: skip
    assert after[0].output_ids == ref[0].output_ids


def test_sampler_chunks_add_up_and_ask_for_rates(models, prompts) -> None:
    target, draft = models
    asked: list[int] = []

    def rates(k: int) -> list[float]:
        asked.append(k)
        return [0.7] * k

    sampler = SurfaceSampler(target.model, draft.model, prompts, batches=[2], ks=[0, 3], rates=rates,
                             max_tokens=12, repeats=5, chunk=2)  # fmt: skip
    assert sampler.chunks_left == 6  # 3 chunks (2 + 2 + 1 steps) per cell
    while not sampler.done:
        sampler.sample()
    assert set(asked) == {3}  # k = 0 verifies nothing
    assert [p.steps for p in sampler.surface().points] == [5, 5]


def test_waves_interleave_baseline_and_candidates(models, tiny) -> None:
    target, draft = models
    tok = target.tokenizer
    prepared = [
        PreparedPrompt(f"p{i}", "c", tuple(tok(t)["input_ids"][: 4 + i]), 10)
        for i, t in enumerate(sample_corpus(1)[:5])
    ]
    assert [len(w) for w in waves(prepared, 2)] == [2, 2, 1]
    state = RunState(
        target=target, candidates=[Candidate(draft, 2), Candidate(draft, 4)], params=SamplingParams()
    )
    seen: list[tuple[int | None, str]] = []
    done: list[int] = []
    run_batched_interleaved(
        state, prepared, 2, on_record=lambda slot, rec: seen.append((slot, rec.id)), on_wave_done=done.append
    )
    assert done == [0, 1, 2]
    assert [r.id for r in state.baseline] == [p.id for p in prepared]
    for i in (0, 1):
        recs = state.per_candidate[i]
        assert [r.id for r in recs] == [p.id for p in prepared]
        assert all(r.matches_baseline for r in recs)  # greedy: batched speculation is lossless
        assert {s.batch for r in recs for s in r.steps} <= {1, 2}
    assert len(seen) == 15
