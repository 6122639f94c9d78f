"""Proposers as replay drives them: one request at a time, the context only ever growing.

Replay asks a method for a draft at every step of every logged response, so proposing must be cheap. The
engine's n-gram functions (``engine.proposers.ngram``) rescan the whole context at every step: O(context) per
step. Here the same three rules run on an index of the context's n-grams that grows with the context, so a
step costs O(max_n - min_n + 1) dictionary look-ups; the drafts are the engine's, token for token
(tests/replay/test_replay_proposers.py checks both against ``engine.proposers.ngram`` on random sequences).

Suffix decoding keeps ArcticInference's cache (``engine.proposers.suffix.SuffixCache``, the port already
checked against the native extension) and drives it as ``engine.proposers.suffix.SuffixProposer`` does. Draft
models, self-speculation (``layers:n``) and EAGLE heads run through
``engine.proposers.candidate.make_proposer`` (:class:`EngineProposer`): the proposer alone, forwarding over
the logged response, and for an EAGLE head the target's forwards that give it the hidden states it reads.

This module imports no torch; the suffix cache and the engine proposers import it when they are built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from specmeter.methods import MethodSpec

__all__ = [
    "EngineProposer",
    "IndexedNgram",
    "IndexedNgramMapKey",
    "IndexedNgramSimple",
    "ReplayProposer",
    "SuffixReplay",
    "replay_proposer",
]


class ReplayProposer(Protocol):
    """What replay calls per request: ``begin`` (the prompt), then ``propose``/``commit`` per step, ``end``.

    ``capacity`` is the cache the live loop would reserve (prompt + max_tokens + k + 1), for proposers
    with a model. ``context`` is always the committed sequence (prompt and response so far); ``propose``
    returns at most ``d`` tokens. ``absorb`` is a request replay does not measure (another shard's, or one
    skipped) but which a method that learns across requests must still see, in log order: the suffix cache.
    ``forwards(d)`` is the draft forwards a step proposing ``d`` tokens costs (0: model-free).
    """

    name: str
    learns: bool  # learns across requests (the order of requests matters)

    def begin(self, prompt: Sequence[int], capacity: int = 0) -> None: ...
    def propose(self, context: Sequence[int], d: int) -> list[int]: ...
    def commit(self, tokens: Sequence[int]) -> None: ...
    def end(self) -> None: ...
    def absorb(self, prompt: Sequence[int], response: Sequence[int]) -> None: ...
    def forwards(self, d: int) -> int: ...


class _Stateless:
    """Shared by the n-gram proposers: no memory across requests, no forwards."""

    name = "ngram"
    learns = False

    def commit(self, tokens: Sequence[int]) -> None:
        """Nothing: the index catches up with the context at the next ``propose``."""

    def end(self) -> None:
        """Nothing to release but the index, which ``begin`` replaces."""

    def absorb(self, prompt: Sequence[int], response: Sequence[int]) -> None:
        """Nothing: another request never changes an n-gram draft."""

    def forwards(self, d: int) -> int:
        return 0


class IndexedNgram(_Stateless):
    """vLLM's ``ngram`` (``engine.proposers.ngram.vllm_ngram``) on an index: the same draft at every step.

    The rule, as ``vllm_ngram``'s docstring derives it from vLLM's KMP scan: the longest n in [min_n,
    max_n] such that the context's last n tokens occur ending before the context's last token; among
    those occurrences the earliest; the draft is up to k tokens after it. ``first[n]`` maps every n-gram of
    the context to its earliest start, so the query walks n from max_n down and stops at the first n whose
    last-n-gram started earlier than the suffix itself.
    """

    def __init__(self, min_n: int, max_n: int, name: str) -> None:
        if not 1 <= min_n <= max_n:
            raise ValueError(f"ngram: need 1 <= min ({min_n}) <= max ({max_n})")
        self.min_n, self.max_n, self.name = min_n, max_n, name
        self._first: list[dict[tuple[int, ...], int]] = []
        self._done = 0

    def begin(self, prompt: Sequence[int], capacity: int = 0) -> None:
        self._first = [{} for _ in range(self.max_n + 1)]
        self._done = 0

    def _catch_up(self, tokens: Sequence[int]) -> None:
        first, lo, hi = self._first, self.min_n, self.max_n
        for end in range(self._done, len(tokens)):  # every n-gram ending at `end`
            for n in range(lo, min(hi, end + 1) + 1):
                first[n].setdefault(tuple(tokens[end - n + 1 : end + 1]), end - n + 1)
        self._done = len(tokens)

    def propose(self, context: Sequence[int], d: int) -> list[int]:
        total = len(context)
        if total < self.min_n or d <= 0:
            return []
        self._catch_up(context)
        for n in range(min(self.max_n, total - 1), self.min_n - 1, -1):
            start = self._first[n].get(tuple(context[total - n :]))
            if start is not None and start < total - n:  # an occurrence before the suffix itself
                begin = start + n
                return [int(t) for t in context[begin : begin + min(d, total - begin)]]
        return []


class _Starts:
    """Every start of every n-gram of one size, in increasing order, growing with the context."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.starts: dict[tuple[int, ...], list[int]] = {}
        self.done = 0  # n-grams starting before this are indexed

    def catch_up(self, tokens: Sequence[int]) -> None:
        n, starts = self.n, self.starts
        for s in range(self.done, len(tokens) - n + 1):
            starts.setdefault(tuple(tokens[s : s + n]), []).append(s)
        self.done = max(self.done, len(tokens) - n + 1)

    def newest(self, key: tuple[int, ...], limit: int) -> int | None:
        """The largest start <= ``limit`` of ``key``, or None."""
        for s in reversed(self.starts.get(key, ())):
            if s <= limit:
                return s
        return None


