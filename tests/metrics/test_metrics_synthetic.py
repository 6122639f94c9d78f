"""The synthetic-acceptance profile: α of full drafts ↔ per-position unconditional rates (docs/metrics.md)."""

from __future__ import annotations

import itertools
import random

import pytest

from specmeter.engine.batched import conditional_rates
from specmeter.metrics.synthetic import alpha_of_rates, geometric_profile, profile_from_rates


@pytest.mark.parametrize("seed", range(40))
def test_geometric_profile_has_the_requested_alpha_and_is_a_valid_vllm_profile(seed: int) -> None:
    rng = random.Random(seed)
    alpha, k = rng.random(), rng.randint(1, 10)
    p = geometric_profile(alpha, k)
    assert alpha_of_rates(p.rates) == pytest.approx(alpha, abs=1e-9)
    assert len(p.rates) == k and all(0.0 <= r <= 1.0 for r in p.rates)
    assert all(b <= a for a, b in itertools.pairwise(p.rates))  # what vLLM's config checks
    assert p.tau == pytest.approx(1.0 + k * alpha, abs=1e-9)  # τ = 1 + kα for any full-draft profile
    # Geometric: every conditional rate is β, and the engine's conversion agrees.
    assert p.beta is not None
    assert all(c == pytest.approx(p.beta, abs=1e-9) for c in p.conditional)
    assert conditional_rates(p.rates) == pytest.approx(list(p.conditional))


def test_edges_and_a_hand_case() -> None:
    assert geometric_profile(0.0, 4).rates == (0.0, 0.0, 0.0, 0.0)
    assert geometric_profile(1.0, 3).rates == (1.0, 1.0, 1.0)
    # k = 2, α = 0.6: (β + β²) / 2 = 0.6 → β = (−1 + √5.8) / 2 = 0.70416
    assert geometric_profile(0.6, 2).beta == pytest.approx(0.704159, abs=1e-6)
    assert geometric_profile(0.5, 1).rates == pytest.approx((0.5,))


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), float("inf")])
def test_out_of_range_alpha_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        geometric_profile(bad, 4)


def test_explicit_profiles_are_checked_as_vllm_checks_them() -> None:
    p = profile_from_rates([0.9, 0.8, 0.5])
    assert p.k == 3 and p.alpha == pytest.approx(2.2 / 3) and p.beta is None and p.profile == "given"
    assert p.conditional == pytest.approx((0.9, 0.8 / 0.9, 0.5 / 0.8))
    with pytest.raises(ValueError, match="non-increasing"):
        profile_from_rates([0.5, 0.6])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        profile_from_rates([1.2])
    assert profile_from_rates([0.7, 0.0, 0.0]).conditional == (0.7, 0.0, 0.0)


@pytest.mark.parametrize("seed", range(200))
def test_length_profile_is_vllms_and_has_the_requested_mean_length(seed: int) -> None:
    from specmeter.metrics.synthetic import profile_from_length

    rng = random.Random(seed)
    k = rng.randint(1, 10)
    length = rng.choice([1.0, float(k + 1), float(rng.randint(1, k + 1)), rng.uniform(1.0, k + 1.0)])
    p = profile_from_length(length, k)
    assert len(p.rates) == k and all(0.0 <= r <= 1.0 for r in p.rates)
    assert all(b <= a for a, b in itertools.pairwise(p.rates))  # non-increasing, as vLLM checks
    assert p.tau == pytest.approx(length, abs=1e-12)  # expected tokens per step = L
    assert p.alpha == pytest.approx((length - 1.0) / k, abs=1e-12)
    assert profile_from_rates(p.rates).rates == p.rates  # a valid --rates profile too
    assert p.profile == "length" and p.beta is None
    # Minimum variance: every rate but at most one is 0 or 1.
    assert sum(1 for r in p.rates if 0.0 < r < 1.0) <= 1


def test_length_profile_hand_cases_and_range() -> None:
    from specmeter.metrics.synthetic import length_rates

    # L = 3.78 over 7 draft slots: 2 drafts always accepted, a third with probability 0.78.
    assert length_rates(3.78, 7) == pytest.approx((1.0, 1.0, 0.78, 0.0, 0.0, 0.0, 0.0))
    assert length_rates(1.0, 3) == (0.0, 0.0, 0.0)
    assert length_rates(4.0, 3) == (1.0, 1.0, 1.0)
    assert length_rates(2.0, 2) == (1.0, 0.0)
    for bad in (0.99, 4.01, float("nan")):
        with pytest.raises(ValueError, match=r"\[1, 4\]"):
            length_rates(bad, 3)
