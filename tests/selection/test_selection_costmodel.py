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
    StepMix,
    decode_budgets,
    decode_timing,
    fit_cost_curve,
    fit_line,
    fit_overhead,
    gap_factors,
    predict_acceptance_length,
    predict_speedup,
    predict_step_mix,
    shortens_drafts,
    step_cost_curve,
    step_mix,
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
    """Fit on the baseline and k ∈ {1..4} without the held-out k, predict it, compare with its measurement.

    The prediction is an expectation over acceptance; the synthetic blocks hold exact proportions, so the
    two differ only by the expected overshoot of a request's last step (well under 0.1% here).
    """
    fitted = [decode_timing(run(k).requests, CURVE) for k in (0, 1, 2, 3, 4) if k != held_out]
    overhead = fit_overhead([t for t in fitted if t is not None])
    base_timing = decode_timing(run(0).requests, CURVE)
    assert base_timing is not None and base_timing.seconds_per_token is not None
    source = [r for r in run(4).requests if r.category.startswith("general")]
    conditional = [p.conditional for p in per_position_acceptance(source)]
    base_general = [r for r in run(0).requests if r.category.startswith("general")]
    budgets = decode_budgets(base_general, shortens_drafts(source, 4))
    mix = predict_step_mix(budgets, conditional, held_out)
    predicted = predict_speedup(mix, CURVE, overhead, base_timing.seconds_per_token)
    general = [r for r in run(held_out).requests if r.category.startswith("general")]
    measured = speedup_measured(general, base_general, decode_only=True)
    assert measured == pytest.approx(expected_speedup_decode(held_out, 0.5))
    assert predicted == pytest.approx(measured, rel=1e-3)
    assert mix is not None and mix.acceptance_length == pytest.approx(
        acceptance_length(acceptance_counts(general)), rel=1e-3
    )
    # E_cal (no overhead) from the same mix is higher: the engine costs something
    e_cal = predict_speedup_calibrated(budgets, conditional, held_out, CURVE)
    assert e_cal is not None and predicted is not None and e_cal > predicted


def test_predict_speedup_needs_every_input() -> None:
    fit = fit_line([0, 1], [O0, O0 + O1])
    # 10 steps of d = 2 emitting 20 tokens: u_base·20 / (10·(step + o(2)))
    mix = StepMix({2: 10.0}, credited=20.0, target_only=0.0, tokens=20.0)
    assert predict_speedup(mix, CURVE, fit, 0.011) == pytest.approx(20 * 0.011 / (10 * step_time(2)))
    assert predict_speedup(None, CURVE, fit, 0.011) is None
    assert predict_speedup(mix, None, fit, 0.011) is None
    assert predict_speedup(mix, CURVE, None, 0.011) is None
    assert predict_speedup(mix, CURVE, fit, None) is None
    # issue 37: an overhead line fitted to noise (negative per drafted token, a loaded machine) would predict
    # 20x at 2 tokens per forward; a drafting step costs at least a plain one, so E > tokens per forward is
    # refused (None), not printed
    # (spec time 10·0.016 + 10·O0 − 0.004·20 = 0.09 s > 0: E would be 0.22/0.09 = 2.4 at 2 tokens per forward)
    noisy = fit_line([0, 1], [O0, O0 - 0.004])
    assert predict_speedup(mix, CURVE, noisy, 0.011) is None
    fine = fit_line([0, 1], [O0, O0 - 0.002])  # 0.13 s: E 1.69, within the 2 tokens per forward
    assert predict_speedup(mix, CURVE, fine, 0.011) == pytest.approx(0.22 / 0.13)


