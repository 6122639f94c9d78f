"""Batched speculative decoding: lossless at every batch size, with joins, leaves and a k schedule."""

from __future__ import annotations

import itertools

import pytest
import torch
from sampling_stats import chi_square_pvalue, exact_joint
from transformers import AutoModelForCausalLM

from specmeter.engine.batched import BatchedDecoder, SequenceRequest, decode_batch
from specmeter.engine.loader import load_model
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.schedule import KSchedule
from specmeter.engine.speculative import speculative_decode
from tiny_models import sample_corpus

MAX = 24


@pytest.fixture(scope="module")
def models(tiny):
    return load_model(tiny.target), load_model(tiny.draft), load_model(tiny.random_draft)


@pytest.fixture(scope="module")
def prompts(models) -> list[list[int]]:
    """20 prompts of 2 … 26 tokens: every batch mixes lengths."""
    tok = models[0].tokenizer
    return [tok(text)["input_ids"][: 2 + (i * 7) % 25] for i, text in enumerate(sample_corpus(2)[:20])]


@pytest.fixture(scope="module")
def reference(models, prompts) -> list[tuple[int, ...]]:
    """Single-stream target-only greedy output of every prompt."""
    target = models[0]
    return [
        speculative_decode(
            target.model, None, p, k=0, params=SamplingParams(), max_tokens=MAX, eos_ids=set()
        ).output_ids
        for p in prompts
    ]


def _limit(i: int) -> int:
    return MAX - (i % 5)  # different token limits: rows leave at different steps


@pytest.mark.parametrize("batch", [1, 2, 4, 8, 16])
@pytest.mark.slow  # 3.5 s or more on this VM (issue 37's stop): make test-slow, which CI runs
def test_greedy_batched_equals_single_stream_target_only(models, prompts, reference, batch: int) -> None:
    target, draft, random_draft = models
    # 20 prompts through at most `batch` rows: as rows finish, waiting sequences join mid-way.
    schedules: list[KSchedule | int] = [0, 3, KSchedule.parse([[1, 1, 4], [2, 3, 2], [4, 8, 1], [9, 16, 0]])]
    for d in (draft, random_draft):
        for schedule in schedules:
            reqs = [SequenceRequest(p, _limit(i)) for i, p in enumerate(prompts)]
            gens = decode_batch(
                target.model, d.model, reqs, schedule=schedule, max_batch=batch, eos_ids=set()
            )
            for i, g in enumerate(gens):
                assert g.output_ids == reference[i][: _limit(i)], (batch, schedule, i)
            assert max(s.batch for g in gens for s in g.steps) == batch


def test_sequences_join_between_steps_and_steps_record_batch_and_k(models, prompts, reference) -> None:
    target, draft, _ = models
    schedule = KSchedule.parse([[1, 2, 4], [3, 4, 2], [5, 8, 0]])
    decoder = BatchedDecoder(target.model, draft.model, schedule=schedule, max_batch=8, eos_ids=set())
    done: dict[int, object] = {}
    for i in range(3):
        decoder.add(SequenceRequest(prompts[i], MAX, tag=i))
    arrivals = {2: [3], 5: [4], 9: [5, 6]}  # more arrive while the first ones are mid-way
    for step in range(60):
        for i in arrivals.get(step, []):
            decoder.add(SequenceRequest(prompts[i], MAX, tag=i))
        done.update(decoder.step())
        if step > 9 and not decoder.live and not decoder.waiting:
            break
    assert sorted(done) == [0, 1, 2, 3, 4, 5, 6]
    batches_seen = set()
    for i, g in done.items():
        assert g.output_ids == reference[i][:MAX]  # type: ignore[attr-defined]
        for s in g.steps:  # type: ignore[attr-defined]
            batches_seen.add(s.batch)
            assert s.k == schedule.k_for(s.batch)
            assert s.drafted <= s.k and 0 <= s.accepted <= s.drafted
    assert len(batches_seen) >= 3  # the batch grew and shrank
    late = done[6]
    assert late.steps[0].batch > 1  # type: ignore[attr-defined]  # it joined a running batch


