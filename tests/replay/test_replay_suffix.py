"""Replay's fast suffix proposer drafts what ArcticInference's cache drafts, and leaves the same cache.

Random workloads over small vocabularies (long matches, many ties in the children's order), random draft
lengths and commit sizes, settings off their defaults, and a small ``requests`` so that evictions happen.
The reference is :class:`SuffixReplay`, which calls ``SuffixCache`` exactly as ``engine.proposers.suffix``
does.
"""

from __future__ import annotations

import random

import pytest

from specmeter.engine.proposers.suffix import SuffixTree, _Node
from specmeter.methods import parse_method
from specmeter.replay.proposers import SuffixReplay
from specmeter.replay.suffix_fast import FastSuffixReplay


def _shape(tree: SuffixTree) -> list[tuple[int, ...]]:
    """Every node's children in order with their counts: the state speculation reads."""
    out: list[tuple[int, ...]] = []
    stack: list[_Node] = [tree.root]
    while stack:
        node = stack.pop()
        kids = node.order if node.order is not None else ([node.kids] if isinstance(node.kids, _Node) else [])
        out.append((node.token, node.count, *(k.token for k in kids)))  # type: ignore[union-attr]
        stack.extend(kids)  # type: ignore[arg-type]
    return out


@pytest.mark.parametrize(
    "spec",
    ["suffix", "suffix:depth=6,requests=3", "suffix:depth=4,factor=0.5,offset=1,min_prob=0.3,requests=2"],
)
@pytest.mark.parametrize("seed", range(3))
def test_fast_suffix_equals_the_cache(spec: str, seed: int) -> None:
    rng = random.Random(seed)
    parsed = parse_method(spec)
    fast, slow = FastSuffixReplay(parsed), SuffixReplay(parsed)
    vocab = rng.choice([3, 5, 9])
    for request in range(25):
        prompt = [rng.randrange(vocab) for _ in range(rng.randrange(1, 15))]
        response = [rng.randrange(vocab) for _ in range(rng.randrange(1, 40))]
        if request % 4 == 3:
            fast.absorb(prompt, response)
            slow.absorb(prompt, response)
            continue
        fast.begin(prompt)
        slow.begin(prompt)
        context, t = list(prompt), 0
        while t < len(response):
            d = rng.randrange(0, 7)
            assert fast.propose(context, d) == slow.propose(context, d)
            step = response[t : t + rng.randrange(1, 5)]
            fast.commit(step)
            slow.commit(step)
            context += step
            t += len(step)
        fast.end()
        slow.end()
        assert _shape(fast.cache.global_tree) == _shape(slow.cache.global_tree)
    assert fast.cache.cached_requests == slow.cache.cached_requests
