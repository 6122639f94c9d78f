"""Seeded stratified sampling: exact quotas, reproducibility, independence between strata, uniformity."""

from __future__ import annotations

from collections import Counter

import pytest

from specmeter.goldenset.sampling import quotas, stratified_sample


def test_quotas_largest_remainder_sum_exactly() -> None:
    assert quotas(10, {"a": 0.7, "b": 0.3}) == {"a": 7, "b": 3}
    assert quotas(10, {"a": 1, "b": 1, "c": 1}) == {"a": 4, "b": 3, "c": 3}  # ties: mix order
    # 3.5, 1.75, 1.75 → floors 3, 1, 1; the two largest remainders (0.75) get the last two.
    assert quotas(7, {"a": 0.5, "b": 0.25, "c": 0.25}) == {"a": 3, "b": 2, "c": 2}
    for n in range(0, 50):
        assert sum(quotas(n, {"x": 0.13, "y": 0.52, "z": 0.35}).values()) == n
    with pytest.raises(ValueError):
        quotas(5, {"a": 0.0})


def test_n_per_category_exact_and_in_source_order() -> None:
    groups = {"legal": list(range(0, 100)), "general": list(range(100, 130)), "code": [200, 201]}
    sample = stratified_sample(groups, n=10, seed=3)
    assert {c: len(v) for c, v in sample.chosen.items()} == {"legal": 10, "general": 10, "code": 2}
    assert all(v == sorted(v) for v in sample.chosen.values())
    assert all(set(sample.chosen[c]) <= set(groups[c]) for c in groups)
    assert sample.shortfalls == {"code": (10, 2)}
    assert stratified_sample(groups, n=None).chosen == groups


def test_same_seed_same_sample_and_strata_are_independent() -> None:
    groups = {"legal": list(range(100)), "general": list(range(100, 200))}
    a = stratified_sample(groups, n=10, seed=7)
    assert a.chosen == stratified_sample(groups, n=10, seed=7).chosen
    assert a.chosen != stratified_sample(groups, n=10, seed=8).chosen
    # Adding a category (or changing another) leaves legal's choice as it was.
    more = stratified_sample(
        {**groups, "code": list(range(300, 350)), "general": list(range(100, 150))}, n=10, seed=7
    )
    assert more.chosen["legal"] == a.chosen["legal"]


def test_mix_quotas_and_exclusions() -> None:
    groups = {"legal": list(range(100)), "general": list(range(100, 200)), "chat": list(range(200, 210))}
    sample = stratified_sample(
        {k: groups[k] for k in ("legal", "general")}, n=20, mix={"legal": 0.7, "general": 0.3}
    )
    assert {c: len(v) for c, v in sample.chosen.items()} == {"legal": 14, "general": 6}
    short = stratified_sample(groups, n=40, mix={"legal": 0.5, "chat": 0.5})
    assert short.shortfalls == {"chat": (20, 10)}  # not refilled from legal: the mix stays what was asked
    assert short.excluded == ["general"]


def test_every_prompt_equally_likely() -> None:
    """Chi-square over 2,000 seeds: choosing 5 of 20 gives each prompt probability 1/4."""
    counts: Counter[int] = Counter()
    seeds = 2000
    for seed in range(seeds):
        counts.update(stratified_sample({"c": list(range(20))}, n=5, seed=seed).chosen["c"])
    expected = seeds * 5 / 20
    chi2 = sum((counts[i] - expected) ** 2 / expected for i in range(20))
    assert chi2 < 43.8  # the 0.999 quantile of chi-square with 19 degrees of freedom
