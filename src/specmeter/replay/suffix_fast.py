"""Suffix decoding for replay: ArcticInference's cache (``engine.proposers.suffix``), proposing in O(draft)
per step.

``engine.proposers.suffix.SuffixCache.speculate`` matches every suffix length m = 1 … P−1 of the pattern from
the
root of both trees (O(P²) node look-ups), then walks a draft from each. Replay drafts at every step of
every logged response, so here the same drafts come cheaper, with the cache's own trees, counts and
sibling order untouched (the engine's port, checked against the native extension):

* the **local tree**'s node for each suffix of the context is already known: the tree's active nodes
  of the request's sequence (``SuffixTree._active``), which is the context itself;
* the **global tree**'s nodes of the context's suffixes are kept from step to step: after a token x
  enters the tree, node(s·x) = child(node(s), x) — a string s·x the tree holds after x went in was either
  there before (so s was) or is a suffix of this response (so s was inserted before x) — and recomputed
  from the root only when a request starts (when an eviction may have removed nodes);
* the **best draft** is the one of largest score, ties to the longer match: the match lengths are tried
  from the longest down and a shorter one replaces the best only with a strictly higher score; since a
  draft of at most t tokens, each of probability ≤ 1, scores at most t (also in float32), and the token
  limit ⌊m·factor + offset⌋ only falls with m, the search stops as soon as no shorter match can score
  higher. The global tree is not searched when the local draft's score already reaches its bound
  (the local draft wins ties).

Appends run the engine's ``SuffixTree.append`` rule inline (no method call per node, a binary search for
the sibling position instead of a scan). tests/replay/test_replay_suffix.py checks drafts and the cache's
state against ``SuffixCache`` on random workloads, evictions included.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from specmeter.engine.proposers.suffix import SuffixCache, SuffixTree, _Node
from specmeter.methods import MethodSpec

__all__ = ["FastSuffixReplay"]

_F32 = np.float32


def _neg_count(node: _Node) -> int:
    return -node.count


def _increment(parent: _Node, child: _Node) -> None:
    """``_Node.increment``, with binary searches: children stay sorted by decreasing count."""
    order = parent.order
    c = child.count
    if order is None:
        child.count = c + 1
        return
    i = order.index(child, bisect_left(order, -c, key=_neg_count))
    child.count = c + 1
    to_front = i > 0 and order[i - 1].count == c + 1
    del order[i]
    bound = c + 1 if to_front else c
    order.insert(bisect_left(order, -bound, key=_neg_count), child)


def _append(tree: SuffixTree, seq_id: int, token: int) -> None:
    """``SuffixTree.append``, inline (``_Node.child``, ``add`` and ``increment`` without method calls)."""
    seq = tree._seqs.setdefault(seq_id, [])
    active = tree._active.setdefault(seq_id, deque())
    root = tree.root
    active.append(root)
    root.count += 1
    if len(active) > tree.max_depth:
        active.popleft()
    seq.append(token)
    advanced: list[_Node] = []
    for node in active:
        kids = node.kids
        if kids is None:
            child = node.kids = _Node(token, 1)
        elif type(kids) is _Node:
            if kids.token == token:
                child = kids
                child.count += 1  # a lone child has no sibling order to keep
            else:
                child = _Node(token, 1)
                node.add(child)
        else:
            found = kids.get(token)  # type: ignore[union-attr]
            if found is None:
                child = _Node(token, 1)
                kids[token] = child  # type: ignore[index]
                node.order.append(child)  # type: ignore[union-attr]  # a new child goes last
            else:
                child = found
                _increment(node, child)
        advanced.append(child)
    active.clear()
    active.extend(advanced)


def _first(node: _Node) -> _Node | None:
    """``_Node.first``, as a function: the child speculation follows."""
    order = node.order
    if order is not None:
        return order[0]
    kids = node.kids
    return kids if type(kids) is _Node else None


def _best(
    nodes: Sequence[_Node],
    d: int,
    factor: np.float32,
    offset: np.float32,
    min_prob: np.float32,
) -> tuple[list[int], np.float32]:
    """``SuffixTree.speculate``'s result over match lengths 1 … len(nodes) (``nodes[m-1]``: the node of
    the context's last m tokens): the draft of largest score, ties to the longer match."""
    best: list[int] = []
    best_score = _F32(0.0)
    found = False
    for m in range(len(nodes), 0, -1):
        limit = int(float(_F32(m) * factor + offset) + 1e-6)
        max_tokens = max(0, min(d, limit))
        if found and float(best_score) >= max_tokens:
            break  # no shorter match can score higher
        node = nodes[m - 1]
        first = _first(node)
        if first is None or max_tokens == 0:  # an empty draft scores 0: it wins only as the first tried
            if not found:
                best, best_score, found = [], _F32(0.0), True
            continue
        # Every probability of the walk is at most the first one (each factor is <= 1, also in float32):
        # a draft of t tokens scores at most t times it (with room for float32 rounding).
        if found and float(best_score) >= max_tokens * (first.count / node.count) * (1 + 1e-5):
            continue
        tokens: list[int] = []
        prob, score = _F32(1.0), _F32(0.0)
        while len(tokens) < max_tokens and prob >= min_prob:
            child = _first(node)
            if child is None:
                break
            if child.count != node.count:
                prob = _F32(prob * _ratio(child.count, node.count))
                if prob < min_prob:
                    break
            tokens.append(child.token)
            score = _F32(score + prob)
            node = child
        if not found or score > best_score:
            best, best_score, found = tokens, score, True
    return best, best_score