def test_token_limits_eos_and_records_add_up(models, prompts, reference) -> None:
    target, draft, _ = models
    eos = reference[0][6]  # a token that really occurs, so some rows stop at EOS inside a step
    reqs = [SequenceRequest(p, 1 + i % 9) for i, p in enumerate(prompts)]
    gens = decode_batch(target.model, draft.model, reqs, schedule=4, max_batch=6, eos_ids={eos})
    for i, g in enumerate(gens):
        ref = list(reference[i][: 1 + i % 9])
        if eos in ref:
            ref = ref[: ref.index(eos) + 1]
            assert g.finish_reason == "eos"
        else:
            assert g.finish_reason == "length"
        assert list(g.output_ids) == ref
        assert 1 + sum(s.emitted for s in g.steps) == len(g.output_ids)
        assert sum(e.tokens for e in g.emissions) == len(g.output_ids)
        assert len(g.emissions) == len(g.steps) + 1
        produced = 1
        for s in g.steps:
            assert s.drafted <= min(4, reqs[i].max_tokens - produced - 1)
            produced += s.emitted
        times = [e.t for e in g.emissions]
        assert times == sorted(times) and g.ttft_s == times[0] and g.latency_s == times[-1]


def test_on_emit_stop_frees_the_row(models, prompts, reference) -> None:
    target, draft, _ = models
    seen: list[int] = []

    def stop_at_once(tokens: list[int]) -> bool:
        seen.extend(tokens)
        return True

    reqs = [SequenceRequest(prompts[0], MAX, on_emit=stop_at_once)]
    reqs += [SequenceRequest(p, MAX) for p in prompts[1:4]]
    gens = decode_batch(target.model, draft.model, reqs, schedule=3, max_batch=2, eos_ids=set())
    assert gens[0].finish_reason == "interrupted" and list(gens[0].output_ids) == seen and len(seen) == 1
    for i in (1, 2, 3):
        assert gens[i].output_ids == reference[i]


def test_mixed_greedy_and_sampling_rows(models, prompts, reference) -> None:
    target, draft, _ = models
    reqs = []
    for i, p in enumerate(prompts[:8]):
        if i % 2:
            reqs.append(SequenceRequest(p, MAX, SamplingParams(1.0, 0.9), torch.Generator().manual_seed(i)))
        else:
            reqs.append(SequenceRequest(p, MAX))
    gens = decode_batch(target.model, draft.model, reqs, schedule=3, max_batch=8, eos_ids=set())
    for i, g in enumerate(gens):
        if i % 2 == 0:
            assert g.output_ids == reference[i]
        else:
            assert len(g.output_ids) == MAX
    again = decode_batch(target.model, draft.model, [
        SequenceRequest(r.prompt_ids, r.max_tokens, r.params,
                        None if r.generator is None else torch.Generator().manual_seed(i))
        for i, r in enumerate(reqs)
    ], schedule=3, max_batch=8, eos_ids=set())  # fmt: skip
    assert [g.output_ids for g in again] == [g.output_ids for g in gens]  # seeded rows reproduce


def test_transformers_backend_batched_is_lossless(tiny, prompts, reference) -> None:
    target = load_model(tiny.target, implementation="transformers")
    draft = load_model(tiny.draft, implementation="transformers")
    reqs = [SequenceRequest(p, 12) for p in prompts[:5]]
    gens = decode_batch(target.model, draft.model, reqs, schedule=3, max_batch=3, eos_ids=set())
    assert [g.output_ids for g in gens] == [r[:12] for r in reference[:5]]


