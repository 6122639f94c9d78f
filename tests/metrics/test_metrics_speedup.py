"""Speedup models and the measured speedup against hand-computed cases."""

from __future__ import annotations

import pytest
from metrics_builders import CURVE, baseline_run, request, spec_run

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
    # τ = 8/3, k = 4: τ·t_T(1)/(4·t_D(1) + t_T(5)) = (8/3)·0.010/(0.008 + 0.014) = 0.08/0.066 = 40/33
    assert speedup_calibrated(8 / 3, 4, CURVE) == pytest.approx(40 / 33)
    # k + 1 beyond the measured curve: t_T is extrapolated by CostCurve (0.014 + 0.001 = 0.015 for n = 6)
    # τ = 3, k = 5: 3·0.010/(5·0.002 + 0.015) = 0.03/0.025 = 1.2
    assert speedup_calibrated(3.0, 5, CURVE) == pytest.approx(1.2)
    assert speedup_calibrated(None, 4, CURVE) is None
    assert speedup_calibrated(2.0, 4, None) is None
    assert speedup_calibrated(2.0, 1, CostCurve(target_s=(0.0, 0.0), draft_s=0.0)) is None  # zero guard


def test_predict_speedup_calibrated_from_per_position() -> None:
    cumulative = [4 / 6, 0.5, 0.4, 0.2]
    # k = 2: τ(2) = 1 + 4/6 + 0.5 = 13/6; E = (13/6)·0.010/(2·0.002 + t_T(3) = 0.012) = 0.021667/0.016
    assert predict_speedup_calibrated(cumulative, 2, CURVE) == pytest.approx((13 / 6) * 0.010 / 0.016)
    # k = 4 uses all positions: τ = 1 + 4/6 + 0.5 + 0.4 + 0.2 = 2.7667; / (0.008 + 0.014)
    assert predict_speedup_calibrated(cumulative, 4, CURVE) == pytest.approx(
        (1 + 4 / 6 + 1.1) * 0.010 / 0.022
    )
    assert predict_speedup_calibrated(cumulative, 5, CURVE) is None  # position 5 never measured
    assert predict_speedup_calibrated([0.5, None], 2, CURVE) is None
    assert predict_speedup_calibrated(cumulative, 1, None) is None
    with pytest.raises(ValueError):
        predict_speedup_calibrated(cumulative, 0, CURVE)


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
