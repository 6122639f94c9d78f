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


# ------------------------------------------------------------------ requests that differ (issue 28 item 6)


@pytest.mark.parametrize(("alpha", "k"), [(0.3, 2), (0.8, 4), (0.95, 6)])
def test_request_steps_realise_the_profile_and_emit_exactly_the_tokens(alpha: float, k: int) -> None:
    from specmeter.metrics.synthetic import request_steps

    rng = random.Random(3)
    p = geometric_profile(alpha, k)
    accepted = drafted = full_steps = 0
    for tokens in (1, 2, 5, 64, 3000):
        steps = request_steps(p, tokens, rng)
        assert sum(a + 1 for _, a in steps) == tokens  # never past the limit
        assert steps[-1][0] == 0 or tokens > 1
        assert all(0 <= a <= d <= k for d, a in steps)
        for d, a in steps:
            if d == k:
                full_steps += 1
                accepted += a
                drafted += d
    # Full drafts: A/D is α and A/S is k·α (3,000 tokens: standard error of α below 0.01).
    assert accepted / drafted == pytest.approx(alpha, abs=0.03)
    assert 1 + accepted / full_steps == pytest.approx(p.tau, rel=0.05)


def test_per_request_draws_reproduce_the_distribution_mean_and_spread() -> None:
    """Requests drawn from a measured per-request α distribution (median 0.90, p10 ≈ 0.57, as the
    bundled legal set), each decoded with its own α: the realised per-request α has the population's
    mean and spread, and the realised pooled α is the step-weighted one."""
    import statistics

    from specmeter.metrics.synthetic import draw_requests, request_steps

    rng = random.Random(7)
    population = [(min(1.0, max(0.0, rng.betavariate(5.0, 1.0))), 2000) for _ in range(300)]
    alphas = [a for a, _ in population]
    drawn = draw_requests(population, 3000, rng)
    drawn_alphas = [a for a, _ in drawn]
    assert statistics.mean(drawn_alphas) == pytest.approx(statistics.mean(alphas), abs=0.01)
    assert statistics.stdev(drawn_alphas) == pytest.approx(statistics.stdev(alphas), rel=0.08)
    realised = []
    for a, tokens in drawn[:400]:
        steps = request_steps(geometric_profile(a, 4), tokens, rng)
        full = [(d, acc) for d, acc in steps if d == 4]
        realised.append(sum(acc for _, acc in full) / sum(d for d, _ in full))
    assert statistics.mean(realised) == pytest.approx(statistics.mean(alphas), abs=0.02)
    assert statistics.stdev(realised) == pytest.approx(statistics.stdev(alphas), rel=0.15)
    with pytest.raises(ValueError, match="no requests"):
        draw_requests([], 3, rng)
    with pytest.raises(ValueError, match="acceptance rate"):
        draw_requests([(1.5, 10)], 3, rng)
