"""bench --batch's waves kept at B rows: background requests fill freed rows, leave nothing behind, and the
live rows' clocks stop while joiners are prefilled."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

import specmeter.engine.batched as batched
from specmeter.engine.batch_runner import decode_kept_full
from specmeter.engine.batched import BatchedDecoder, SequenceRequest, decode_batch
from specmeter.engine.loader import load_model
from specmeter.engine.proposers.suffix import SuffixProposer
from tiny_models import sample_corpus

MAX = 16


@pytest.fixture(scope="module")
def target(tiny):
    return load_model(tiny.target)


@pytest.fixture(scope="module")
def prompts(target) -> list[list[int]]:
    tok = target.tokenizer
    return [tok(text)["input_ids"][: 3 + (i * 5) % 17] for i, text in enumerate(sample_corpus(2)[:10])]


def _background(prompts: list[list[int]]):
    return (SequenceRequest(p, MAX, background=True) for p in itertools.cycle(prompts))


def test_the_batch_stays_full_until_the_last_measured_request_ends(target, prompts) -> None:
    # Different token limits: without background rows the batch would shrink from 4 to 1.
    reqs = [SequenceRequest(p, MAX - 3 * i) for i, p in enumerate(prompts[:4])]
    gens = decode_kept_full(target.model, None, reqs, _background(prompts[4:]), batch=4, eos_ids=set(), k=0)
    shrinking = decode_batch(target.model, None, reqs, schedule=0, max_batch=4, eos_ids=set())
    for g, s in zip(gens, shrinking, strict=True):
        assert g.output_ids == s.output_ids  # greedy: the same tokens whatever decodes beside them
        assert all(step.batch == 4 for step in g.steps)
    assert min(step.batch for g in shrinking for step in g.steps) == 1


def test_a_smaller_last_wave_is_filled_to_the_batch_size(target, prompts) -> None:
    gens = decode_kept_full(
        target.model, None, [SequenceRequest(prompts[0], MAX)], _background(prompts[1:]), batch=3,
        eos_ids=set(), k=0,
    )  # fmt: skip
    assert [step.batch for step in gens[0].steps] == [3] * (MAX - 1)


def test_background_responses_are_forgotten_by_a_proposer_that_learns(target, prompts) -> None:
    proposer = SuffixProposer(max_tree_depth=8)
    reqs = [SequenceRequest(p, MAX - 4 * i) for i, p in enumerate(prompts[:2])]
    decode_kept_full(target.model, proposer, reqs, _background(prompts[2:]), batch=2, eos_ids=set(), k=3)
    # Only the two measured responses stay in the global tree; every background one was evicted, whether
    # it finished before the measured ones or was abandoned with them.
    assert len(proposer.cache.cached_requests) == 2
    assert proposer.cache.active_requests == []


def test_paused_clocks_leave_out_the_joiners_prefill(target, prompts, monkeypatch) -> None:
    # A clock that ticks once per reading: both runs read it the same number of times, so the difference
    # between them is exactly the joiner's prefill, which the paused run leaves out of the long row's time.
    def run(pause: bool) -> tuple[float, float]:
        ticks = itertools.count()
        monkeypatch.setattr(batched, "perf_counter", lambda: float(next(ticks)))
        decoder = BatchedDecoder(
            target.model, None, schedule=0, max_batch=2, eos_ids=set(), pause_for_joins=pause
        )
        decoder.add(SequenceRequest(prompts[0], MAX, tag="long"))
        decoder.add(SequenceRequest(prompts[1], 2, tag="short"))
        decoder.add(SequenceRequest(prompts[2], 2, tag="joiner"))  # joins when "short" leaves
        out = dict(decoder.run())
        long = out["long"]
        return long.latency_s - long.ttft_s, out["joiner"].prefill_s

    paused, prefill = run(True)
    wall, prefill_again = run(False)
    assert prefill == prefill_again > 0
    assert paused == pytest.approx(wall - prefill)


def test_a_background_request_cannot_be_measured(target, prompts) -> None:
    # Tags are the caller's: background generations never come back, measured ones always do.
    reqs = [replace(SequenceRequest(p, 4), tag="ignored") for p in prompts[:2]]
    gens = decode_kept_full(target.model, None, reqs, _background(prompts[2:]), batch=2, eos_ids=set(), k=0)
    assert len(gens) == 2 and all(len(g.output_ids) == 4 for g in gens)