_RATIOS: dict[tuple[int, int], np.float32] = {}


def _ratio(num: int, den: int) -> np.float32:
    """float32(num) / float32(den), as the cache computes it, remembered."""
    key = (num, den)
    r = _RATIOS.get(key)
    if r is None:
        if len(_RATIOS) > 1_000_000:
            _RATIOS.clear()
        r = _RATIOS[key] = _F32(num) / _F32(den)
    return r


class FastSuffixReplay:
    """Suffix decoding driven as ``engine.proposers.suffix.SuffixProposer`` drives the cache, proposing
    fast."""

    learns = True

    def __init__(self, spec: MethodSpec) -> None:
        self.name = spec.label
        self.depth = spec.int_value("depth")
        self.factor = _F32(spec.float_value("factor"))
        self.offset = _F32(spec.float_value("offset"))
        self.min_prob = _F32(spec.float_value("min_prob"))
        self.cache: Any = SuffixCache(
            max_tree_depth=self.depth, max_cached_requests=spec.int_value("requests")
        )
        self._request = -1
        # [L - 1]: the global tree's node of the context's last L tokens, for L = 1 … while the tree has them
        # (a string it lacks has no longer string ending like it either), at most depth - 1 of them.
        self._global: list[_Node] = []

    def begin(self, prompt: Sequence[int], capacity: int = 0) -> None:
        self._request += 1
        ids = [int(t) for t in prompt]
        self.cache.start_request(self._request, [])  # the prompt goes into the local tree below, faster
        local = self.cache._local[self._request]
        for t in ids:
            _append(local, 0, t)
        tree = self.cache.global_tree
        nodes: list[_Node] = []
        for length in range(1, min(self.depth - 1, len(ids)) + 1):
            node = tree._match(ids[len(ids) - length :])
            if node is None:
                break
            nodes.append(node)
        self._global = nodes

    def commit(self, tokens: Sequence[int]) -> None:
        cache, request = self.cache, self._request
        local = cache._local[request]
        seq = cache._req_to_seq.get(request)
        root = cache.global_tree.root
        longest = self.depth - 1
        for t in tokens:
            x = int(t)
            _append(local, 0, x)
            if seq is not None:
                _append(cache.global_tree, seq, x)
            new: list[_Node] = []
            child = root.child(x)
            if child is not None:
                new.append(child)
                for node in self._global[: longest - 1]:
                    child = node.child(x)
                    if child is None:
                        break
                    new.append(child)
            self._global = new

    def end(self) -> None:
        self.cache.stop_request(self._request)

    def absorb(self, prompt: Sequence[int], response: Sequence[int]) -> None:
        self.begin(prompt)
        self.commit(response)
        self.end()

    def forwards(self, d: int) -> int:
        return 0

    def propose(self, context: Sequence[int], d: int) -> list[int]:
        if d <= 0:
            return []
        usable = min(len(context), self.depth) - 1  # match lengths 1 … P - 1
        if usable <= 0:
            return []
        active = self.cache._local[self._request]._active[0]
        local_nodes = [active[-m] for m in range(1, usable + 1)]
        tokens, score = _best(local_nodes, d, self.factor, self.offset, self.min_prob)
        global_nodes = self._global[:usable]
        if not global_nodes:
            return tokens
        bound = max(0, min(d, int(float(_F32(len(global_nodes)) * self.factor + self.offset) + 1e-6)))
        if float(score) >= bound:
            return tokens  # the global draft cannot score higher, and the local one wins ties
        cached, cached_score = _best(global_nodes, d, self.factor, self.offset, self.min_prob)
        return tokens if score >= cached_score else cached
