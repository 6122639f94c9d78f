"""Speedup models and the measured speedup against hand-computed cases."""

from __future__ import annotations

import pytest
from metrics_builders import CURVE, baseline_run, request, spec_run, step

from specmeter.metrics.costmodel import predict_step_mix, step_mix
from specmeter.metrics.records import CostCurve
from specmeter.metrics.speedup import (
    cost_ratio,
    pair_latencies,
    predict_speedup_calibrated,
    speedup_calibrated,
    speedup_leviathan,
    speedup_measured,
    speedup_seed,
)


def test_cost_ratio() -> None:
    # c = t_D(1)/t_T(1) = 0.002/0.010 = 0.2
    assert cost_ratio(CURVE) == pytest.approx(0.2)
    assert cost_ratio(None) is None
    assert cost_ratio(CostCurve(target_s=(0.0,), draft_s=0.001)) is None  # zero-time guard
    assert cost_ratio(CostCurve(target_s=(), draft_s=0.001)) is None


def test_speedup_seed() -> None:
    # α = 10/22, c = 0.2: 1/(1 − (10/22)·0.8) = 1/(1 − 8/22) = 22/14
    assert speedup_seed(10 / 22, 0.2) == pytest.approx(22 / 14)
    # α = 0: no gain at all -> 1; α = 1, c = 0.5 -> 1/(1 − 0.5) = 2
    assert speedup_seed(0.0, 0.3) == 1.0
    assert speedup_seed(1.0, 0.5) == pytest.approx(2.0)
    # α = 1 with a free draft is unbounded -> None, not inf
    assert speedup_seed(1.0, 0.0) is None
    assert speedup_seed(None, 0.2) is None
    assert speedup_seed(0.5, None) is None


def test_speedup_leviathan() -> None:
    # β = 2/3, k = 4, c = 0.2: (1 + 2/3 + 4/9 + 8/27 + 16/81) / (4·0.2 + 1) = (211/81)/1.8
    assert speedup_leviathan(2 / 3, 4, 0.2) == pytest.approx(211 / 81 / 1.8)
    # closed form (1 − β^{k+1})/((1 − β)(kc + 1)) at β = 0.5, k = 2, c = 0.1: 0.875/(0.5·1.2) = 1.4583
    assert speedup_leviathan(0.5, 2, 0.1) == pytest.approx(0.875 / 0.6)
    # β = 1 limit: (k+1)/(kc+1) = 5/1.8
    assert speedup_leviathan(1.0, 4, 0.2) == pytest.approx(5 / 1.8)
    # β = 0: one token per step, paying k draft forwards: 1/(kc+1)
    assert speedup_leviathan(0.0, 4, 0.2) == pytest.approx(1 / 1.8)
    assert speedup_leviathan(None, 4, 0.2) is None
    assert speedup_leviathan(0.5, 4, None) is None


def test_speedup_calibrated() -> None:
    # Three full steps at k = 4 accepting 4, 1, 3: τ = 1 + 8/3; every step costs 4·t_D(1) + t_T(5) = 22 ms,
    # so E_cal = τ·t_T(1)/22 ms = (11/3)·10/22 = 5/3 — the full-draft form τ·t_T(1)/(k·t_D(1) + t_T(k+1))
    assert speedup_calibrated(step_mix([step(4, 4), step(4, 1), step(4, 3)]), CURVE) == pytest.approx(5 / 3)
    # k + 1 beyond the measured curve: t_T is extrapolated by CostCurve (0.014 + 0.001 = 0.015 for n = 6)
    # two steps (5,2): τ = 3; 3·0.010/(5·0.002 + 0.015) = 0.03/0.025 = 1.2
    assert speedup_calibrated(step_mix([step(5, 2)] * 2), CURVE) == pytest.approx(1.2)
    assert speedup_calibrated(None, CURVE) is None
    assert speedup_calibrated(step_mix([step(4, 1)]), None) is None
    # a plain forward alone: one token at t_T(1), E_cal exactly 1
    assert speedup_calibrated(step_mix([step(0, 0)]), CURVE) == pytest.approx(1.0)
    assert speedup_calibrated(step_mix([]), CURVE) is None  # no decode forward
    zero = CostCurve(target_s=(0.0, 0.0), draft_s=0.0)
    assert speedup_calibrated(step_mix([step(1, 1)]), zero) is None  # zero guard