def test_measured_and_predicted_e_cal_agree_on_a_run_with_short_drafts() -> None:
    """issue 20: on `bench --k 4,8 --max-tokens 16` E_cal was 6.8% / 13% too low and tune's prediction for
    the same run differed again (full drafts assumed). Simulate the engine's rule — d = min(k, tokens left
    − 1), a target-only forward for the last token — over short outputs, measure E_cal and predict it
    from the run's own per-position rates: one definition, the two agree."""
    rng = np.random.default_rng(8)
    k, budget, beta = 8, 15, 0.75
    requests = []
    for i in range(400):
        steps, left = [], budget
        while left > 0:
            d = min(k, left - 1)
            a = 0
            while a < d and rng.random() < beta:
                a += 1
            steps.append(StepRecord(d, a, a + 1, 0.0, 0.0, d))
            left -= a + 1
        requests.append(RequestRecord(f"r{i}", "c", 5, budget + 1, 1.0, 0.1, 0.1, steps=tuple(steps)))
    assert shortens_drafts(requests, k)
    measured = speedup_calibrated(step_mix(requests), CURVE)
    conditional = [p.conditional for p in per_position_acceptance(requests, positions=k)]
    predicted = predict_speedup_calibrated(decode_budgets(requests, True), conditional, k, CURVE)
    assert measured is not None and predicted is not None
    assert predicted == pytest.approx(measured, rel=0.02)
    # the old forms: every step charged k drafts and t_T(k+1) (too low), full drafts predicted (too high)
    tau = acceptance_length(acceptance_counts(requests))
    assert tau is not None
    charged_full = tau * CURVE.t_target(1) / CURVE.step_s(k)
    assert charged_full < 0.9 * measured
    full_drafts = (predict_acceptance_length([p.cumulative for p in per_position_acceptance(requests)], k)
                   or 0.0) * CURVE.t_target(1) / CURVE.step_s(k)  # fmt: skip
    assert abs(full_drafts / measured - 1) > 0.05


def test_gap_factors_multiply_from_e_lev_to_e_meas() -> None:
    spec, base = run(3), run(0)
    counts = acceptance_counts(spec.requests)
    beta = beta_mle(counts)
    mix = step_mix(spec.requests)
    e_lev = speedup_leviathan(beta, 3, cost_ratio(CURVE))
    e_cal = speedup_calibrated(mix, CURVE)
    e_meas = speedup_measured(spec.requests, base.requests)
    e_dec = speedup_measured(spec.requests, base.requests, decode_only=True)
    g = gap_factors(k=3, beta=beta, mix=mix, curve=CURVE, e_cal=e_cal, e_meas=e_meas, e_meas_decode=e_dec)
    assert None not in (g.short_drafts, g.iid, g.verification, g.engine, g.prefill, e_lev, e_meas)
    assert e_lev * g.short_drafts * g.iid * g.verification * g.engine * g.prefill == pytest.approx(e_meas)
    assert g.short_drafts == pytest.approx(1.0)  # every step of the synthetic run drafts k
    # t_T(4)/t_T(1) = 1.6 > 1 and the engine overhead is positive: both gaps cost speed
    assert g.verification < 1.0 and g.engine < 1.0
    # mixing β = 1/2 and β = 1 requests is not i.i.d. with one β: the factor shows it
    assert g.iid != pytest.approx(1.0)
    flat = CostCurve(target_s=(0.01,) * 5, draft_s=0.001)
    assert (
        gap_factors(
            k=3, beta=beta, mix=mix, curve=flat, e_cal=None, e_meas=None, e_meas_decode=None
        ).verification
        == 1.0
    )


def test_short_drafts_factor_closes_the_chain_when_drafts_are_shortened() -> None:
    # (4,4) and (1,1) alternating: E_lev·short·iid·verification is E_cal, with short_drafts ≠ 1
    steps = [StepRecord(4, 4, 5, 0.0, 0.0, 4), StepRecord(1, 1, 2, 0.0, 0.0, 1)] * 10
    mix = step_mix(steps)
    beta = beta_mle(acceptance_counts(steps))
    e_cal = speedup_calibrated(mix, CURVE)
    g = gap_factors(k=4, beta=beta, mix=mix, curve=CURVE, e_cal=e_cal, e_meas=None, e_meas_decode=None)
    e_lev = speedup_leviathan(beta, 4, cost_ratio(CURVE))
    assert None not in (g.short_drafts, g.iid, g.verification, e_lev, e_cal)
    assert e_lev * g.short_drafts * g.iid * g.verification == pytest.approx(e_cal)
    assert g.short_drafts != pytest.approx(1.0) and g.iid == pytest.approx(1.0)  # β = 1: i.i.d. holds


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
