"""Suffix decoding for replay: ArcticInference's cache (``engine.proposers.suffix``), proposing in O(draft)
per step.

``engine.proposers.suffix.SuffixCache.speculate`` matches every suffix length m = 1 … P−1 of the pattern from
the root of both trees (O(P²) node look-ups), then walks a draft from each. Replay drafts at every step of
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
_ZERO, _ONE = _F32(0.0), _F32(1.0)


def _neg_count(node: _Node) -> int:
    return -node.count


def _increment(parent: _Node, child: _Node) -> None:
    """``_Node.increment``, with binary searches: children stay sorted by decreasing count."""
    order = parent.order
    c = child.count
    if order is None or order[0] is child:
        child.count = c + 1  # a lone child, or the first one: nothing to reorder
        return
    i = order.index(child, bisect_left(order, -c, key=_neg_count))
    before = order[i - 1].count
    child.count = c + 1
    if before > c + 1:
        return  # every sibling before it still counts more: it stays where the rule below would put it
    del order[i]
    # [.., 5, 4, 4, (child 4->5), 4, ..]: before == 4, it goes first among the 4s (after the last 5);
    # [.., 5, 5, (child 4->5), 4, ..]: before == 5, it goes first among the 5s.
    bound = c + 1 if before == c + 1 else c
    order.insert(bisect_left(order, -bound, key=_neg_count), child)


def _extend(tree: SuffixTree, seq_id: int, tokens: Sequence[int]) -> None:
    """``SuffixTree.append`` for each token in turn, inline (``_Node.child``, ``add`` and ``increment``
    without method calls)."""
    seq = tree._seqs.setdefault(seq_id, [])
    active = tree._active.setdefault(seq_id, deque())
    root, max_depth = tree.root, tree.max_depth
    for token in tokens:
        active.append(root)
        root.count += 1
        if len(active) > max_depth:
            active.popleft()
        seq.append(token)
        advanced: list[_Node] = []
        push = advanced.append
        for node in active:
            kids = node.kids
            if kids is None:
                child = node.kids = _Node(token, 1)
            elif type(kids) is _Node:
                if kids.token == token:
                    child = kids
                    child.count += 1  # a lone child has no sibling order to keep
                else:  # a second child: the dict and the order start (``_Node.add``)
                    child = _Node(token, 1)
                    node.kids = {kids.token: kids, token: child}
                    node.order = [kids, child]
            else:
                found = kids.get(token)  # type: ignore[union-attr]
                if found is None:
                    child = _Node(token, 1)
                    kids[token] = child  # type: ignore[index]
                    node.order.append(child)  # type: ignore[union-attr]  # a new child goes last
                elif node.order[0] is found:  # type: ignore[index]
                    child = found
                    child.count += 1  # the first child stays first
                else:
                    child = found
                    _increment(node, child)
            push(child)
        active.clear()
        active.extend(advanced)


def _child(node: _Node, token: int) -> _Node | None:
    """``_Node.child``, as a function."""
    kids = node.kids
    if type(kids) is dict:
        return kids.get(token)
    return kids if kids is not None and kids.token == token else None  # type: ignore[union-attr,return-value]


def _best(
    nodes: Sequence[_Node],
    d: int,
    limits: Sequence[int],
    min_prob: np.float32,
) -> tuple[list[int], np.float32]:
    """``SuffixTree.speculate``'s result over match lengths 1 … len(nodes) (``nodes[m-1]``: the node of
    the context's last m tokens): the draft of largest score, ties to the longer match. ``limits[m]``:
    ⌊m·factor + offset⌋ as the cache computes it. Arithmetic on ``np.float32`` scalars stays float32, as
    the cache's."""
    best: list[int] = []
    best_score = _ZERO
    found = False
    for m in range(len(nodes), 0, -1):
        max_tokens = min(d, limits[m])
        if found and best_score >= max_tokens:
            break  # no shorter match can score higher
        node = nodes[m - 1]
        order = node.order
        first = order[0] if order is not None else node.kids
        if first is None or max_tokens == 0:  # an empty draft scores 0: it wins only as the first tried
            if not found:
                best, best_score, found = [], _ZERO, True
            continue
        # Every probability of the walk is at most the first one (each factor is <= 1, also in float32):
        # a draft of t tokens scores at most t times it (with room for float32 rounding).
        if found and best_score >= max_tokens * (first.count / node.count) * (1 + 1e-5):  # type: ignore[union-attr]
            continue
        tokens: list[int] = []
        prob, score = _ONE, _ZERO
        if prob < min_prob:
            max_tokens = 0  # a floor above 1: the walk stops before its first token
        while len(tokens) < max_tokens:
            order = node.order
            child = order[0] if order is not None else node.kids
            if child is None:
                break
            if child.count != node.count:  # type: ignore[union-attr]
                prob = prob * _ratio(child.count, node.count)  # type: ignore[union-attr]
                if prob < min_prob:
                    break
            tokens.append(child.token)  # type: ignore[union-attr]
            score = score + prob
            node = child  # type: ignore[assignment]
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
        # [m]: ⌊m·factor + offset + 1e-6⌋ in the cache's float32 arithmetic, at least 0, m = 0 … depth.
        self.limits = [
            max(0, int(float(_F32(m) * self.factor + self.offset) + 1e-6)) for m in range(self.depth + 1)
        ]
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
        _extend(local, 0, ids)
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
        xs = [int(t) for t in tokens]
        _extend(local, 0, xs)
        for x in xs:
            if seq is not None:
                _extend(cache.global_tree, seq, (x,))
            new: list[_Node] = []
            child = _child(root, x)
            if child is not None:
                new.append(child)
                for node in self._global[: longest - 1]:
                    kids = node.kids  # _child(node, x), inline
                    if type(kids) is dict:
                        child = kids.get(x)
                    elif kids is not None and kids.token == x:  # type: ignore[union-attr]
                        child = kids  # type: ignore[assignment]
                    else:
                        break
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
        tokens, score = _best(local_nodes, d, self.limits, self.min_prob)
        global_nodes = self._global[:usable]
        if not global_nodes:
            return tokens
        if score >= min(d, self.limits[len(global_nodes)]):
            return tokens  # the global draft cannot score higher, and the local one wins ties
        cached, cached_score = _best(global_nodes, d, self.limits, self.min_prob)
        return tokens if score >= cached_score else cached
