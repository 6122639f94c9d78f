"""Replay's indexed n-gram proposers draft exactly what the engine's functions draft, step after step.

The engine rescans the whole context at every step (``engine.proposers.ngram``); replay keeps an index that
grows
with the context. Random sequences over small vocabularies (many repeats, many ties) and random draft
lengths, every prefix of each sequence in turn, as a replay walks them.
"""

from __future__ import annotations

import random

import pytest

from specmeter.engine.proposers.ngram import llamacpp_ngram_map_k, llamacpp_ngram_simple, vllm_ngram
from specmeter.engine.proposers.suffix import SuffixCache
from specmeter.methods import parse_method
from specmeter.replay.proposers import (
    IndexedNgram,
    IndexedNgramMapKey,
    IndexedNgramSimple,
    SuffixReplay,
    replay_proposer,
)


@pytest.mark.parametrize("seed", range(6))
def test_indexed_ngram_drafts_equal_the_engines(seed: int) -> None:
    rng = random.Random(seed)
    mismatches = []
    for _ in range(150):
        vocab = rng.choice([2, 3, 5, 20])
        seq = [rng.randrange(vocab) for _ in range(rng.randrange(1, 70))]
        lo = rng.randrange(1, 4)
        hi = lo + rng.randrange(0, 3)
        n, m = rng.randrange(1, 4), rng.randrange(1, 6)
        ngram, simple, mapk = (
            IndexedNgram(lo, hi, "x"),
            IndexedNgramSimple(n, m, "s"),
            IndexedNgramMapKey(n, m, "m"),
        )
        for p in (ngram, simple, mapk):
            p.begin(seq[:1])
        for t in range(1, len(seq) + 1):
            ctx, d = seq[:t], rng.randrange(0, 7)
            want_simple = llamacpp_ngram_simple(ctx, n, m)[:d] if d > 0 else []
            want_mapk = llamacpp_ngram_map_k(ctx, n, m)[:d] if d > 0 else []
            got = (ngram.propose(ctx, d), simple.propose(ctx, d), mapk.propose(ctx, d))
            want = (vllm_ngram(ctx, lo, hi, d), want_simple, want_mapk)
            if got != want:
                mismatches.append((ctx, lo, hi, n, m, d, got, want))
    assert mismatches == []


def test_indexed_ngram_hand_worked() -> None:
    p = IndexedNgram(2, 3, "ngram")
    p.begin([1])
    # vLLM's docstring example: [4,2,3] has no earlier match, [2,3] does; three tokens follow it.
    assert p.propose([1, 2, 3, 4, 2, 3], 4) == [4, 2, 3]
    q = IndexedNgramSimple(2, 2, "simple")
    q.begin([99])
    # llama.cpp's own test case: history 99 1 2 7 8 3 4 1, sampled 2 -> 7 8.
    assert q.propose([99, 1, 2, 7, 8, 3, 4, 1, 2], 8) == [7, 8]


def test_suffix_replay_drafts_equal_the_cache_driven_by_hand() -> None:
    """SuffixReplay drives ArcticInference's cache as the engine's SuffixProposer does; absorb leaves the
    cache as a measured request would."""
    rng = random.Random(3)
    spec = parse_method("suffix")
    replay, absorbed = SuffixReplay(spec), SuffixReplay(spec)
    cache = SuffixCache(
        max_tree_depth=spec.int_value("depth"), max_cached_requests=spec.int_value("requests")
    )
    for request in range(12):
        prompt = [rng.randrange(6) for _ in range(rng.randrange(2, 12))]
        response = [rng.randrange(6) for _ in range(rng.randrange(3, 30))]
        cache.start_request(request, prompt)
        replay.begin(prompt)
        measured = request % 2 == 0
        if measured:
            absorbed.begin(prompt)
        context, t = list(prompt), 0
        while t < len(response):
            d = rng.randrange(1, 6)
            want = cache.speculate(request, context[-24:], max_spec_tokens=d, min_token_prob=0.1).token_ids
            assert replay.propose(context, d) == want
            if measured:
                assert absorbed.propose(context, d) == want
            step = response[t : t + rng.randrange(1, 4)]
            cache.add_active_response(request, step)
            replay.commit(step)
            if measured:
                absorbed.commit(step)
            context += step
            t += len(step)
        cache.stop_request(request)
        replay.end()
        if measured:
            absorbed.end()
        else:
            absorbed.absorb(prompt, response)


def test_replay_proposer_by_spec() -> None:
    assert isinstance(replay_proposer(parse_method("ngram:min=2,max=4")), IndexedNgram)
    assert isinstance(replay_proposer(parse_method("ngram-simple")), IndexedNgramSimple)
    assert isinstance(replay_proposer(parse_method("ngram-map-k")), IndexedNgramMapKey)
    assert replay_proposer(parse_method("suffix")).learns
    with pytest.raises(ValueError, match="needs the target's weights"):
        replay_proposer(parse_method("layers:n=1"))
