"""sweep's reading of its own grid: the validation rule for a schedule that collapses (vLLM #49548)."""

from __future__ import annotations

from specmeter.serving.sweepresult import below_best_static


def test_a_schedule_collapses_only_when_its_whole_interval_is_below_the_best_static_k() -> None:
    best = {"k": 4, "e": 1.6, "e_ci": [1.4, 1.8]}
    assert below_best_static([0.7, 0.9], best) is True  # vLLM #49548: the schedule fell to 0.8x
    assert below_best_static([1.2, 1.45], best) is False  # overlaps the best static k's interval
    assert below_best_static([1.2, 1.5], {"k": 4, "e": 1.6}) is True  # no interval: against its E
    assert below_best_static(None, best) is False  # too few requests to say
    assert below_best_static([0.5, 0.6], None) is None  # nothing to compare with
