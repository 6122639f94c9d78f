"""The speculative loop is lossless, respects EOS and the token limit, and records consistent raw events."""

from __future__ import annotations

import pytest
import torch

from specmeter.engine.loader import load_model
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import speculative_decode

GREEDY = SamplingParams()
PROMPTS = [
    "The Supplier shall indemnify the Customer",
    "She walked to the station",
    "Either party may terminate",
    "Preheat the oven",
]


@pytest.fixture(scope="module")
def models(tiny):
    return load_model(tiny.target), load_model(tiny.draft), load_model(tiny.random_draft)


def _ids(tok, text: str) -> list[int]:
    return tok(text)["input_ids"]


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_greedy_speculative_equals_target_only(models, k: int) -> None:
    target, draft, random_draft = models
    for text in PROMPTS:
        ids = _ids(target.tokenizer, text)
        base = speculative_decode(target.model, None, ids, k=k, params=GREEDY, max_tokens=48, eos_ids=set())
        for d in (draft, random_draft):
            spec = speculative_decode(
                target.model, d.model, ids, k=k, params=GREEDY, max_tokens=48, eos_ids=set()
            )
            assert spec.output_ids == base.output_ids


def test_layer_skip_draft_is_accepted_and_random_draft_is_not(models) -> None:
    target, draft, random_draft = models
    ids = _ids(target.tokenizer, PROMPTS[0])

    def alpha(d) -> float:
        g = speculative_decode(target.model, d.model, ids, k=4, params=GREEDY, max_tokens=64, eos_ids=set())
        return sum(s.accepted for s in g.steps) / sum(s.drafted for s in g.steps)

    assert alpha(draft) > 0.3
    assert alpha(random_draft) < alpha(draft)


@pytest.mark.parametrize("max_tokens", [1, 2, 3, 5, 9])
@pytest.mark.parametrize("k", [1, 4])
def test_token_limit_is_exact_and_steps_add_up(models, max_tokens: int, k: int) -> None:
    target, draft, _ = models
    ids = _ids(target.tokenizer, PROMPTS[1])
    g = speculative_decode(
        target.model, draft.model, ids, k=k, params=GREEDY, max_tokens=max_tokens, eos_ids=set()
    )
    assert len(g.output_ids) == max_tokens
    assert g.finish_reason == "length"
    # The first token comes from the prefill; every later token from exactly one step.
    assert 1 + sum(s.emitted for s in g.steps) == max_tokens
    assert sum(e.tokens for e in g.emissions) == max_tokens
    assert len(g.emissions) == len(g.steps) + 1
    produced = 1
    for s in g.steps:
        assert s.drafted <= min(k, max_tokens - produced - 1)
        assert 0 <= s.accepted <= s.drafted
        assert s.emitted == s.accepted + 1  # no EOS here, and d < remaining keeps the limit from cutting
        assert s.draft_forwards == s.drafted
        produced += s.emitted
    times = [e.t for e in g.emissions]
    assert times == sorted(times) and g.ttft_s == times[0] and g.latency_s == times[-1]


def test_eos_stops_without_extra_tokens(models) -> None:
    target, draft, _ = models
    ids = _ids(target.tokenizer, PROMPTS[2])
    base = speculative_decode(target.model, None, ids, k=0, params=GREEDY, max_tokens=40, eos_ids=set())
    eos = base.output_ids[5]
    first = base.output_ids.index(eos)
    for d in (None, draft.model):
        g = speculative_decode(target.model, d, ids, k=4, params=GREEDY, max_tokens=40, eos_ids={eos})
        assert g.output_ids == base.output_ids[: first + 1]
        assert g.finish_reason == "eos"
        assert sum(e.tokens for e in g.emissions) == len(g.output_ids)
        if d is not None and g.steps:
            last = g.steps[-1]
            assert last.emitted <= last.accepted + 1


def test_baseline_steps_draft_nothing(models) -> None:
    target, _, _ = models
    g = speculative_decode(
        target.model,
        None,
        _ids(target.tokenizer, PROMPTS[3]),
        k=4,
        params=GREEDY,
        max_tokens=10,
        eos_ids=set(),
    )
    assert all(s.drafted == 0 and s.accepted == 0 and s.emitted == 1 for s in g.steps)
    assert len(g.steps) == 9


def test_on_emit_can_stop_generation(models) -> None:
    target, draft, _ = models
    seen: list[int] = []

    def stop_after_first(tokens: list[int]) -> bool:
        seen.extend(tokens)
        return True

    g = speculative_decode(
        target.model,
        draft.model,
        _ids(target.tokenizer, PROMPTS[0]),
        k=4,
        params=GREEDY,
        max_tokens=30,
        eos_ids=set(),
        on_emit=stop_after_first,
    )
    assert g.finish_reason == "interrupted" and list(g.output_ids) == seen and len(seen) == 1


def test_transformers_backend_is_also_lossless(tiny) -> None:
    target = load_model(tiny.target, implementation="transformers")
    draft = load_model(tiny.draft, implementation="transformers")
    ids = _ids(target.tokenizer, PROMPTS[0])
    base = speculative_decode(target.model, None, ids, k=3, params=GREEDY, max_tokens=24, eos_ids=set())
    spec = speculative_decode(
        target.model, draft.model, ids, k=3, params=GREEDY, max_tokens=24, eos_ids=set()
    )
    assert spec.output_ids == base.output_ids


def test_invalid_arguments(models) -> None:
    target, _, _ = models
    with pytest.raises(ValueError, match="empty prompt"):
        speculative_decode(target.model, None, [], k=1, params=GREEDY, max_tokens=4, eos_ids=set())
    with pytest.raises(ValueError, match="max_tokens"):
        speculative_decode(target.model, None, [1], k=1, params=GREEDY, max_tokens=0, eos_ids=set())
    with pytest.raises(ValueError):
        SamplingParams(temperature=-1)
    with pytest.raises(ValueError):
        SamplingParams(top_p=0)


def test_sampling_is_reproducible_with_a_seeded_generator(models) -> None:
    target, draft, _ = models
    ids = _ids(target.tokenizer, PROMPTS[0])
    params = SamplingParams(temperature=1.0, top_p=0.9)
    runs = [
        speculative_decode(
            target.model,
            draft.model,
            ids,
            k=3,
            params=params,
            max_tokens=20,
            eos_ids=set(),
            generator=torch.Generator().manual_seed(11),
        ).output_ids
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
