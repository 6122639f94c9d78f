"""The cost model: fits, per-position τ(k), engine overhead, and predictions on synthetic runs whose true
speedup is known (selection_builders states the model the records follow)."""

from __future__ import annotations

import numpy as np
import pytest
from selection_builders import CURVE, O0, O1, expected_speedup_decode, run, step_time

from specmeter.metrics.acceptance import (
    acceptance_counts,
    acceptance_length,
    beta_mle,
    expected_acceptance_length,
    per_position_acceptance,
)
from specmeter.metrics.costmodel import (
    decode_timing,
    fit_cost_curve,
    fit_line,
    fit_overhead,
    gap_factors,
    predict_acceptance_length,
    predict_speedup,
    step_cost_curve,
    verification_factor,
)
from specmeter.metrics.records import CostCurve, RequestRecord, StepRecord
from specmeter.metrics.speedup import (
    cost_ratio,
    predict_speedup_calibrated,
    speedup_calibrated,
    speedup_leviathan,
    speedup_measured,
)


def test_fit_line_recovers_a_known_line_and_reports_r2() -> None:
    fit = fit_line([1, 2, 3, 4], [5, 7, 9, 11])
    assert fit.intercept == pytest.approx(3.0) and fit.slope == pytest.approx(2.0)
    assert fit.r2 == pytest.approx(1.0)
    assert fit.at(10) == pytest.approx(23.0)
    noisy = fit_line([1, 2, 3, 4], [5, 8, 8, 11])
    assert noisy.r2 is not None and noisy.r2 < 1.0
    # one distinct x: a flat line through the mean, no r2 to speak of
    flat = fit_line([2, 2], [1, 3])
    assert (flat.intercept, flat.slope, flat.r2) == (2.0, 0.0, None)
    with pytest.raises(ValueError):
        fit_line([], [])
    with pytest.raises(ValueError):
        fit_line([1], [1, 2])


def test_cost_curve_fit_and_verification_factor() -> None:
    fit = fit_cost_curve(CURVE)  # t_T(n) = 8 + 2n ms
    assert fit is not None
    assert fit.intercept == pytest.approx(0.008) and fit.slope == pytest.approx(0.002)
    assert verification_factor(CURVE, 4) == pytest.approx(18 / 10)  # t_T(5)/t_T(1)
    assert verification_factor(CURVE, 0) == pytest.approx(1.0)
    assert verification_factor(None, 4) is None
    assert fit_cost_curve(CostCurve(target_s=(), draft_s=0.0)) is None


def test_predicted_tau_truncates_per_position_rates() -> None:
    cumulative = [0.5, 0.25, None]
    assert predict_acceptance_length(cumulative, 1) == pytest.approx(1.5)
    assert predict_acceptance_length(cumulative, 2) == pytest.approx(1.75)
    assert predict_acceptance_length(cumulative, 3) is None  # position 3 never reached
    assert predict_acceptance_length(cumulative, 4) is None  # never drafted
    with pytest.raises(ValueError):
        predict_acceptance_length(cumulative, 0)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_per_position_at_k4_predicts_tau_at_every_shorter_k(k: int) -> None:
    source = run(4)
    cumulative = [p.cumulative for p in per_position_acceptance(source.requests)]
    general = [r for r in run(k).requests if r.category.startswith("general")]
    measured = acceptance_length(acceptance_counts(general))
    src_general = [r for r in source.requests if r.category.startswith("general")]
    cum_general = [p.cumulative for p in per_position_acceptance(src_general)]
    assert predict_acceptance_length(cum_general, k) == pytest.approx(measured)
    assert measured == pytest.approx(expected_acceptance_length(0.5, k))  # β = 1/2 exactly
    assert predict_acceptance_length(cumulative, k) is not None


def test_decode_timing_splits_forwards_and_overhead() -> None:
    t = decode_timing(run(2).requests, CURVE)
    assert t is not None
    steps = sum(len(r.steps) for r in run(2).requests)
    assert t.forwards == steps and t.drafted == 2 * steps
    assert t.modelled_s == pytest.approx(steps * (2 * 0.001 + CURVE.t_target(3)))
    assert t.overhead_per_forward_s == pytest.approx(O0 + 2 * O1)
    assert t.overhead_share == pytest.approx((O0 + 2 * O1) / step_time(2))
    assert decode_timing(run(2).requests, CostCurve(target_s=(), draft_s=0.0)) is None


def test_overhead_line_is_recovered_from_the_baseline_and_the_runs() -> None:
    timings = [decode_timing(run(k).requests, CURVE) for k in (0, 1, 3)]
    fit = fit_overhead([t for t in timings if t is not None])
    assert fit is not None
    assert fit.intercept == pytest.approx(O0) and fit.slope == pytest.approx(O1)
    assert fit.r2 == pytest.approx(1.0)
    assert fit_overhead([]) is None