class _NewestStart(_Stateless):
    """llama.cpp's two n-gram drafts: a lookup of size n and a draft of up to m, on an index of n-gram
    starts rebuilt for every request."""

    def __init__(self, size_n: int, size_m: int, name: str) -> None:
        self.size_n, self.size_m, self.name = size_n, size_m, name
        self._index = _Starts(size_n)

    def begin(self, prompt: Sequence[int], capacity: int = 0) -> None:
        self._index = _Starts(self.size_n)


class IndexedNgramSimple(_NewestStart):
    """llama.cpp's ``ngram-simple`` (``engine.proposers.ngram.llamacpp_ngram_simple``) on an index, cut to d.

    With L = len(context) - 1: nothing unless L > n + m + 1; the newest start j in [1, L - n - 1] of the
    context's last n tokens wins (a hit at j = 0 does not count, and an older one is never tried); the draft
    is the min(m, L - j - n) tokens after it, nothing if that is fewer than n.
    """

    def propose(self, context: Sequence[int], d: int) -> list[int]:
        n, m = self.size_n, self.size_m
        cur = len(context) - 1
        if d <= 0 or cur <= n + m + 1:
            return []
        self._index.catch_up(context)
        j = self._index.newest(tuple(context[-n:]), cur - n - 1)
        if j is None or j == 0:
            return []
        copy = min(m, cur - (j + n))
        if copy < n:
            return []
        return [int(t) for t in context[j + n : j + n + copy]][:d]


class IndexedNgramMapKey(_NewestStart):
    """llama.cpp's ``ngram-map-k`` (``engine.proposers.ngram.llamacpp_ngram_map_k``) on an index, cut to d.

    With L = len(context) - 1: nothing unless L >= 2n + m; the newest start j in [1, L - n - m - 1] of the
    context's last n tokens wins; the draft is the m tokens after it.
    """

    def propose(self, context: Sequence[int], d: int) -> list[int]:
        n, m = self.size_n, self.size_m
        cur = len(context) - 1
        if d <= 0 or cur < 2 * n + m:
            return []
        self._index.catch_up(context)
        j = self._index.newest(tuple(context[-n:]), cur - n - m - 1)
        if j is None or j == 0:
            return []
        return [int(t) for t in context[j + n : j + n + m]][:d]


