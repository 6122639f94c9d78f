"""Exact and near-duplicate removal: exact decisions on constructed pairs, and agreement with brute force."""

from __future__ import annotations

import random
import string

import numpy as np

from specmeter.goldenset.dedupe import MinHasher, dedupe, jaccard, normalise, shingles


def test_normalisation_makes_case_width_and_whitespace_exact_duplicates() -> None:
    texts = [
        "Define  Force Majeure.",
        "define force\nmajeure.",
        "ＤＥＦＩＮＥ force majeure.",
        "Define force majeur.",
    ]
    result = dedupe(texts, near_threshold=None)
    assert result.kept == [0, 3]
    assert result.exact == {1: 0, 2: 0}
    assert normalise(" A\t b ") == "a b"


def test_jaccard_is_exact_on_shingle_sets() -> None:
    a, b = shingles("abcdefgh"), shingles("abcdefgX")
    # 5-grams: abcde bcdef cdefg defgh vs abcde bcdef cdefg defgX → 3 shared of 5 distinct.
    assert len(a) == 4 and jaccard(a, b) == 3 / 5
    assert jaccard(a, a) == 1.0
    assert len(shingles("abc")) == 1  # shorter than a shingle: one shingle


def test_threshold_decides_exactly_on_constructed_pairs() -> None:
    base = "The Supplier shall indemnify the Customer against all losses arising from any breach."
    close = base.replace("losses", "claims")  # a one-word edit
    far = "The Customer may terminate this Agreement on thirty days' written notice to the Supplier."
    j_close = jaccard(shingles(base), shingles(close))
    j_far = jaccard(shingles(base), shingles(far))
    assert 0.7 < j_close < 0.95 and j_far < 0.2
    at = dedupe([base, close, far], near_threshold=j_close)  # threshold exactly at the pair's similarity
    assert at.kept == [0, 2] and at.near == {1: (0, j_close)}
    above = dedupe([base, close, far], near_threshold=min(1.0, j_close + 1e-9))
    assert above.kept == [0, 1, 2] and not above.near


def test_first_occurrence_is_kept_and_later_ones_point_at_it() -> None:
    a = "Summarise the following clause for a non-lawyer: the licence is non-exclusive and worldwide."
    texts = ["unrelated short text about the weather today", a, a + " Thanks!", a.replace("clause", "term")]
    result = dedupe(texts)
    assert result.kept == [0, 1]
    assert set(result.near) == {2, 3} and all(orig == 1 for orig, _ in result.near.values())


def test_japanese_near_duplicates_are_found_without_spaces() -> None:
    a = (
        "本契約において、不可抗力とは、天災地変、戦争、暴動、内乱、"
        "法令の改廃その他当事者の責めに帰すことができない事由をいう。"
    )
    b = a.replace("暴動、", "")
    assert dedupe([a, b]).kept == [0]
    assert dedupe([a, "本日は晴天なり。明日の天気は雨の予報です。"]).kept == [0, 1]


def test_near_texts_leave_the_shared_system_prompt_out() -> None:
    system = (
        "You are a meticulous assistant for a law firm in Osaka. Answer questions about contracts, tort, "
        "property and employment law; cite the statute where one applies, flag uncertainty explicitly, "
        "never invent case names, keep answers under two hundred words unless the user asks for more, "
        "and when a question involves a deadline, state the exact date rule and any exceptions to it."
    )
    users = ["What is consideration?", "Define estoppel.", "Explain privity of contract."]
    full = [system + "\n" + u for u in users]
    assert dedupe(full).kept == [0]  # with the system prompt every request looks alike
    assert dedupe(full, near_texts=users).kept == [0, 1, 2]


def _mutate(rng: random.Random, text: str, edits: int) -> str:
    chars = list(text)
    for _ in range(edits):
        i = rng.randrange(len(chars))
        chars[i] = rng.choice(string.ascii_lowercase + " ")
    return "".join(chars)


def test_lsh_agrees_with_brute_force_jaccard() -> None:
    """Greedy first-occurrence dedupe by exact all-pairs Jaccard vs the MinHash/LSH implementation."""
    rng = random.Random(5)
    words = [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 8))) for _ in range(300)
    ]
    bases = [" ".join(rng.choice(words) for _ in range(rng.randint(15, 40))) for _ in range(40)]
    texts = [_mutate(rng, rng.choice(bases), rng.choice([0, 1, 2, 4, 8, 16, 32])) for _ in range(300)]
    threshold = 0.7
    sh = [shingles(t) for t in texts]
    kept: list[int] = []
    for i in range(len(texts)):
        if not any(jaccard(sh[i], sh[j]) >= threshold for j in kept):
            kept.append(i)
    result = dedupe(texts, exact=False, near_threshold=threshold)
    assert result.kept == kept
    assert 40 <= len(kept) < 250  # the corpus really has both duplicates and distinct prompts


