"""The tune analysis on synthetic sweeps with known acceptance and costs (see selection_builders)."""

from __future__ import annotations

import random

import pytest
from selection_builders import CURVE, DRAFT, O0, O1, TARGET, expected_speedup_decode, run

from specmeter.metrics.records import RequestRecord, RunRecord, StepRecord
from specmeter.metrics.summary import summarize
from specmeter.selection.tune_analysis import ALL, analyse_tune, auto_holdout, explain_row


def _section(ks=(1, 2, 3, 4), k_max=6, holdout=2):
    return analyse_tune(run(0), [run(k) for k in ks], CURVE, k_max=k_max, holdout=holdout)


def test_auto_holdout_takes_the_middle_below_the_largest() -> None:
    assert auto_holdout(list(range(1, 9))) == 4
    assert auto_holdout([1, 2, 4, 8]) == 2
    assert auto_holdout([1, 2]) == 1
    assert auto_holdout([4]) is None
    assert auto_holdout([]) is None


def test_rows_cover_every_k_up_to_k_max_with_measured_and_predicted_figures() -> None:
    s = _section()
    assert s["k_run"] == [1, 2, 3, 4] and s["source_k"] == 4 and s["holdout"] == 2
    rows = s["by_k"][ALL]
    assert [r["k"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [r["run"] for r in rows] == [True, True, True, True, False, False]
    assert [r["held_out"] for r in rows] == [False, True, False, False, False, False]
    for r in rows[:4]:
        for key in ("speedup_seed", "speedup_leviathan", "speedup_calibrated", "speedup_measured"):
            assert r[key] is not None
    # beyond the source k there are no measured positions: nothing is predicted, nothing is made up
    assert rows[4]["speedup_predicted"] is None and rows[4]["acceptance_length_predicted"] is None
    assert rows[4]["speedup_measured"] is None
    assert rows[5]["verification_factor"] == pytest.approx(CURVE.t_target(7) / CURVE.t_target(1))


def test_held_out_prediction_error_is_zero_when_the_model_holds() -> None:
    # Predictions are expectations over acceptance, the synthetic blocks exact proportions: they differ by
    # the expected overshoot of each request's last step, under 0.05% at these lengths.
    s = _section()
    for scope in (ALL, "general/chat", "legal/nda"):
        check = s["holdout_check"][scope]
        assert check["k"] == 2 and check["source_k"] == 4
        for name in ("acceptance_length", "speedup_calibrated", "speedup_measured_decode"):
            assert check[name]["error"] == pytest.approx(0.0, abs=5e-4), (scope, name)
    general = s["holdout_check"]["general/chat"]["speedup_measured_decode"]
    assert general["measured"] == pytest.approx(expected_speedup_decode(2, 0.5))
    # the overhead was fitted without k = 2 and still found the line the records follow
    assert s["overhead"]["fitted_on_k"] == [0, 1, 3, 4]
    assert s["overhead"]["per_forward_ms"] == pytest.approx(O0 * 1000)
    assert s["overhead"]["per_draft_token_ms"] == pytest.approx(O1 * 1000)


def test_best_k_differs_per_category() -> None:
    s = _section()
    # β = 1/2 (general): E falls with k (1.14×, 1.07×, 0.96×, 0.85×); β = 1 (legal): E rises to k = 4
    assert s["best_k"]["general/chat"]["measured"]["k"] == 1
    assert s["best_k"]["legal/nda"]["measured"]["k"] == 4
    assert s["best_k"]["general/chat"]["predicted"]["k"] == 1
    assert s["best_k"]["legal/nda"]["measured"]["pays_off"] is True


def test_k_not_run_is_predicted_from_the_source() -> None:
    s = analyse_tune(run(0), [run(1), run(4)], CURVE, k_max=4, holdout=None)
    rows = s["by_k"]["general/chat"]
    assert [r["run"] for r in rows] == [True, False, False, True]
    assert rows[2]["speedup_predicted"] == pytest.approx(expected_speedup_decode(3, 0.5), rel=1e-3)
    assert s["holdout_check"] is None
    # best predicted k may be one that was never run; the legal category (β = 1) keeps growing with k
    assert s["best_k"]["legal/nda"]["predicted"]["k"] == 4


def test_an_invalid_holdout_is_dropped_rather_than_trusted() -> None:
    s = _section(holdout=4)  # the largest k is the source; it cannot be held out
    assert s["holdout"] is None and s["holdout_check"] is None
    s = _section(holdout=5)  # not run
    assert s["holdout"] is None


def test_no_runs_gives_the_cost_curve_only() -> None:
    s = analyse_tune(run(0), [], CURVE, k_max=3, holdout=None)
    assert s["k_run"] == [] and s["cost_curve"]["n"] == list(range(1, 10))


def test_explanation_walks_from_e_lev_to_e_meas() -> None:
    s = _section()
    row = s["by_k"][ALL][2]  # k = 3
    lines = explain_row(row)
    assert lines[0].startswith("k=3: E_lev")
    assert any("Verifying 4 tokens costs 1.60 single-token forwards" in line for line in lines)
    assert any("E_meas decode-only" in line for line in lines)
    assert lines[-1].endswith(f"E_meas {row['speedup_measured']:.2f}×.")
    assert s["explanation"] == explain_row(s["by_k"][ALL][s["best_k"][ALL]["measured"]["k"] - 1])


def _engine_run(k: int, budget: int, n: int, seed: int, draft: bool = True) -> RunRecord:
    """Requests that end at the token limit, decoded with the engine's rule d = min(k, tokens left − 1)."""
    rng = random.Random(seed)
    requests = []
    for i in range(n):
        steps, left = [], budget
        while left > 0:
            d = min(k, left - 1) if draft else 0
            a = 0
            while a < d and rng.random() < 0.8:
                a += 1
            steps.append(StepRecord(d, a, a + 1, 0.0, 0.0, d))
            left -= a + 1
        latency = 0.05 + sum(CURVE.step_s(s.drafted) for s in steps)
        requests.append(RequestRecord(f"r{i}", "c", 5, budget + 1, latency, 0.05, 0.05, steps=tuple(steps)))
    return RunRecord(TARGET, DRAFT if draft else None, k if draft else 0, 0.0, 1.0, tuple(requests), CURVE)


def test_tune_predicts_the_e_cal_bench_measures_when_drafts_are_short() -> None:
    # issue 20: `bench --k 4,8 --max-tokens 16` — bench's E_cal and tune's prediction for the same run
    # disagreed (1.270 vs 1.421 at k = 8). One definition: the source run's own prediction matches the
    # E_cal its summary reports, and both price the short last drafts.
    base = _engine_run(0, 15, 300, 1, draft=False)
    runs = [_engine_run(4, 15, 300, 2), _engine_run(8, 15, 300, 3)]
    s = analyse_tune(base, runs, CURVE, k_max=8, holdout=None)
    row = s["by_k"][ALL][7]
    assert row["speedup_calibrated"] == pytest.approx(summarize(runs[1], base)["speedup_calibrated"])
    assert row["speedup_calibrated_predicted"] == pytest.approx(row["speedup_calibrated"], rel=0.03)
    assert row["acceptance_length_predicted"] == pytest.approx(row["acceptance_length"], rel=0.03)
    assert row["gap"]["short_drafts"] is not None and row["gap"]["short_drafts"] > 1.05
    # k = 4 was run too and is predicted from k = 8's rates
    four = s["by_k"][ALL][3]
    assert four["speedup_calibrated_predicted"] == pytest.approx(four["speedup_calibrated"], rel=0.03)
