"""Each proposer's semantics on hand-worked token sequences, and the engines' own examples.

vLLM ``ngram``: the longest n in [min, max] wins, then the EARLIEST occurrence; up to k tokens follow.
llama.cpp ``ngram-simple``: the NEWEST occurrence starting at least two tokens before the pattern (never at
position 0); exactly the copy rule of ``common_ngram_simple_draft``. Suffix decoding: ArcticInference's
scoring, its variable draft length, and its global cache of earlier responses, in request order.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
import torch
from sampling_stats import chi_square_pvalue

from specmeter.engine.proposers.ngram import (
    NgramMapKeyProposer,
    NgramProposer,
    NgramSimpleProposer,
    llamacpp_ngram_map_k,
    llamacpp_ngram_simple,
    vllm_ngram,
)
from specmeter.engine.proposers.proposer import Proposals
from specmeter.engine.proposers.suffix import SuffixCache, SuffixProposer, SuffixTree
from specmeter.engine.sampling import SamplingParams, verify_sampling

GREEDY = SamplingParams()

# ------------------------------------------------------------------------------------------ vLLM ngram


def test_vllm_docstring_example() -> None:
    # vLLM's NgramProposer.propose: [1,2,3,4,2,3], min 2, max 3, k 4: [4,2,3] has no match, [2,3] does,
    # and only three tokens follow it.
    assert vllm_ngram([1, 2, 3, 4, 2, 3], 2, 3, 4) == [4, 2, 3]


def test_vllm_no_match_and_too_short() -> None:
    assert vllm_ngram([1, 2, 3, 4], 1, 3, 4) == []  # 4 never occurred before
    assert vllm_ngram([7], 2, 3, 4) == []  # fewer tokens than min_n
    assert vllm_ngram([1, 2, 3, 9, 2, 3], 3, 3, 4) == []  # [9,2,3] is new; [2,3] is too short for min 3
    assert vllm_ngram([1, 2, 3, 9, 2, 3], 2, 3, 4) == [9, 2, 3]  # with min 2 it matches
    assert vllm_ngram([1, 2, 1, 2], 1, 2, 0) == []  # k = 0


def test_vllm_earliest_of_several_occurrences_wins() -> None:
    ctx = [7, 1, 2, 8, 1, 2, 9, 1, 2]  # [1,2] at 1 and at 4 (and the pattern itself at 7)
    assert vllm_ngram(ctx, 2, 2, 1) == [8]
    assert vllm_ngram(ctx, 2, 2, 3) == [8, 1, 2]


def test_vllm_longest_n_beats_an_earlier_shorter_match() -> None:
    ctx = [5, 1, 2, 6, 9, 1, 2, 7, 9, 1, 2]  # [1,2] first at 1; [9,1,2] only at 4
    assert vllm_ngram(ctx, 2, 3, 3) == [7, 9, 1]  # n = 3 wins
    assert vllm_ngram(ctx, 2, 2, 3) == [6, 9, 1]  # capped at 2: the earliest [1,2]
    assert vllm_ngram(ctx, 1, 1, 2) == [6, 9]  # n = 1: the earliest 2 (index 2), then 6, 9


def test_vllm_match_at_the_very_end_proposes_what_is_left() -> None:
    assert vllm_ngram([1, 2, 3, 1, 2], 2, 2, 5) == [3, 1, 2]  # three tokens follow, k = 5
    # Overlapping occurrences count: [3,3] occurs at 0, overlapping the pattern at 1; one token follows.
    assert vllm_ngram([3, 3, 3], 2, 2, 4) == [3]


def _brute_force(tokens: Sequence[int], min_n: int, max_n: int, k: int) -> list[int]:
    """The rule restated: the largest n with an earlier occurrence (at least one token after it), its
    earliest occurrence, and the next k tokens."""
    for n in range(max_n, min_n - 1, -1):
        if n > len(tokens):
            continue
        suffix = list(tokens[len(tokens) - n :])
        for s in range(len(tokens) - n):
            if list(tokens[s : s + n]) == suffix:
                return list(tokens[s + n : s + n + k])
    return []


def test_vllm_ngram_equals_its_rule_on_random_sequences() -> None:
    rnd = random.Random(0)
    for _ in range(3000):
        tokens = [rnd.randrange(3) for _ in range(rnd.randint(1, 25))]
        lo = rnd.randint(1, 4)
        hi = rnd.randint(lo, 6)
        k = rnd.randint(1, 6)
        assert vllm_ngram(tokens, lo, hi, k) == _brute_force(tokens, lo, hi, k), (tokens, lo, hi, k)


# ---------------------------------------------------------------------------------- llama.cpp simple


def test_llamacpp_own_test_case() -> None:
    # llama.cpp tests: history {99,1,2,7,8,3,4,1}, sampled 2, n = m = 2 -> {7,8}; sampled 9 -> nothing.
    assert llamacpp_ngram_simple([99, 1, 2, 7, 8, 3, 4, 1, 2], 2, 2) == [7, 8]
    assert llamacpp_ngram_simple([99, 1, 2, 7, 8, 3, 4, 1, 9], 2, 2) == []


def test_llamacpp_newest_occurrence_wins_where_vllm_takes_the_earliest() -> None:
    ctx = [0, 5, 6, 1, 5, 6, 2, 9, 9, 5, 6]  # [5,6] at 1 and at 4
    assert llamacpp_ngram_simple(ctx, 2, 2) == [2, 9]
    assert vllm_ngram(ctx, 2, 2, 2) == [1, 5]


def test_llamacpp_never_matches_position_zero_or_right_before_the_pattern() -> None:
    assert llamacpp_ngram_simple([5, 6, 1, 2, 3, 4, 7, 8, 5, 6], 2, 2) == []  # only occurrence at 0
    assert vllm_ngram([5, 6, 1, 2, 3, 4, 7, 8, 5, 6], 2, 2, 2) == [1, 2]
    # The search starts two tokens before the pattern: [4,4] at 9 (overlapping the pattern) is skipped.
    assert llamacpp_ngram_simple([1, 4, 4, 2, 3, 5, 6, 7, 8, 4, 4, 4], 2, 2) == [2, 3]


def test_llamacpp_length_rules() -> None:
    # Too short: needs more than n + m + 1 tokens before the sampled one.
    assert llamacpp_ngram_simple([1, 2, 3, 1, 2], 2, 2) == []
    # m caps the copy; what is left after the occurrence caps it too, and below n tokens it is dropped.
    ctx = [9, 9, 9, 9, 9, 9, 1, 2, 3, 7, 1, 2, 3]
    assert llamacpp_ngram_simple(ctx, 3, 4) == [7, 1, 2]  # occurrence at 6: three tokens before the end
    ctx = [9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 1, 2, 3]
    assert llamacpp_ngram_simple(ctx, 3, 4) == []  # occurrence at 7: two tokens follow, fewer than n = 3
    ctx = [8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2]
    assert llamacpp_ngram_simple(ctx, 2, 4) == [3, 4, 5, 6]  # m = 4 of the nine that follow


def test_llamacpp_map_k_own_test_case_and_where_it_differs_from_simple() -> None:
    # llama.cpp tests: common_ngram_map(2, 2, key_only) on history {99,1,2,7,8,3,4,1}, sampled 2 -> {7,8}.
    assert llamacpp_ngram_map_k([99, 1, 2, 7, 8, 3, 4, 1, 2], 2, 2) == [7, 8]
    ctx = [0, 5, 6, 1, 2, 3, 4, 5, 6, 7, 5, 6]  # [5,6] at 1 and at 7; only two tokens follow the one at 7
    assert llamacpp_ngram_simple(ctx, 2, 3) == [7, 5]  # simple: the newest, what is left of it
    assert llamacpp_ngram_map_k(ctx, 2, 3) == [1, 2, 3]  # map-k: the newest with m tokens after it
    assert llamacpp_ngram_map_k(ctx[:6], 2, 3) == []  # L = 5 < 2n + m
    assert _propose(NgramMapKeyProposer(2, 3), ctx, 2) == [1, 2]


def _propose(proposer, context: Sequence[int], d: int) -> list[int]:
    drafts: Proposals = proposer.propose([context], [d], [GREEDY], [None])
    assert drafts.forwards == 0 and drafts.rows[0].q is None  # model-free: deterministic, no forwards
    return drafts.rows[0].tokens


def test_ngram_proposers_cut_to_d() -> None:
    ctx = [8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2]
    assert _propose(NgramSimpleProposer(2, 4), ctx, 2) == [3, 4]
    assert _propose(NgramSimpleProposer(2, 4), ctx, 9) == [3, 4, 5, 6]
    assert _propose(NgramProposer(2, 2), ctx, 3) == [3, 4, 5]
    assert _propose(NgramProposer(2, 2), ctx, 0) == []
    with pytest.raises(ValueError, match="min"):
        NgramProposer(3, 2)


# ------------------------------------------------------------------------------------- suffix decoding


def test_suffix_tree_counts_and_linear_speculation() -> None:
    tree = SuffixTree(24)
    tree.extend(0, [1, 2, 3, 4, 1, 2, 3])
    # [3] occurs twice, followed once by 4: p(4) = 1/2 and the path continues 1, 2, 3 with ratio 1.
    d = tree.speculate([1, 2, 3, 4, 1, 2, 3], 8, 1.0, 0.0, 0.1)
    # match 1 -> [4] (limit 1), match 2 -> [4,1], match 3 -> [4,1,2]: the best score, 1.5, wins.
    assert (d.token_ids, d.probs, d.score, d.match_len) == ([4, 1, 2], [0.5, 0.5, 0.5], 1.5, 3)
    # Variable length: max_spec_factor 2 allows 2·3 tokens, but the path ends after [4,1,2,3].
    d = tree.speculate([1, 2, 3, 4, 1, 2, 3], 8, 2.0, 0.0, 0.1)
    assert (d.token_ids, d.score, d.match_len) == ([4, 1, 2, 3], 2.0, 3)
    # max_spec_tokens caps it: match 2 and match 3 both give [4,1] (score 1.0): the longer match wins.
    d = tree.speculate([1, 2, 3, 4, 1, 2, 3], 2, 1.0, 0.0, 0.1)
    assert (d.token_ids, d.score, d.match_len) == ([4, 1], 1.0, 3)
    # min_token_prob above 1/2: nothing is sure enough.
    assert tree.speculate([1, 2, 3, 4, 1, 2, 3], 8, 1.0, 0.0, 0.6).token_ids == []
    # The offset lets a one-token match propose more.
    d = tree.speculate([9, 4], 8, 1.0, 2.0, 0.1)
    assert (d.token_ids, d.match_len) == ([1, 2, 3], 1)


def test_suffix_most_frequent_continuation_wins_and_probabilities_multiply() -> None:
    tree = SuffixTree(8)
    tree.extend(0, [5, 1, 5, 1, 5, 2, 7])  # after 5: 1 twice, 2 once
    d = tree.speculate([0, 5], 4, 4.0, 0.0, 0.1)
    # p(1 | 5) = 2/3; after [5,1] always 5 (ratio 1); after [5,1,5] 1 once and 2 once: the tie goes to 1,
    # the child created first, and the probability halves; [5,1,5,1] is followed by 5.
    assert d.token_ids == [1, 5, 1, 5]
    assert d.probs == pytest.approx([2 / 3, 2 / 3, 1 / 3, 1 / 3])
    assert d.score == pytest.approx(2.0) and d.match_len == 1


def _serve(proposer: SuffixProposer, prompt: list[int], response: list[int], d: int = 4) -> list[list[int]]:
    """One request through the proposer as the loop drives it: start, commit the response token by token
    (proposing before each), finish. Returns the proposals."""
    proposer.start(0, [prompt])
    seen: list[list[int]] = []
    ctx = list(prompt)
    for tok in response:
        proposer.commit(0, [tok])
        ctx.append(tok)
        seen.append(_propose(proposer, ctx, d))
    proposer.finish(0)
    return seen


def test_suffix_global_cache_serves_later_requests_in_order() -> None:
    first = SuffixProposer(max_tree_depth=8)
    _serve(first, [10, 11], [20, 21, 22, 23])
    # A later request whose output reaches [20, 21] gets A's continuation from the global tree.
    assert _serve(first, [30], [20, 21])[-1] == [22, 23]
    # The same request first (empty cache): nothing to propose.
    fresh = SuffixProposer(max_tree_depth=8)
    assert _serve(fresh, [30], [20, 21])[-1] == []
    # Prompts are not cached across requests: only responses are.
    assert _serve(first, [40], [10, 11])[-1] == []


def test_suffix_cache_evicts_the_oldest_response() -> None:
    cache = SuffixProposer(max_tree_depth=8, max_cached_requests=1)
    _serve(cache, [1], [20, 21, 22, 23])
    _serve(cache, [2], [50, 51, 52])  # takes the only slot: the first response is gone
    assert _serve(cache, [3], [20, 21])[-1] == []
    kept = SuffixProposer(max_tree_depth=8, max_cached_requests=3)  # the third request's start keeps 3
    _serve(kept, [1], [20, 21, 22, 23])
    _serve(kept, [2], [50, 51, 52])
    assert _serve(kept, [3], [20, 21])[-1] == [22, 23]
    kept.forget()
    assert _serve(kept, [3], [20, 21])[-1] == []


def test_suffix_request_sees_its_own_prompt_and_output() -> None:
    cache = SuffixCache(max_tree_depth=8, max_cached_requests=-1)
    cache.start_request("a", [1, 2, 3, 9])
    cache.add_active_response("a", [1, 2])
    # Local tree (prompt + output): [1,2] occurs twice, once followed by 3 (p 1/2), then 9 (ratio 1).
    d = cache.speculate("a", [1, 2, 3, 9, 1, 2], 2)
    assert (d.token_ids, d.probs, d.match_len) == ([3, 9], [0.5, 0.5], 2)
    with pytest.raises(ValueError, match="not active"):
        cache.speculate("b", [1], 2)


def test_suffix_rows_move_with_the_batch() -> None:
    p = SuffixProposer(max_tree_depth=8)
    p.start(0, [[1, 2, 3, 1, 2], [7, 8, 9, 7, 8]])
    p.commit(0, [3])
    p.commit(1, [9])
    p.finish(0)
    p.move(1, 0)  # row 1's request now lives in row 0
    drafts = p.propose([[7, 8, 9, 7, 8, 9]], [3], [GREEDY], [None])
    assert drafts.rows[0].tokens == [7, 8, 9]


def test_model_free_proposals_are_deterministic_and_free() -> None:
    for proposer in (NgramProposer(1, 3), NgramSimpleProposer(1, 2), NgramMapKeyProposer(1, 2)):
        ctx = [4, 5, 6, 4, 5, 6, 4, 5, 6, 4, 5]
        drafts = proposer.propose([ctx, ctx[:3]], [3, 3], [GREEDY, SamplingParams(1.0)], [None, None])
        assert drafts.forwards == 0
        assert all(p.q is None for p in drafts.rows)
        assert drafts.rows[0].tokens and drafts.rows[1].tokens == []
        assert isinstance(drafts.rows[0].tokens[0], int) and not torch.is_tensor(drafts.rows[0].tokens[0])


# ------------------------------------------------------------------------- verifying a one-hot q


def test_verify_sampling_without_q_is_the_one_hot_rule_draw_for_draw() -> None:
    """q=None is exactly q = one-hot(y): the same verdict from the same random draws."""
    g = torch.Generator().manual_seed(0)
    for _ in range(300):
        p = torch.softmax(torch.randn(4, 7, generator=g) * 2, -1)
        y = torch.randint(0, 7, (3,), generator=g)
        seed = int(torch.randint(0, 2**31, (1,), generator=g))
        one_hot = torch.nn.functional.one_hot(y, 7).float()
        a = verify_sampling(p, None, y, torch.Generator().manual_seed(seed))
        b = verify_sampling(p, one_hot, y, torch.Generator().manual_seed(seed))
        assert a == b


@pytest.mark.slow  # 3.5 s or more on this VM (issue 37's stop): make test-slow, which CI runs
def test_verify_sampling_without_q_keeps_the_target_distribution() -> None:
    """A fixed proposal y (a deterministic method) against p: the first token is p[0]-distributed, and given
    y_1 accepted the second is p[1]-distributed; y_1 is accepted with probability p[0](y_1)."""
    g = torch.Generator().manual_seed(1)
    p = torch.softmax(torch.randn(3, 6, generator=g) * 1.5, -1)
    y = torch.tensor([int(p[0].argmin()), int(p[1].argmax())])  # an unlikely y_1: rejections are common
    first, second, kept = [0] * 6, [0] * 6, 0
    n = 20_000
    for _ in range(n):
        v = verify_sampling(p, None, y, g)
        out = [*y[: v.accepted].tolist(), v.token]
        first[out[0]] += 1
        if v.accepted >= 1:
            kept += 1
            second[out[1]] += 1
    assert chi_square_pvalue(first, p[0].tolist()) > 1e-3
    assert chi_square_pvalue(second, p[1].tolist()) > 1e-3
    assert abs(kept / n - float(p[0, y[0]])) < 4 * (float(p[0, y[0]]) / n) ** 0.5 + 1e-3