class SuffixReplay:
    """Suffix decoding with ArcticInference's cache, driven as ``engine.proposers.suffix.SuffixProposer``
    drives it.

    One instance is one cache for the whole replay: requests start in log order, every committed token is
    added, a finished request's response stays cached for later requests (evicted first-in first-out past
    ``requests``). ``absorb`` plays a request through the cache without speculating: its prompt opens a
    local tree that is dropped again and its response enters the global tree, which leaves the cache exactly
    as a measured request would (a request's tokens go in the same order, in one piece or step by step).
    """

    learns = True

    def __init__(self, spec: MethodSpec) -> None:
        from specmeter.engine.proposers.suffix import SuffixCache

        self.name = spec.label
        self.depth = spec.int_value("depth")
        self.factor, self.offset = spec.float_value("factor"), spec.float_value("offset")
        self.min_prob = spec.float_value("min_prob")
        self.cache: Any = SuffixCache(
            max_tree_depth=self.depth, max_cached_requests=spec.int_value("requests")
        )
        self._request = -1

    def begin(self, prompt: Sequence[int], capacity: int = 0) -> None:
        self._request += 1
        self.cache.start_request(self._request, [int(t) for t in prompt])

    def propose(self, context: Sequence[int], d: int) -> list[int]:
        if d <= 0:
            return []
        pattern = [int(t) for t in context[max(0, len(context) - self.depth) :]]
        draft = self.cache.speculate(
            self._request, pattern, max_spec_tokens=d, max_spec_factor=self.factor,
            max_spec_offset=self.offset, min_token_prob=self.min_prob,
        )  # fmt: skip
        return [int(t) for t in draft.token_ids]

    def commit(self, tokens: Sequence[int]) -> None:
        self.cache.add_active_response(self._request, [int(t) for t in tokens])

    def end(self) -> None:
        self.cache.stop_request(self._request)

    def absorb(self, prompt: Sequence[int], response: Sequence[int]) -> None:
        self.begin(prompt)
        self.commit(response)
        self.end()

    def forwards(self, d: int) -> int:
        return 0


class EngineProposer:
    """Any ``engine.proposers.proposer.Proposer`` (a draft model, ``layers:n``, an EAGLE head) driven for one
    row, greedily, as the live loop drives it: ``engine.speculative.KnownContinuation`` over the logged
    tokens. A draft model or ``layers:n`` runs alone: its forwards over the logged context, argmax drafts
    (what vLLM's drafters propose), never the target. An EAGLE head drafts from the target's hidden states,
    which no log holds: the target then runs the live loop's forwards for them (the prefill, and at each
    step the catch-up token with the whole draft), which costs what the live run's target forwards cost. A
    draft that samples at temperature > 0 is not replayed this way (docs/metrics.md, "Replay": which
    estimator a sampled draft would need, and its bias).
    """

    learns = False

    def __init__(self, row: Any, name: str, capacity: Callable[[], int]) -> None:
        self.row = row  # an engine.speculative.KnownContinuation
        self.name = name
        self._capacity = capacity

    def begin(self, prompt: Sequence[int], capacity: int = 0) -> None:
        # The live loop's cache size: a model's numbers can depend on it (the reduction over its cache).
        self.row.begin(prompt, capacity or self._capacity())

    def propose(self, context: Sequence[int], d: int) -> list[int]:
        return list(self.row.propose(context, d))

    def commit(self, tokens: Sequence[int]) -> None:
        self.row.commit(tokens)

    def end(self) -> None:
        self.row.end()

    def absorb(self, prompt: Sequence[int], response: Sequence[int]) -> None:
        """Nothing: a draft model learns nothing across requests."""

    def forwards(self, d: int) -> int:
        return d


def replay_proposer(spec: MethodSpec, engine: Callable[[MethodSpec], Any] | None = None) -> ReplayProposer:
    """The replay proposer of a parsed method spec. ``engine(spec)`` builds an engine proposer for the
    methods that need a model (a draft directory, ``layers:n``); None: such a method is an error."""
    if spec.method == "ngram":
        return IndexedNgram(spec.int_value("min"), spec.int_value("max"), spec.label)
    if spec.method == "ngram-simple":
        return IndexedNgramSimple(spec.int_value("n"), spec.int_value("m"), spec.label)
    if spec.method == "ngram-map-k":
        return IndexedNgramMapKey(spec.int_value("n"), spec.int_value("m"), spec.label)
    if spec.method == "suffix":
        from specmeter.replay.suffix_fast import FastSuffixReplay

        return FastSuffixReplay(spec)
    if engine is None:
        raise ValueError(f"{spec.label}: needs the target's weights (--target with a model)")
    return engine(spec)  # type: ignore[no-any-return]