def test_forward_rows_matches_transformers_per_row(tiny) -> None:
    """Rows of different lengths in padded forwards give each row its own logits (Qwen3 included)."""
    seqs = [[5, 9, 12, 7, 30, 41, 8], [11, 3, 20], [6, 6, 6, 6, 17, 2]]
    cut = [2, 1, 4]  # prefill lengths differ, then each row feeds the rest (5, 2, 2 tokens) at once
    for path in (tiny.target, tiny.qwen3):
        m = load_model(path, implementation="native").model
        ref = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32).eval()
        with torch.inference_mode():
            m.batch_reset(4, 64)
            m.forward_rows(1, [s[:c] for s, c in zip(seqs, cut, strict=True)], last_only=True)
            got = m.forward_rows(1, [s[c:] for s, c in zip(seqs, cut, strict=True)])
            for r, (s, c) in enumerate(zip(seqs, cut, strict=True)):
                expected = ref(torch.tensor([s])).logits[0, c:]
                torch.testing.assert_close(got[r, : len(s) - c], expected, rtol=1e-4, atol=1e-4)
                assert m.row_length(1 + r) == len(s)
            m.rollback_row(2, 1)  # roll one row back, feed a different continuation
            alt = m.forward_rows(2, [[40, 41]])[0]
            expected = ref(torch.tensor([[11, 40, 41]])).logits[0, 1:]
            torch.testing.assert_close(alt, expected, rtol=1e-4, atol=1e-4)


def test_forward_rows_rejects_an_empty_row(tiny) -> None:
    m = load_model(tiny.target).model
    m.batch_reset(2, 64)
    with pytest.raises(ValueError, match="at least one token"):
        m.forward_rows(0, [[1, 2], []])


def test_invalid_requests(models) -> None:
    target, draft, _ = models
    decoder = BatchedDecoder(target.model, draft.model, schedule=2, max_batch=2, eos_ids=set())
    with pytest.raises(ValueError, match="empty prompt"):
        decoder.add(SequenceRequest([], 4))
    with pytest.raises(ValueError, match="max_tokens"):
        decoder.add(SequenceRequest([1], 0))
    with pytest.raises(ValueError, match="exceed the model's context"):
        decoder.add(SequenceRequest([1] * 1000, 100))
    with pytest.raises(ValueError, match="max_batch"):
        BatchedDecoder(target.model, None, schedule=0, max_batch=0, eos_ids=set())


@pytest.mark.slow  # the heaviest few run in make test-slow (CI runs it too)
def test_batched_sampling_keeps_the_target_distribution_per_sequence(small_vocab) -> None:
    """Rows of one prompt, mixed with rows of others that join and leave, follow the target's p exactly.

    Rows change batch size (and with it k, by the schedule) as they come and go, so a row's draft length
    and its neighbours vary from step to step; the first three tokens of every row of the measured prompt
    are compared with the exact joint distribution by a chi-square test, as for the batch-1 loop.
    """
    target = load_model(small_vocab[0])
    draft = load_model(small_vocab[1])
    params = SamplingParams(0.8, top_p=0.85)
    prompt, others = [1, 4, 5], ([1, 6], [1, 7, 7, 4, 5, 6])
    exact = exact_joint(target.model, prompt, params, steps=3)
    reqs, measured = [], []
    for i in range(3200):
        if i % 4 == 3:
            other = others[i % 8 == 3]
            reqs.append(SequenceRequest(other, 2 + i % 7, params, torch.Generator().manual_seed(i)))
        else:
            measured.append(len(reqs))
            reqs.append(SequenceRequest(prompt, 4, params, torch.Generator().manual_seed(i)))
    schedule = KSchedule.parse([[1, 3, 2], [4, 8, 3]])
    gens = decode_batch(target.model, draft.model, reqs, schedule=schedule, max_batch=8, eos_ids=set())
    cells = list(itertools.product(range(8), repeat=3))
    counts = dict.fromkeys(cells, 0)
    drafted = accepted = 0
    for i in measured:
        counts[gens[i].output_ids[:3]] += 1
        drafted += sum(s.drafted for s in gens[i].steps)
        accepted += sum(s.accepted for s in gens[i].steps)
    assert 0.05 < accepted / drafted < 0.95  # both verifier branches ran
    sizes = {s.batch for g in gens for s in g.steps}
    assert 8 in sizes and len(sizes) >= 3  # rows joined and left: the batch (and k) changed
    assert chi_square_pvalue([counts[c] for c in cells], [exact.get(c, 0.0) for c in cells]) > 1e-3