def test_speedup_calibrated_prices_each_step_with_its_own_draft_length() -> None:
    # issue 20: steps [(d=4, a=4), (d=1, a=1)] × 10 with a flat t_T = 10 ms and t_D = 2 ms. The baseline
    # would spend 70 one-token forwards (700 ms) on the 70 tokens; speculation spent 10·(4·2 + 10) +
    # 10·(1·2 + 10) = 300 ms: E_cal = 70/30. Charging every step k = 4 draft forwards and t_T(5) gave
    # τ = 3.5 over 18 ms per step: 35/18 = 1.944.
    flat = CostCurve(target_s=(0.010,) * 5, draft_s=0.002)
    steps = [step(4, 4), step(1, 1)] * 10
    assert speedup_calibrated(step_mix(steps), flat) == pytest.approx(70 / 30)
    # a forward that drafted nothing costs t_T(1) and yields one token: E_cal pays for it as E_meas does
    assert speedup_calibrated(step_mix([*steps, step(0, 0)]), flat) == pytest.approx(71 / 31)


def test_speedup_calibrated_follows_the_drafting_share() -> None:
    """Issue 37: a method that drafts on a share f of the steps has E_cal (f·τ + 1 − f)/(f·τ/E_k + 1 − f),
    E_k its E_cal over the drafting steps alone; the measured proposing time the curve does not price is
    added (a lookup, a head)."""
    flat = CostCurve(target_s=(0.010,) * 5, draft_s=0.0)
    drafting = [step(4, 3), step(4, 1), step(2, 2)]
    e_k = speedup_calibrated(step_mix(drafting), flat)
    assert e_k is not None
    tau = (4 + 2 + 3) / 3
    for plain in (0, 1, 3, 9, 40):
        f = 3 / (3 + plain)
        got = speedup_calibrated(step_mix([*drafting, *[step(0, 0)] * plain]), flat)
        assert got == pytest.approx((f * tau + 1 - f) / (f * tau / e_k + 1 - f))
    # 43 forwards with 6 ms of lookups in all: the lookups are paid
    steps = [*drafting, *[step(0, 0)] * 40]
    expected = 49 * 0.010 / (43 * 0.010 + 0.006)
    assert speedup_calibrated(step_mix(steps), flat, 0.006) == pytest.approx(expected)


def test_predict_speedup_calibrated_from_conditional_rates() -> None:
    conditional = [0.5, 0.5, 0.5, 0.5]
    # One request of 3 decode tokens at k = 2, shortened at the limit (d = min(k, left − 1)):
    #   3 left: d = 2, a = 0 (1/2) -> 2 left; a = 1 (1/4) -> 1 left; a = 2 (1/4) -> done
    #   2 left: d = 1, a = 0 (1/2) -> 1 left; a = 1 (1/2) -> done
    #   1 left: a target-only forward.
    # E[steps with d=2] = 1, E[steps with d=1] = 1/2, credited 1.75 + 1/2·1.5 = 2.5 tokens, priced
    # 1·(2·2 + 12) + 1/2·(2 + 11) = 22.5 ms; the expected e0 target-only forwards (one token left) add e0
    # tokens at 10 ms each: E_cal = (2.5 + e0)·10/(22.5 + 10·e0)
    mix = predict_step_mix([(3, True)], conditional, 2)
    assert mix is not None
    e0 = mix.target_only
    got = predict_speedup_calibrated([(3, True)], conditional, 2, CURVE)
    assert got == pytest.approx((2.5 + e0) * 10 / (22.5 + 10 * e0))
    # without shortening (an EOS ends the output) every step drafts k
    # long outputs approach the full-draft form τ(k)·t_T(1)/(k·t_D(1) + t_T(k+1)) = 1.75·10/16
    long = predict_speedup_calibrated([(100_000, False)], conditional, 2, CURVE)
    assert long == pytest.approx(1.75 * 10 / 16, rel=1e-4)
    assert predict_speedup_calibrated([(3, True)], conditional, 5, CURVE) is None  # position 5 not measured
    assert predict_speedup_calibrated([(3, True)], [0.5, None], 2, CURVE) is None
    assert predict_speedup_calibrated([(3, True)], [0.0, None], 2, CURVE) is not None  # never reached
    assert predict_speedup_calibrated([(3, True)], conditional, 1, None) is None
    with pytest.raises(ValueError):
        predict_speedup_calibrated([(3, True)], conditional, 0, CURVE)


