"""The slow-start figure (metrics.slow_start): a size with an interval, flagged only when both say so —
simulated levels without a slow start are rarely flagged, levels whose first quarter is 60% slower
nearly always, and a small certain difference never."""

from __future__ import annotations

import numpy as np
import pytest

from specmeter.metrics.records import RequestRecord
from specmeter.metrics.slow_start import SLOW_START_MIN_REQUESTS, SLOW_START_RATIO, slow_start


def _level(rng: np.random.Generator, n: int, slower: float, spread: float) -> list[RequestRecord]:
    """n requests in send order, 8–40 tokens each at 20 ms/token ×/÷ lognormal noise; the first quarter
    ``slower`` times slower per token."""
    out = []
    for i in range(n):
        tokens = int(rng.integers(8, 41))
        per_token = 0.02 * float(np.exp(rng.normal(0.0, spread))) * (slower if i < n // 4 else 1.0)
        out.append(RequestRecord(f"p{i}", "c", 10, tokens, per_token * tokens, per_token, 0.0))
    return out


def _flag_rate(slower: float, n: int, spread: float, runs: int = 150) -> float:
    rng = np.random.default_rng(11)
    figures = [slow_start(_level(rng, n, slower, spread), n_resamples=500) for _ in range(runs)]
    return sum(1 for f in figures if f is not None and f.flagged) / runs


def test_the_figure_is_the_ratio_of_medians_per_token() -> None:
    # 12 requests: the first three take 30 ms a token, the rest 20 ms (one stalled: medians ignore it).
    times = [0.03] * 3 + [0.02] * 8 + [0.5]
    figure = slow_start([RequestRecord(f"p{i}", "c", 5, 10, t * 10, t, 0.0) for i, t in enumerate(times)])
    assert figure is not None and (figure.first, figure.rest) == (3, 9)
    assert figure.ratio == pytest.approx(1.5)
    assert figure.first_ms_per_token == pytest.approx(30.0) and figure.rest_ms_per_token == pytest.approx(
        20.0
    )
    assert figure.ci[0] <= figure.ratio <= figure.ci[1]
    failed = RequestRecord("x", "c", 5, 0, 1.0, 1.0, 0.0, error="HTTP 500")
    assert slow_start([failed] * 20) is None  # nothing completed
    assert slow_start(_level(np.random.default_rng(0), SLOW_START_MIN_REQUESTS - 1, 1.0, 0.1)) is None


@pytest.mark.parametrize(("n", "spread"), [(SLOW_START_MIN_REQUESTS, 0.25), (24, 0.25), (64, 0.4)])
def test_levels_without_a_slow_start_are_rarely_flagged(n: int, spread: float) -> None:
    assert _flag_rate(1.0, n, spread) <= 0.06


def test_a_first_quarter_sixty_percent_slower_is_flagged() -> None:
    assert _flag_rate(1.6, 24, 0.15) >= 0.8


def test_a_small_but_certain_difference_is_not_flagged() -> None:
    """A size, not only a p-value: 10% slower over 400 requests has an interval above 1, yet no flag."""
    figure = slow_start(_level(np.random.default_rng(3), 400, 1.1, 0.05))
    assert figure is not None and figure.ci[0] > 1.0 and figure.ratio < SLOW_START_RATIO
    assert not figure.flagged