@pytest.mark.parametrize("held_out", [1, 2, 3])
def test_prediction_for_a_held_out_k_matches_its_measurement(held_out: int) -> None:
    """Fit on the baseline and k ∈ {1..4} without the held-out k, predict it, compare with its measurement."""
    fitted = [decode_timing(run(k).requests, CURVE) for k in (0, 1, 2, 3, 4) if k != held_out]
    overhead = fit_overhead([t for t in fitted if t is not None])
    base_timing = decode_timing(run(0).requests, CURVE)
    assert base_timing is not None and base_timing.seconds_per_token is not None
    source = [r for r in run(4).requests if r.category.startswith("general")]
    cumulative = [p.cumulative for p in per_position_acceptance(source)]
    tau = predict_acceptance_length(cumulative, held_out)
    predicted = predict_speedup(tau, held_out, CURVE, overhead, base_timing.seconds_per_token)
    general = [r for r in run(held_out).requests if r.category.startswith("general")]
    base_general = [r for r in run(0).requests if r.category.startswith("general")]
    measured = speedup_measured(general, base_general, decode_only=True)
    assert measured == pytest.approx(expected_speedup_decode(held_out, 0.5))
    assert predicted == pytest.approx(measured)
    # E_cal (no overhead) from the same per-position rates is higher: the engine costs something
    e_cal = predict_speedup_calibrated(cumulative, held_out, CURVE)
    assert e_cal is not None and e_cal > predicted


def test_predict_speedup_needs_every_input() -> None:
    fit = fit_line([0, 1], [O0, O0 + O1])
    assert predict_speedup(2.0, 2, CURVE, fit, 0.011) == pytest.approx(2.0 * 0.011 / step_time(2))
    assert predict_speedup(None, 2, CURVE, fit, 0.011) is None
    assert predict_speedup(2.0, 2, None, fit, 0.011) is None
    assert predict_speedup(2.0, 2, CURVE, None, 0.011) is None
    assert predict_speedup(2.0, 2, CURVE, fit, None) is None


def test_gap_factors_multiply_from_e_lev_to_e_meas() -> None:
    spec, base = run(3), run(0)
    counts = acceptance_counts(spec.requests)
    beta, tau = beta_mle(counts), acceptance_length(counts)
    e_lev = speedup_leviathan(beta, 3, cost_ratio(CURVE))
    e_cal = speedup_calibrated(tau, 3, CURVE)
    e_meas = speedup_measured(spec.requests, base.requests)
    e_dec = speedup_measured(spec.requests, base.requests, decode_only=True)
    g = gap_factors(k=3, beta=beta, tau=tau, curve=CURVE, e_cal=e_cal, e_meas=e_meas, e_meas_decode=e_dec)
    assert None not in (g.iid, g.verification, g.engine, g.prefill, e_lev, e_meas)
    assert e_lev * g.iid * g.verification * g.engine * g.prefill == pytest.approx(e_meas)
    # t_T(4)/t_T(1) = 1.6 > 1 and the engine overhead is positive: both gaps cost speed
    assert g.verification < 1.0 and g.engine < 1.0
    # mixing β = 1/2 and β = 1 requests is not i.i.d. with one β: the factor shows it
    assert g.iid != pytest.approx(1.0)
    flat = CostCurve(target_s=(0.01,) * 5, draft_s=0.001)
    assert (
        gap_factors(
            k=3, beta=beta, tau=tau, curve=flat, e_cal=None, e_meas=None, e_meas_decode=None
        ).verification
        == 1.0
    )


def test_per_position_prediction_holds_for_simulated_iid_acceptance() -> None:
    """Monte Carlo: steps drawn i.i.d. with β = 0.7 at k = 6 predict τ at k = 3 near its expectation."""
    rng = np.random.default_rng(1)
    steps = []
    for _ in range(20_000):
        draws = rng.random(6) < 0.7
        accepted = int(np.argmin(draws)) if not draws.all() else 6
        steps.append(StepRecord(6, accepted, accepted + 1, 0.0, 0.0, 6))
    cumulative = [p.cumulative for p in per_position_acceptance(steps)]
    assert predict_acceptance_length(cumulative, 3) == pytest.approx(
        expected_acceptance_length(0.7, 3), rel=0.01
    )


# ------------------------------------------------------------------- effective curve from step times


def _timed(drafted: int, seconds: float, n: int = 5) -> RequestRecord:
    steps = tuple(StepRecord(drafted, drafted, drafted + 1, 0.0, seconds, drafted) for _ in range(n))
    return RequestRecord(id="r", category="c", prompt_tokens=3, output_tokens=n, latency_s=1.0, ttft_s=0.1,
                         prefill_s=0.1, steps=steps)  # fmt: skip


def test_step_cost_curve_fits_a_line_through_step_medians() -> None:
    # Steps cost 10 ms + 2 ms per drafted token; one outlier step per run must not move the medians.
    base = [_timed(0, 0.010), _timed(0, 0.5, n=1)]
    runs = {2: [_timed(2, 0.014), _timed(2, 0.9, n=1)], 4: [_timed(4, 0.018)]}
    curve = step_cost_curve(base, runs, 6)
    assert curve is not None
    assert curve.target_s == pytest.approx((0.010,) * 6)
    assert curve.draft_s == pytest.approx(0.002)
    # The step time at k is then modelled exactly: k·t_D(1) + t_T(k+1).
    assert 3 * curve.draft_s + curve.t_target(4) == pytest.approx(0.016)


def test_step_cost_curve_ignores_short_last_steps_and_needs_two_points() -> None:
    short_last = RequestRecord(
        id="r", category="c", prompt_tokens=3, output_tokens=2, latency_s=1.0, ttft_s=0.1, prefill_s=0.1,
        steps=(StepRecord(1, 1, 2, 0.0, 0.001, 1),),
    )  # fmt: skip
    curve = step_cost_curve([_timed(0, 0.010)], {3: [_timed(3, 0.016), short_last]}, 4)
    assert curve is not None and curve.draft_s == pytest.approx(0.002)
    assert step_cost_curve([_timed(0, 0.010)], {3: [short_last]}, 4) is None
    assert step_cost_curve([], {3: [_timed(3, 0.016)]}, 4) is None