def test_speedup_measured_end_to_end_and_decode_only() -> None:
    # baseline latencies a 1.2, b 2.1; spec a 0.6, b 1.5: (1.2 + 2.1)/(0.6 + 1.5) = 3.3/2.1
    spec, base = spec_run().requests, baseline_run().requests
    assert speedup_measured(spec, base) == pytest.approx(3.3 / 2.1)
    # decode-only (latency − TTFT): (1.1 + 1.9)/(0.5 + 1.3) = 3.0/1.8
    assert speedup_measured(spec, base, decode_only=True) == pytest.approx(3.0 / 1.8)


def test_speedup_measured_is_a_ratio_of_totals_not_a_mean_of_ratios() -> None:
    # short request: 0.1 -> 0.05 (2x); long: 10 -> 10 (1x). Totals: 10.1/10.05 = 1.005, not (2+1)/2.
    spec = [request("s", latency_s=0.05, ttft_s=0.0), request("l", latency_s=10.0, ttft_s=0.0)]
    base = [request("s", latency_s=0.1, ttft_s=0.0), request("l", latency_s=10.0, ttft_s=0.0)]
    assert speedup_measured(spec, base) == pytest.approx(10.1 / 10.05)


def test_pairing_by_id_ignores_unpaired_and_pairs_repeats_in_order() -> None:
    spec = [request("x", latency_s=1.0), request("x", latency_s=2.0), request("y", latency_s=3.0)]
    base = [request("y", latency_s=6.0), request("x", latency_s=4.0), request("z", latency_s=9.0)]
    # pairs: (x#0: 4.0 vs 1.0), (y#0: 6.0 vs 3.0); x#1 and z have no partner
    assert pair_latencies(spec, base) == ([4.0, 6.0], [1.0, 3.0])
    assert speedup_measured(spec, base) == pytest.approx(10.0 / 4.0)
    base.append(request("x", latency_s=8.0))
    assert pair_latencies(spec, base) == ([4.0, 8.0, 6.0], [1.0, 2.0, 3.0])


def test_speedup_measured_guards() -> None:
    assert speedup_measured([], []) is None
    assert speedup_measured([request("a")], [request("b")]) is None  # nothing paired
    zero = [request("a", latency_s=0.0, ttft_s=0.0)]
    assert speedup_measured(zero, [request("a", latency_s=1.0)]) is None  # zero-latency guard


def test_the_cost_curve_never_extrapolates_downwards() -> None:
    # Two noisy points whose last one came out lower: beyond them t_T stays at the last one, never below.
    curve = CostCurve(target_s=(0.010, 0.012, 0.011), draft_s=0.001)
    assert curve.t_target(3) == 0.011 and curve.t_target(30) == 0.011
    rising = CostCurve(target_s=(0.010, 0.012), draft_s=0.001)
    assert rising.t_target(4) == pytest.approx(0.016)
