"""E(B, k) from the cost surface: the formula, interpolation over B and k, and the wave prediction."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specmeter.metrics.batch_surface import (
    CostSurface,
    SurfacePoint,
    curve_at,
    predict_speedup_batched,
    predict_speedup_recorded,
    predict_speedup_waves,
    step_time,
    tau_by_k,
)
from specmeter.metrics.records import StepRecord


def _point(b: int, k: int, step: float, spread: float = 0.0) -> SurfacePoint:
    return SurfacePoint(b, k, step, draft_s=0.1 * k * step / (k + 1), verify_s=step * 0.9, step_spread=spread,
                        steps=9)  # fmt: skip


# t_step(B, k) = 1 + 0.5 B + k·(0.2 + 0.3 B) ms-ish units: verification grows with B·(k+1).
SURFACE = CostSurface(
    tuple(_point(b, k, 1 + 0.5 * b + k * (0.2 + 0.3 * b)) for b in (1, 4, 16) for k in (0, 2, 4)),
    rates=(0.9, 0.8, 0.7, 0.6),
    repeats=9,
)


def test_formula_and_trivial_cases() -> None:
    # B = 4, k = 2: τ 2.5 · t(4, 0) 3 / t(4, 2) (3 + 2·1.4 = 5.8)
    assert predict_speedup_batched(SURFACE, 4, 2, 2.5) == pytest.approx(2.5 * 3 / 5.8)
    assert predict_speedup_batched(SURFACE, 4, 0, None) == 1.0
    assert predict_speedup_batched(SURFACE, 4, 2, None) is None
    assert predict_speedup_batched(SURFACE, 8, 2, 2.5) is None  # not measured at B = 8


def test_speedup_falls_with_batch_size_when_verification_grows() -> None:
    es = [predict_speedup_batched(SURFACE, b, 4, 3.5) for b in (1, 4, 16)]
    assert es[0] > es[1] > es[2]  # type: ignore[operator]


def test_step_time_interpolates_over_batch_size() -> None:
    assert step_time(SURFACE, 4, 2) == pytest.approx(5.8)
    assert step_time(SURFACE, 10, 0) == pytest.approx(1 + 0.5 * 10)  # linear between 4 and 16
    assert step_time(SURFACE, 32, 0) == pytest.approx(1 + 0.5 * 32)  # beyond: the last segment's line
    assert step_time(SURFACE, 4, 3) is None


def test_tau_by_k_and_curve_at() -> None:
    assert tau_by_k([0.9, 0.8, None], 4) == {0: 1.0, 1: 1.9, 2: pytest.approx(2.7), 3: None, 4: None}
    curve = curve_at(SURFACE, 4, 5)
    assert curve is not None and len(curve.target_s) == 5
    assert curve.target_s[0] == pytest.approx(0.9 * 3)  # verify_s at k = 0
    assert curve.target_s[2] == pytest.approx(0.9 * 5.8)  # n = 3: k = 2 measured
    assert curve.target_s[1] == pytest.approx((curve.target_s[0] + curve.target_s[2]) / 2)  # n = 2 between


def test_wave_prediction_equals_steady_state_when_every_request_takes_the_same_steps() -> None:
    # Four requests of 12 decode tokens; each speculative step emits 3 (k = 2, all accepted): 4 steps.
    base = [[[0] * 12 for _ in range(4)]]
    spec = [[[2] * 4 for _ in range(4)]]
    steady = predict_speedup_batched(SURFACE, 4, 2, 3.0)
    assert predict_speedup_waves(SURFACE, base, spec) == pytest.approx(steady)


def test_wave_prediction_prices_the_tail_where_the_batch_shrinks() -> None:
    # One request needs twice the steps of the others: its second half runs alone, at B = 1 prices.
    base = [[[0] * 12 for _ in range(4)]]
    spec = [[[2] * 4, [2] * 4, [2] * 4, [2] * 8]]
    t4, t1 = step_time(SURFACE, 4, 2), step_time(SURFACE, 1, 2)
    expected_spec = 4 * 4 * t4 + 4 * t1  # type: ignore[operator]
    expected_base = 12 * 4 * step_time(SURFACE, 4, 0)  # type: ignore[operator]
    assert predict_speedup_waves(SURFACE, base, spec) == pytest.approx(expected_base / expected_spec)


def test_noisy_flag() -> None:
    assert _point(1, 0, 10.0, spread=3.0).noisy and not _point(1, 0, 10.0, spread=2.0).noisy


def _steps(batch: int, depths: list[int]) -> tuple[StepRecord, ...]:
    return tuple(
        StepRecord(
            drafted=d, accepted=d, emitted=d + 1, draft_s=0.0, verify_s=0.0, draft_forwards=d, batch=batch
        )
        for d in depths
    )


def test_recorded_prediction_prices_each_step_at_its_own_batch_and_depth() -> None:
    # Kept full at B = 4: 12 plain steps against 4 steps of k = 2, every request alike: the steady state.
    base = [_steps(4, [0] * 12) for _ in range(4)]
    spec = [_steps(4, [2] * 4) for _ in range(4)]
    assert predict_speedup_recorded(SURFACE, base, spec) == pytest.approx(
        predict_speedup_batched(SURFACE, 4, 2, 3.0)
    )
    # One request's steps at B = 1 (it ran alone): those steps cost t(1, 2), the others t(4, 2).
    spec_mixed = [*spec[:3], _steps(1, [2] * 4)]
    t4, t1, t40 = step_time(SURFACE, 4, 2), step_time(SURFACE, 1, 2), step_time(SURFACE, 4, 0)
    expected = (16 * t40) * 3 / (12 * t4 + 4 * t1)  # type: ignore[operator]
    assert predict_speedup_recorded(SURFACE, base, spec_mixed) == pytest.approx(expected)
    # The depth is the step's draft forwards when the row drafted less (a shorter row in a deeper step).
    shallow = [tuple(replace(s, drafted=1) for s in r) for r in spec]
    assert predict_speedup_recorded(SURFACE, base, shallow) == pytest.approx(
        predict_speedup_batched(SURFACE, 4, 2, 3.0)
    )
    assert predict_speedup_recorded(SURFACE, base, []) is None  # nothing speculative to price
