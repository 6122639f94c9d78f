"""Bootstrap intervals: hand-checkable cases, determinism and guards (coverage is in the simulation tests)."""

from __future__ import annotations

import numpy as np
import pytest

from specmeter.metrics import stats
from specmeter.metrics.stats import bootstrap_ratio_ci, paired_speedup_ci


def test_too_few_requests_give_no_interval() -> None:
    # below MIN_CI_REQUESTS (docs/metrics.md "Statistics": measured coverage) no interval is printed
    assert stats.MIN_CI_REQUESTS == 10
    nine = [float(i) for i in range(1, 10)]
    assert bootstrap_ratio_ci(nine, [x + 1 for x in nine]) is None
    assert paired_speedup_ci(nine, nine) is None
    assert bootstrap_ratio_ci([*nine, 10.0], [*[x + 1 for x in nine], 11.0]) is not None
    # the hand-checkable cases below lower the threshold; one request never has an interval
    assert bootstrap_ratio_ci([], [], min_requests=2) is None
    assert bootstrap_ratio_ci([3.0], [4.0], min_requests=1) is None
    assert paired_speedup_ci([1.0], [0.5], min_requests=2) is None


def test_constant_ratio_gives_a_degenerate_interval() -> None:
    # every request has A/D = 0.5, so every resample's ΣA/ΣD is 0.5
    lo, hi = bootstrap_ratio_ci([1.0, 2.0, 3.0], [2.0, 4.0, 6.0], min_requests=2) or (None, None)
    assert lo == pytest.approx(0.5) and hi == pytest.approx(0.5)


def test_interval_lies_within_the_possible_resample_ratios() -> None:
    # Two requests: A/D = 1/4 and 3/4. A resample is {r1,r1} (0.25), {r1,r2} (4/8 = 0.5) or {r2,r2} (0.75),
    # so the interval lies in [0.25, 0.75] and, with P(0.25) = P(0.75) = 1/4, reaches both ends.
    ci = bootstrap_ratio_ci([1.0, 3.0], [4.0, 4.0], min_requests=2)
    assert ci == pytest.approx((0.25, 0.75))


def test_paired_speedup_ci_resamples_pairs_together() -> None:
    # worked example pairs: a 1.2/0.6 = 2.0, b 2.1/1.5 = 1.4; both: 3.3/2.1 = 1.571
    ci = paired_speedup_ci([1.2, 2.1], [0.6, 1.5], min_requests=2)
    assert ci is not None
    assert ci == pytest.approx((1.4, 2.0))
    # if pairs were broken (baseline of one request over spec of another) 2.1/0.6 = 3.5 could appear
    assert ci[1] < 3.5


def test_deterministic_per_seed_and_seed_matters() -> None:
    rng = np.random.default_rng(7)
    drafted = rng.integers(10, 50, size=60).astype(float)
    accepted = np.floor(drafted * rng.uniform(0.2, 0.8, size=60))
    first = bootstrap_ratio_ci(list(accepted), list(drafted))
    assert first == bootstrap_ratio_ci(list(accepted), list(drafted), seed=0)
    assert first != bootstrap_ratio_ci(list(accepted), list(drafted), seed=1)
    point = accepted.sum() / drafted.sum()
    assert first is not None and first[0] < point < first[1]


def test_blocks_do_not_change_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    # Resampling in blocks (to bound memory) must draw the same indices as one big block.
    rng = np.random.default_rng(3)
    num, den = list(rng.uniform(0, 5, 30)), list(rng.uniform(5, 10, 30))
    whole = bootstrap_ratio_ci(num, den, n_resamples=500)
    monkeypatch.setattr(stats, "_BLOCK_ELEMENTS", 30 * 7)  # 7 resamples per block, uneven last block
    assert bootstrap_ratio_ci(num, den, n_resamples=500) == whole


def test_zero_denominator_resamples_are_dropped() -> None:
    # request 2 drafted nothing; resamples of only request 2 have no ratio and are left out,
    # every other resample has ratio 0.5 (only request 1 contributes)
    assert bootstrap_ratio_ci([1.0, 0.0], [2.0, 0.0], min_requests=2) == pytest.approx((0.5, 0.5))
    assert bootstrap_ratio_ci([0.0, 0.0], [0.0, 0.0], min_requests=2) is None


def test_argument_checks() -> None:
    with pytest.raises(ValueError):
        bootstrap_ratio_ci([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        bootstrap_ratio_ci([1.0, 2.0], [1.0, 2.0], confidence=1.0)
    with pytest.raises(ValueError):
        bootstrap_ratio_ci([1.0, 2.0], [1.0, 2.0], n_resamples=0)


def test_narrower_confidence_gives_narrower_interval() -> None:
    rng = np.random.default_rng(11)
    den = list(rng.integers(10, 40, 50).astype(float))
    num = [float(rng.binomial(int(d), 0.6)) for d in den]
    wide = bootstrap_ratio_ci(num, den, confidence=0.95)
    narrow = bootstrap_ratio_ci(num, den, confidence=0.5)
    assert wide is not None and narrow is not None
    assert wide[0] <= narrow[0] <= narrow[1] <= wide[1]
