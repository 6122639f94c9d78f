"""Capacity search (bisection) against fake levels: a known threshold is found within the bounds and the
step budget, both bounds' edge cases, rates, the Wilson-based interval, and bad arguments."""

from __future__ import annotations

import math
import random

import pytest

from specmeter.metrics.slo import Attainment
from specmeter.sweep.capacity import Probe, search_capacity


def threshold_level(capacity: float, *, calls: list[float] | None = None):  # type: ignore[no-untyped-def]
    """A server that meets the SLO for every request up to ``capacity`` and for half of them beyond."""

    def run_level(load: float) -> Attainment:
        if calls is not None:
            calls.append(load)
        return Attainment.of(100, 100) if load <= capacity else Attainment.of(50, 100)

    return run_level


@pytest.mark.parametrize("capacity", [1, 2, 3, 7, 12, 16, 31, 63])
def test_concurrency_search_finds_the_threshold(capacity: int) -> None:
    calls: list[float] = []
    result = search_capacity(
        threshold_level(capacity, calls=calls), kind="concurrency", low=1, high=64, max_steps=10
    )
    assert result.capacity == capacity
    assert result.first_failing == capacity + 1
    assert all(c == int(c) for c in calls)  # whole concurrencies only
    assert len(calls) == len(set(calls)) <= 10  # never the same level twice, within the budget
    assert calls[:2] == [1.0, 64.0]
    # bisection: 1..64 is bracketed in at most 2 + ceil(log2(63)) levels
    assert len(calls) <= 2 + math.ceil(math.log2(63))
    assert result.stopped == "adjacent levels bracket it"
    assert [p.load for p in result.probes] == calls


def test_bounds_edge_cases() -> None:
    low_fails = search_capacity(threshold_level(0.5), kind="concurrency", low=1, high=8)
    assert low_fails.capacity is None and low_fails.first_failing == 1.0 and len(low_fails.probes) == 1
    assert "fails already" in low_fails.text()
    high_passes = search_capacity(threshold_level(100), kind="concurrency", low=1, high=8)
    assert high_passes.capacity == 8.0 and high_passes.first_failing is None and len(high_passes.probes) == 2
    assert "≥ 8" in high_passes.text()


def test_max_steps_bounds_the_work_and_keeps_the_bracket() -> None:
    calls: list[float] = []
    result = search_capacity(
        threshold_level(37, calls=calls), kind="concurrency", low=1, high=256, max_steps=4
    )
    assert len(calls) == 4
    assert result.stopped == "max steps (4) reached"
    assert result.capacity is not None and result.first_failing is not None
    assert result.capacity <= 37 < result.first_failing


def test_rate_search_brackets_within_tolerance() -> None:
    result = search_capacity(
        threshold_level(3.3), kind="rate", low=0.5, high=20.0, rel_tol=0.05, max_steps=20
    )
    assert result.capacity is not None and result.first_failing is not None
    assert result.capacity <= 3.3 < result.first_failing <= result.capacity * 1.05
    assert result.stopped == "bracketed within 5%"


def test_bare_shares_and_progress_callback() -> None:
    seen: list[Probe] = []
    result = search_capacity(
        lambda load: 1.0 if load <= 5 else 0.9,
        kind="concurrency",
        low=1,
        high=10,
        target=0.95,
        on_probe=seen.append,
    )
    assert result.capacity == 5.0
    assert [p.load for p in seen] == [p.load for p in result.probes]
    assert all(p.attainment is None for p in seen)
    assert result.sure_pass is None and result.sure_fail is None  # no interval from bare shares
    with pytest.raises(ValueError, match="not a share"):
        search_capacity(lambda load: 1.5, kind="concurrency", low=1, high=2)


def test_interval_from_levels_whose_whole_wilson_interval_is_clear() -> None:
    def run_level(load: float) -> Attainment:
        if load <= 4:
            return Attainment.of(400, 400)  # surely ≥ 0.95
        if load <= 6:
            return Attainment.of(39, 40)  # passes, but not surely
        return Attainment.of(5, 40)  # surely fails

    result = search_capacity(run_level, kind="concurrency", low=1, high=32)
    assert [p.load for p in result.probes] == [1, 32, 16, 8, 4, 6, 7]
    assert result.capacity == 6.0 and result.first_failing == 7.0
    assert result.sure_pass == 4.0  # the highest surely passing level probed
    assert result.sure_fail == 7.0
    d = result.to_dict()
    assert d["capacity"] == 6.0 and d["interval"] == [result.sure_pass, 7.0]
    assert len(d["probes"]) == len(result.probes)


def test_noisy_monotone_levels_stay_within_the_clear_region() -> None:
    """Attainment falls smoothly with load and each level is a binomial draw of 60 requests: the capacity
    found always lies between the last load whose true attainment is clearly above the target and the first
    clearly below it."""
    rng = random.Random(7)

    def truth(load: float) -> float:
        return 1.0 / (1.0 + math.exp((load - 20.0) / 2.0))  # 0.5 at 20, 0.95 near 14.1

    def run_level(load: float) -> Attainment:
        met = sum(rng.random() < truth(load) for _ in range(60))
        return Attainment.of(met, 60)

    for _ in range(40):
        result = search_capacity(run_level, kind="concurrency", low=1, high=64, max_steps=12)
        assert result.capacity is not None
        assert 8 <= result.capacity <= 19


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "qps", "low": 1, "high": 2}, "kind"),
        ({"kind": "concurrency", "low": 4, "high": 2}, "bounds"),
        ({"kind": "concurrency", "low": 0, "high": 2}, "bounds"),
        ({"kind": "concurrency", "low": 1.5, "high": 4}, "whole"),
        ({"kind": "rate", "low": 1, "high": 4, "max_steps": 1}, "max_steps"),
        ({"kind": "rate", "low": 1, "high": 4, "target": 0}, "target"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        search_capacity(lambda load: 1.0, **kwargs)  # type: ignore[arg-type]
