"""specmeter's suffix decoding against ArcticInference's own cache, where arctic-inference is importable.

Not in the default environment (arctic-inference 0.3.0 has no wheel for it); build its suffix-tree extension
from the sdist as docs/methods.md says and this runs thousands of random requests through both caches:
every draft, its probabilities, score and match length must be identical.
"""

from __future__ import annotations

import random

import pytest

from specmeter.engine.proposers.suffix import SuffixCache, SuffixProposer

arctic = pytest.importorskip("arctic_inference.suffix_decoding")


def _one_run(seed: int) -> int:
    rnd = random.Random(seed)
    vocab, depth = rnd.choice([3, 5, 20]), rnd.choice([1, 2, 4, 8, 24, 64])
    cached = rnd.choice([-1, 0, 1, 3, 10])
    factor, offset = rnd.choice([1.0, 0.5, 2.0, 0.0]), rnd.choice([0.0, 1.0, -1.0, 2.5])
    min_prob, concurrent, n_req = rnd.choice([0.1, 0.0, 0.3, 1.0]), rnd.choice([1, 2, 4]), rnd.randint(1, 30)
    real = arctic.SuffixDecodingCache(max_tree_depth=depth, max_cached_requests=cached)
    ours = SuffixCache(max_tree_depth=depth, max_cached_requests=cached)
    motifs = [[rnd.randrange(vocab) for _ in range(rnd.randint(2, 8))] for _ in range(5)]

    def text(n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n:
            out += rnd.choice(motifs) if rnd.random() < 0.6 else [rnd.randrange(vocab)]
        return out[:n]

    live: dict[int, list] = {}
    checks = started = 0
    while started < n_req or live:
        if started < n_req and (not live or (len(live) < concurrent and rnd.random() < 0.5)):
            prompt = text(rnd.randint(1, 30))
            real.start_request(started, prompt)
            ours.start_request(started, prompt)
            live[started] = [prompt, text(rnd.randint(1, 40)), 0]
            started += 1
            continue
        key = rnd.choice(list(live))
        prompt, response, pos = live[key]
        context = (prompt + response[:pos])[-depth:]
        most = rnd.randint(0, 12)
        a = real.speculate(key, context, max_spec_tokens=most, max_spec_factor=factor,
                           max_spec_offset=offset, min_token_prob=min_prob)  # fmt: skip
        b = ours.speculate(key, context, most, factor, offset, min_prob)
        assert (list(a.token_ids), [float(p) for p in a.probs], float(a.score), a.match_len) == (
            b.token_ids, b.probs, b.score, b.match_len,
        ), (seed, key)  # fmt: skip
        checks += 1
        step = response[pos : pos + rnd.randint(1, 4)]
        real.add_active_response(key, step)
        ours.add_active_response(key, step)
        live[key][2] = pos + len(step)
        if live[key][2] >= len(response):
            real.stop_request(key)
            ours.stop_request(key)
            del live[key]
        assert sorted(real.cached_requests) == sorted(ours.cached_requests)
    return checks


def test_identical_to_arctic_inference_on_random_requests() -> None:
    assert sum(_one_run(seed) for seed in range(100)) > 1000


def test_the_proposer_can_run_arctic_inference_itself() -> None:
    ours, native = SuffixProposer(max_tree_depth=8), SuffixProposer(max_tree_depth=8, native=True)
    assert native.native and not ours.native
    rnd = random.Random(5)
    for _ in range(20):
        prompt = [rnd.randrange(4) for _ in range(rnd.randint(1, 12))]
        response = [rnd.randrange(4) for _ in range(rnd.randint(1, 12))]
        for p in (ours, native):
            p.start(0, [prompt])
        context = list(prompt)
        for tok in response:
            context.append(tok)
            for p in (ours, native):
                p.commit(0, [tok])
            assert ours.draft(0, context, 5) == native.draft(0, context, 5)
        for p in (ours, native):
            p.finish(0)