def test_minhash_estimates_jaccard() -> None:
    hasher = MinHasher()
    rng = random.Random(1)
    a = " ".join(
        rng.choice(["alpha", "beta", "gamma", "delta", "eps"]) + str(rng.randint(0, 99)) for _ in range(200)
    )
    b = _mutate(rng, a, 60)
    sa, sb = shingles(a), shingles(b)
    estimate = float(np.mean(hasher.signature(sa) == hasher.signature(sb)))
    assert abs(estimate - jaccard(sa, sb)) < 0.15  # 128 hashes: standard error ≤ 0.045


def _brute_jaccard(a: str, b: str) -> float:
    """Jaccard of the sets of 5-gram *strings* of the normalised texts: the definition, nothing hashed."""
    na, nb = normalise(a), normalise(b)
    sa = {na[i : i + 5] for i in range(max(1, len(na) - 4))}
    sb = {nb[i : i + 5] for i in range(max(1, len(nb) - 4))}
    return len(sa & sb) / len(sa | sb)


def test_distinct_shingles_never_count_as_shared() -> None:
    # These pairs hashed alike under the old 64-bit rotate-xor hash (issue 28): one shingle each, none shared.
    for a, b in [("er wh", "ch te"), ("ty in", "ng da")]:
        assert jaccard(shingles(a), shingles(b)) == 0.0
        assert dedupe([a, b], exact=False, near_threshold=0.01).kept == [0, 1]


def test_near_threshold_decisions_match_brute_force_on_pairs_near_the_threshold() -> None:
    """Pairs with true Jaccard in [0.7, 0.9]: the computed Jaccard is the true one, the decision follows it.

    A common-word vocabulary gives many shingles per pair, so any shingle collision shows (the old hashed
    check computed 0.8007 for a pair at 0.7953 and dropped it).
    """
    rng = random.Random(11)
    vocab = [
        *("the", "which", "other", "there", "where", "when", "party", "agreement", "shall", "any", "data"),
        *("in", "during", "each", "teach", "her", "what", "thing", "long", "city", "county", "order"),
        *("term", "notice", "written", "being", "nothing", "reach", "such"),
    ]
    pairs: list[tuple[str, str, float]] = []
    while len(pairs) < 400:
        base = " ".join(rng.choice(vocab) for _ in range(rng.randint(20, 60)))
        words = base.split()
        for _ in range(rng.randint(1, 6)):
            words[rng.randrange(len(words))] = rng.choice(vocab)
        other = " ".join(words)
        truth = _brute_jaccard(base, other)
        if 0.7 <= truth <= 0.9:
            pairs.append((base, other, truth))
    assert any(t < 0.8 for *_, t in pairs) and any(t >= 0.8 for *_, t in pairs)
    for base, other, truth in pairs:
        assert jaccard(shingles(base), shingles(other)) == truth
        result = dedupe([base, other], exact=False, near_threshold=0.8)
        assert (1 in result.near) == (truth >= 0.8), (base, other, truth)


def test_jaccard_is_exact_across_scripts() -> None:
    """Shingles mixing ASCII, CJK and emoji (the 64-bit and the 128-bit keys) against brute force."""
    rng = random.Random(4)
    vocab = ["契約", "不可抗力", "the", "data", "天気", "雨", "🙂", "é", "Ω", "ab", "城市", "-"]
    for _ in range(150):
        base = "".join(rng.choice(vocab) for _ in range(rng.randint(1, 40)))
        other = "".join(rng.choice(vocab) if rng.random() < 0.15 else c for c in base)
        assert jaccard(shingles(base), shingles(other)) == _brute_jaccard(base, other)


def test_lone_surrogates_are_text_not_errors() -> None:
    texts = ["\ud800x", "\ud800x", "\udfffabcdef", "\ud800 tail of a longer prompt", "x"]
    result = dedupe(texts)
    assert result.exact == {1: 0}
    assert 4 in result.kept  # "x" is not "\ud800x": the surrogate is a character of its own
    assert len(shingles("\udfffabcdef")) == 3
    assert jaccard(shingles("\ud800abcdef"), shingles("\udbffabcdef")) == 2 / 4
