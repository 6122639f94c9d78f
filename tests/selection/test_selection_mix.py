"""Traffic mixes: parsing, prefix matching, weighted speedup and the stratified paired bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from specmeter.selection.mix import (
    MixError,
    assign_domains,
    bootstrap_weighted,
    match_domain,
    parse_mix,
    weighted_speedups,
)


def test_parse_mix_normalises_weights() -> None:
    assert parse_mix("legal=0.7,general=0.3") == pytest.approx({"legal": 0.7, "general": 0.3})
    assert parse_mix(" legal = 7 , general=3 ") == pytest.approx({"legal": 0.7, "general": 0.3})
    assert parse_mix("legal/=1") == {"legal": 1.0}  # a trailing slash names the same prefix
    assert parse_mix("a=1,b=0") == {"a": 1.0, "b": 0.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("legal", "not CATEGORY=WEIGHT"),
        ("=0.5", "not CATEGORY=WEIGHT"),
        ("legal=abc", "weight 'abc' of 'legal' is not a number"),
        ("legal=-1", "must be a finite number >= 0"),
        ("legal=inf", "must be a finite number >= 0"),
        ("legal=1,legal=2", "'legal' is given twice"),
        ("legal=0,general=0", "add up to 0"),
        ("legal=1,", "not CATEGORY=WEIGHT"),
    ],
)
def test_parse_mix_errors_are_one_line(text: str, message: str) -> None:
    with pytest.raises(MixError) as e:
        parse_mix(text)
    assert message in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith("--mix:")


def test_prefix_matching_is_by_path_segment_and_longest_wins() -> None:
    keys = ["legal", "legal/nda", "general"]
    assert match_domain("legal", keys) == "legal"
    assert match_domain("legal/indemnity", keys) == "legal"
    assert match_domain("legal/nda/mutual", keys) == "legal/nda"
    assert match_domain("legalese", keys) is None
    assert match_domain("chat", keys) is None


def test_assign_domains_rejects_keys_matching_nothing() -> None:
    cats = ["legal/nda", "legal/indemnity", "general/chat", "code"]
    assert assign_domains(cats, {"legal": 0.5, "general": 0.5}) == {
        "code": None, "general/chat": "general", "legal/indemnity": "legal", "legal/nda": "legal",
    }  # fmt: skip
    with pytest.raises(MixError) as e:
        assign_domains(cats, {"legl": 0.5, "general": 0.5})
    assert "'legl'" in str(e.value) and "legal/nda" in str(e.value)


def test_weighted_speedup_reweights_domains_to_the_mix() -> None:
    # domain 0: 1 request, base 2 s -> spec 1 s; domain 1: 3 requests, base 1 s -> spec 1 s each
    base = np.array([2.0, 1.0, 1.0, 1.0])
    spec = np.array([[1.0], [1.0], [1.0], [1.0]])
    dom = np.array([0, 1, 1, 1])
    # the golden set's own mix (1/4, 3/4) gives the plain ratio of totals 5/4
    assert weighted_speedups(base, spec, dom, [0.25, 0.75])[0] == pytest.approx(5 / 4)
    # 90% domain 0: (0.9·2 + 0.1·1) / (0.9·1 + 0.1·1) = 1.9
    assert weighted_speedups(base, spec, dom, [0.9, 0.1])[0] == pytest.approx(1.9)
    # requests outside the mix (domain -1) weigh nothing
    dom_out = np.array([0, 1, 1, -1])
    assert weighted_speedups(base, spec, dom_out, [0.5, 0.5])[0] == pytest.approx(1.5 / 1.0)


def test_bootstrap_is_stratified_and_paired() -> None:
    # Within each domain every request is identical, so a resample that keeps domain sizes (stratified)
    # reproduces the estimate exactly; an unstratified one would move the mix and spread the samples.
    base = np.array([2.0] * 5 + [1.0] * 5)
    spec = np.column_stack([np.array([1.0] * 5 + [1.0] * 5), np.array([1.0] * 5 + [0.5] * 5)])
    dom = np.array([0] * 5 + [1] * 5)
    samples = bootstrap_weighted(base, spec, dom, [0.5, 0.5], n_resamples=300)
    assert samples is not None and samples.shape == (300, 2)
    point = weighted_speedups(base, spec, dom, [0.5, 0.5])
    assert np.allclose(samples[:, 0], point[0]) and np.allclose(samples[:, 1], point[1])


def test_bootstrap_interval_covers_the_truth_and_difference_cancels_prompt_difficulty() -> None:
    rng = np.random.default_rng(3)
    n = 60
    base = rng.uniform(0.5, 5.0, n)  # very different prompts
    a = base / 1.5 * rng.uniform(0.97, 1.03, n)
    b = base / 1.4 * rng.uniform(0.97, 1.03, n)
    dom = np.zeros(n, dtype=np.int64)
    samples = bootstrap_weighted(base, np.column_stack([a, b]), dom, [1.0], seed=1)
    assert samples is not None
    lo, hi = np.percentile(samples[:, 0], [2.5, 97.5])
    assert lo < 1.5 < hi
    # paired, the difference of two close candidates is resolved: prompt difficulty cancels
    diff_lo = np.percentile(samples[:, 0] - samples[:, 1], 2.5)
    assert diff_lo > 0
    assert bootstrap_weighted(base[:1], np.column_stack([a, b])[:1], dom[:1], [1.0]) is None
