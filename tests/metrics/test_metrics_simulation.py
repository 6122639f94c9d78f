"""Statistical checks by simulation: the E[A/D] formula and the bootstrap interval's coverage.

Seeds are fixed, so these are deterministic; the tolerances are what the simulation sizes support
(several standard errors), not tuned to pass.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from specmeter.metrics.acceptance import (
    acceptance_counts,
    beta_mle,
    expected_acceptance_length,
    expected_acceptance_rate,
)
from specmeter.metrics.records import StepRecord
from specmeter.metrics.stats import MIN_CI_REQUESTS, bootstrap_ratio_ci, paired_speedup_ci


def simulate_accepted(rng: np.random.Generator, beta: float, k: int, steps: int) -> npt.NDArray[np.int64]:
    """a_s for ``steps`` steps of k drafts, each accepted with probability β until the first rejection."""
    accepted_flags = rng.random((steps, k)) < beta
    # the running product is 1 while every draft so far was accepted, so its sum is the accepted prefix
    accepted: npt.NDArray[np.int64] = np.cumprod(accepted_flags, axis=1).sum(axis=1).astype(np.int64)
    return accepted


@pytest.mark.parametrize("beta", [0.2, 0.5, 0.8, 0.95])
@pytest.mark.parametrize("k", [1, 3, 5, 8])
def test_expected_acceptance_rate_matches_monte_carlo(beta: float, k: int) -> None:
    rng = np.random.default_rng(int(beta * 1000) + k)
    n = 100_000
    a = simulate_accepted(rng, beta, k, n)
    # a/k lies in [0, 1], so the standard error of its mean is at most 1/(2·sqrt(n)) ≈ 0.0016
    assert a.mean() / k == pytest.approx(expected_acceptance_rate(beta, k), abs=0.008)
    assert 1 + a.mean() == pytest.approx(expected_acceptance_length(beta, k), abs=0.008 * (k + 1))


def test_alpha_is_not_beta_under_fixed_k() -> None:
    # β = 0.8, k = 4: E[A/D] = 0.5904, well below β; the MLE β recovers 0.8 from the same steps.
    rng = np.random.default_rng(5)
    a = simulate_accepted(rng, 0.8, 4, 50_000)
    steps = [StepRecord(drafted=4, accepted=int(x), emitted=int(x) + 1, draft_s=0.0, verify_s=0.0) for x in a]
    counts = acceptance_counts(steps)
    alpha = counts.accepted / counts.drafted
    assert alpha == pytest.approx(0.5904, abs=0.01)
    assert beta_mle(counts) == pytest.approx(0.8, abs=0.01)


def test_bootstrap_interval_covers_the_true_rates_about_95_percent() -> None:
    # 200 simulated runs of 40 requests; each request has 5..15 steps of k = 4 with i.i.d. β = 0.6.
    # True α = E[A/D] = 0.6(1 − 0.6^4)/(4·0.4) = 0.5514; true β = 0.6 (A/(A+R) is consistent for it).
    beta, k, runs, requests = 0.6, 4, 200, 40
    true_alpha = expected_acceptance_rate(beta, k)
    rng = np.random.default_rng(2024)
    alpha_hits = beta_hits = 0
    for sim in range(runs):
        steps_per_request = rng.integers(5, 16, size=requests)
        a = simulate_accepted(rng, beta, k, int(steps_per_request.sum()))
        owner = np.repeat(np.arange(requests), steps_per_request)
        accepted = np.bincount(owner, weights=a, minlength=requests)
        rejected = np.bincount(owner, weights=(a < k), minlength=requests)
        drafted = steps_per_request * k
        alpha_ci = bootstrap_ratio_ci(list(accepted), list(drafted), n_resamples=1000, seed=sim)
        beta_ci = bootstrap_ratio_ci(list(accepted), list(accepted + rejected), n_resamples=1000, seed=sim)
        assert alpha_ci is not None and beta_ci is not None
        alpha_hits += alpha_ci[0] <= true_alpha <= alpha_ci[1]
        beta_hits += beta_ci[0] <= beta <= beta_ci[1]
    assert 0.88 <= alpha_hits / runs <= 0.99
    assert 0.88 <= beta_hits / runs <= 0.99


def test_paired_bootstrap_covers_the_true_speedup() -> None:
    # Each request has its own difficulty (baseline time ~ U(0.5, 5) s); speculation divides it by
    # 1.5 with ±10% noise. The true E_meas (ratio of totals in expectation) is 1.5 / E[1/noise] ≈ 1.5.
    rng = np.random.default_rng(99)
    runs, requests, hits = 200, 30, 0
    noise_lo, noise_hi = 0.9, 1.1
    # E[noise] over U(0.9, 1.1) is 1.0, and spec = base·noise/1.5, so Σbase/Σspec -> 1.5/E[noise] = 1.5
    for sim in range(runs):
        base = rng.uniform(0.5, 5.0, size=requests)
        spec = base * rng.uniform(noise_lo, noise_hi, size=requests) / 1.5
        ci = paired_speedup_ci(list(base), list(spec), n_resamples=1000, seed=sim)
        assert ci is not None
        hits += ci[0] <= 1.5 <= ci[1]
    assert 0.88 <= hits / runs <= 0.99


def _heterogeneous_requests(
    rng: np.random.Generator, n: int, k: int = 4
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """(A_r, D_r) of n requests whose prompts differ: β_r ~ Beta(3, 2) per request, 5..40 steps of k."""
    beta = rng.beta(3.0, 2.0, size=n)
    steps = rng.integers(5, 41, size=n)
    accepted = np.array(
        [np.cumprod(rng.random((s, k)) < b, axis=1).sum() for s, b in zip(steps, beta, strict=True)],
        dtype=np.float64,
    )
    return accepted, (steps * k).astype(np.float64)


def _binomial_tail(hits: int, runs: int, p: float, *, upper: bool) -> float:
    """P(X >= hits) (upper) or P(X <= hits) for X ~ Binomial(runs, p): an exact one-sided test."""
    ks = range(hits, runs + 1) if upper else range(0, hits + 1)
    return sum(math.comb(runs, x) * p**x * (1 - p) ** (runs - x) for x in ks)


def test_interval_threshold_is_where_coverage_stops_collapsing() -> None:
    """Coverage of the nominal 95% α interval when prompts differ in difficulty (docs/metrics.md,
    "Statistics"): at 3 requests it is far below 0.9 (so such intervals are withheld), at the threshold
    of MIN_CI_REQUESTS it is consistent with the ≈ 0.88 measured for the docs. Exact binomial tests, 400
    simulated runs each."""
    rng = np.random.default_rng(20)
    population = _heterogeneous_requests(rng, 100_000)
    truth = population[0].sum() / population[1].sum()
    runs = 400
    coverage = {}
    for n in (3, MIN_CI_REQUESTS):
        hits = 0
        for sim in range(runs):
            accepted, drafted = _heterogeneous_requests(rng, n)
            ci = bootstrap_ratio_ci(list(accepted), list(drafted), n_resamples=500, seed=sim, min_requests=2)
            assert ci is not None
            hits += ci[0] <= truth <= ci[1]
        coverage[n] = hits
    # 3 requests: significantly below 0.9 (the docs measured 0.75)
    assert _binomial_tail(coverage[3], runs, 0.90, upper=False) < 1e-6
    # at the threshold: not significantly below 0.85, and not above nominal either
    assert _binomial_tail(coverage[MIN_CI_REQUESTS], runs, 0.85, upper=False) > 0.01
    assert coverage[MIN_CI_REQUESTS] / runs < 0.96
    # and the default refuses the 3-request interval outright
    assert bootstrap_ratio_ci([1.0, 2.0, 3.0], [4.0, 4.0, 4.0]) is None
