"""summarize / summarize_by_category / danger_zone on the worked example, by hand.

Worked example (tests/metrics/metrics_builders.py): W_T = 1000 B, W_D = 100 B, KV 10 and 2 B/token, k = 4,
cost curve t_T(1..5) = 10..14 ms, t_D(1) = 2 ms.
  request a (legal):   steps (d,a,emitted) (4,4,5) (4,1,2) (2,0,1) (0,0,1); output 10; prompt 20;
                       emissions 0.1(1) 0.3(5) 0.4(2) 0.5(1) 0.6(1); latency 0.6, TTFT 0.1
  request b (general): steps (4,2,3) (4,0,1) (4,3,2 EOS); output 7; prompt 30;
                       emissions 0.2(1) 0.4(3) 0.5(1) 1.5(2); latency 1.5, TTFT 0.2
  baseline: a latency 1.2 (TTFT 0.1), b latency 2.1 (TTFT 0.2), one d=0 step per decode token.
"""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from metrics_builders import DRAFT, baseline_run, emissions, request, run, spec_run, step

from specmeter.metrics.records import RunRecord
from specmeter.metrics.summary import (
    SUMMARY_KEYS,
    danger_zone,
    judge,
    speedup_verdict,
    summarize,
    summarize_by_category,
)

RESULTS_MD = Path(__file__).resolve().parents[2] / "docs" / "results.md"


def documented_summary_keys() -> list[str]:
    """Keys in the first column of docs/results.md's "## Summary" table."""
    text = RESULTS_MD.read_text(encoding="utf-8")
    section = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    keys: list[str] = []
    for line in section.splitlines():
        if line.startswith("| `"):
            keys.extend(re.findall(r"`([a-z0-9_]+)`", line.split("|")[1]))
    return keys


def test_summary_has_exactly_the_documented_keys() -> None:
    documented = documented_summary_keys()
    assert len(documented) == len(set(documented))
    assert set(SUMMARY_KEYS) == set(documented)
    assert set(summarize(spec_run(), baseline_run())) == set(documented)
    assert set(summarize(baseline_run(), None)) == set(documented)
    assert set(summarize(run([]), None)) == set(documented)


def test_worked_example_summary() -> None:
    s = summarize(spec_run(), baseline_run())
    # counts: S = 6, forwards = 7, D = 22, A = 10, R = 5, N = 10 + 7 = 17 output tokens
    assert (s["requests"], s["steps"], s["target_forwards"]) == (2, 6, 7)
    assert (s["drafted_tokens"], s["accepted_tokens"], s["rejections"], s["emitted_tokens"]) == (
        22,
        10,
        5,
        17,
    )
    assert s["acceptance_rate"] == pytest.approx(10 / 22)  # α
    assert s["beta"] == pytest.approx(10 / 15)  # β = A/(A+R)
    assert s["acceptance_length"] == pytest.approx(1 + 10 / 6)  # τ
    # q_i = accepted / reached and P_i their running product (test_metrics_acceptance has the counts)
    assert s["per_position"] == [
        {"position": 1, "cumulative": pytest.approx(4 / 6), "conditional": pytest.approx(4 / 6), "count": 6,
         "reached": 6},
        {"position": 2, "cumulative": pytest.approx(1 / 2), "conditional": pytest.approx(3 / 4), "count": 6,
         "reached": 4},
        {"position": 3, "cumulative": pytest.approx(1 / 3), "conditional": pytest.approx(2 / 3), "count": 5,
         "reached": 3},
        {"position": 4, "cumulative": pytest.approx(1 / 6), "conditional": pytest.approx(1 / 2), "count": 5,
         "reached": 2},
    ]  # fmt: skip
    # c = 2/10; E_seed = 1/(1 − (10/22)·0.8) = 22/14; E_lev = (211/81)/1.8
    assert s["cost_ratio"] == pytest.approx(0.2)
    assert s["cost_curve"] == {"target_ms": pytest.approx([10, 11, 12, 13, 14]), "draft_ms": pytest.approx(2)}
    assert s["speedup_seed"] == pytest.approx(22 / 14)
    assert s["speedup_leviathan"] == pytest.approx(211 / 81 / 1.8)
    # E_cal prices each forward with its own d: Σ(a+1) = 5+2+1+3+1+4 = 16 tokens and the target-only
    # forward's 1 = 17 tokens × t_T(1) = 170 ms against five d=4 steps (8 + 14 ms), one d=2 step (4 + 12 ms)
    # and the target-only forward (10 ms) = 136 ms
    assert s["speedup_calibrated"] == pytest.approx(170 / 136)
    by_k = s["speedup_calibrated_by_k"]
    assert isinstance(by_k, list) and [row["k"] for row in by_k] == [1, 2, 3, 4]
    # E_meas = (1.2 + 2.1)/(0.6 + 1.5); decode-only (1.1 + 1.9)/(0.5 + 1.3)
    assert s["speedup_measured"] == pytest.approx(3.3 / 2.1)
    assert s["speedup_measured_decode"] == pytest.approx(3.0 / 1.8)
    # two requests are too few for an interval (docs/metrics.md, "Statistics")
    assert s["speedup_measured_ci"] is None and s["acceptance_rate_ci"] is None
    # TTFT 0.1, 0.2 s: p50 150, p90 190, p99 199, mean 150 ms
    assert s["ttft_ms"] == pytest.approx({"p50": 150.0, "p90": 190.0, "p99": 199.0, "mean": 150.0})
    # TPOT a 0.5/9, b 1.3/6 -> mean = p50 = (55.56 + 216.67)/2 ms
    tpot_mean = (0.5 / 9 + 1.3 / 6) / 2 * 1000
    assert s["tpot_ms"]["p50"] == pytest.approx(tpot_mean)  # type: ignore[index]
    # pooled gaps sorted 0.1 0.1 0.1 0.1 0.2 0.2 1.0: p50 = 0.1; p90 at index 5.4 -> 0.2 + 0.4·0.8 = 0.52;
    # p99 at 5.94 -> 0.2 + 0.94·0.8 = 0.952; mean 1.8/7
    assert s["gap_ms"] == pytest.approx({"p50": 100.0, "p90": 520.0, "p99": 952.0, "mean": 1800 / 7})
    assert s["gap_p99_over_p50"] == pytest.approx(9.52)
    # per-token gaps 0.04 0.05 0.1 0.1 | 0.0667 0.1 0.5: p50 0.1, mean (0.89 + 0.2/3)/7
    assert s["gap_per_token_ms"]["p50"] == pytest.approx(100.0)  # type: ignore[index]
    assert s["gap_per_token_ms"]["mean"] == pytest.approx((0.89 + 0.2 / 3) / 7 * 1000)  # type: ignore[index]
    assert s["latency_ms"]["mean"] == pytest.approx(1050.0)  # type: ignore[index]
    assert s["jitter"] == pytest.approx(math.sqrt(4.6) / 1.8)
    assert (s["stalls"], s["stall_rate"]) == (1, pytest.approx(1 / 7))
    assert s["tokens_per_s"] == pytest.approx(17 / 2.1)
    # decode: 9 + 6 tokens after the first over (0.6 − 0.1) + (1.5 − 0.2) = 1.8 s
    assert s["decode_tokens_per_s"] == pytest.approx(15 / 1.8)
    # memory: context = max(20 + 10, 30 + 7) = 37 -> extra = 100 + 2·37 = 174 B
    assert s["weight_bytes"] == {"target": 1000, "draft": 100}
    assert s["kv_bytes_per_token"] == {"target": 10, "draft": 2}
    assert s["extra_memory_bytes"] == 174
    # traffic (7·1000 + 22·100)/15 decode-emitted tokens = 613.3 B/token; baseline W_T = 1000
    assert s["weight_traffic_per_token"] == pytest.approx(9200 / 15)
    assert s["baseline_weight_traffic_per_token"] == 1000
    assert s["bandwidth_efficiency"] == pytest.approx((1000 - 9200 / 15) / (174 / 2**30))
    # achieved: 9200 weight bytes read over 1.8 s of decode; no copy bandwidth measured -> no fraction
    assert s["achieved_bytes_per_s"] == pytest.approx(9200 / 1.8)
    assert s["copy_bytes_per_s"] is None and s["bandwidth_fraction"] is None
    # α = 0.4545 < 0.5 but E_meas 1.57: the verdict comes from the speedup; α is a named warning with its
    # effect, never DANGER beside a speedup above 1 (docs/metrics.md, "Verdicts")
    assert s["danger_zone"] is False and s["danger_reasons"] == [] and s["verdict"] == "pays"
    (warning,) = s["warnings"]
    assert warning.startswith("α 0.45: most drafted tokens are discarded; still 1.57x because")


def test_confidence_intervals_bracket_the_point_estimates() -> None:
    # the worked example's two requests, five times over (ids kept distinct): ten requests get intervals
    base, spec = baseline_run(), spec_run()

    def times(r: RunRecord, n: int) -> RunRecord:
        reqs = [replace(q, id=f"{q.id}{i}") for i in range(n) for q in r.requests]
        return replace(r, requests=tuple(reqs))

    s = summarize(times(spec, 5), times(base, 5))
    for key, ci_key in [
        ("acceptance_rate", "acceptance_rate_ci"),
        ("beta", "beta_ci"),
        ("acceptance_length", "acceptance_length_ci"),
        ("speedup_measured", "speedup_measured_ci"),
    ]:
        ci = s[ci_key]
        assert isinstance(ci, list) and len(ci) == 2
        assert ci[0] <= s[key] <= ci[1]
    # α per request: a 5/10, b 5/12; every resample's ratio lies between them
    assert 5 / 12 <= s["acceptance_rate_ci"][0] <= s["acceptance_rate_ci"][1] <= 0.5  # type: ignore[index]
    # τ per request: a 1 + 5/3, b 1 + 5/3 -> both the same -> degenerate interval at 8/3
    assert s["acceptance_length_ci"] == pytest.approx([8 / 3, 8 / 3])
    # one request fewer than the threshold: no interval at all
    fewer = summarize(replace(spec, requests=times(spec, 5).requests[:9]), base)
    assert fewer["acceptance_rate_ci"] is None and fewer["acceptance_length_ci"] is None


def test_summary_is_strict_json() -> None:
    for summary in (
        summarize(spec_run(), baseline_run()),
        summarize(baseline_run(), None),
        summarize(run([]), None),
        summarize(spec_run(), None, context_tokens=0),
    ):
        json.dumps(summary, allow_nan=False)
        assert _only_json_types(summary)


def _only_json_types(value: object) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _only_json_types(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_only_json_types(v) for v in value)
    return value is None or type(value) in (bool, int, float, str)


def test_baseline_run_summary() -> None:
    s = summarize(baseline_run(), None)
    # counts: no verification steps; 9 + 6 = 15 target forwards; N = 10 + 7
    assert (s["steps"], s["target_forwards"], s["drafted_tokens"], s["emitted_tokens"]) == (0, 15, 0, 17)
    for key in (
        "acceptance_rate",
        "acceptance_rate_ci",
        "beta",
        "beta_ci",
        "acceptance_length",
        "acceptance_length_ci",
        "per_position",
        "cost_ratio",
        "speedup_measured",
        "speedup_measured_ci",
        "speedup_measured_decode",
        "speedup_seed",
        "speedup_leviathan",
        "speedup_calibrated",
        "extra_memory_bytes",
        "bandwidth_efficiency",
    ):
        assert s[key] is None, key
    # one forward of W_T per decode token -> exactly W_T per token
    assert s["weight_traffic_per_token"] == 1000.0
    assert s["weight_bytes"] == {"target": 1000, "draft": None}
    assert s["danger_zone"] is False and s["danger_reasons"] == []
    # latency figures still apply: tokens/s = 17/(1.2 + 2.1)
    assert s["tokens_per_s"] == pytest.approx(17 / 3.3)


def test_without_baseline_or_cost_curve() -> None:
    s = summarize(run(spec_run().requests, cost_curve=None), None)
    assert s["acceptance_rate"] == pytest.approx(10 / 22)
    for key in (
        "speedup_measured",
        "speedup_measured_ci",
        "speedup_measured_decode",
        "cost_ratio",
        "cost_curve",
    ):
        assert s[key] is None, key
    for key in ("speedup_seed", "speedup_leviathan", "speedup_calibrated"):
        assert s[key] is None, key


def test_empty_run() -> None:
    s = summarize(run([]), run([], draft=None))
    assert (s["requests"], s["steps"], s["emitted_tokens"], s["stalls"]) == (0, 0, 0, 0)
    assert s["per_position"] == [
        {"position": i, "cumulative": None, "conditional": None, "count": 0, "reached": 0}
        for i in (1, 2, 3, 4)
    ]
    for key in (
        "acceptance_rate",
        "acceptance_rate_ci",
        "speedup_measured",
        "ttft_ms",
        "gap_ms",
        "tokens_per_s",
    ):
        assert s[key] is None, key
    assert s["extra_memory_bytes"] == 100  # the draft's weights with no context at all
    assert s["weight_traffic_per_token"] is None
    assert s["danger_zone"] is False


def test_single_token_requests() -> None:
    # max_tokens = 1: no decode step, one emission, TPOT undefined, no gaps
    reqs = [
        request(i, [], output_tokens=1, latency_s=0.1, ttft_s=0.1, emitted=emissions((0.1, 1))) for i in "xy"
    ]
    s = summarize(run(reqs), None)
    assert (s["steps"], s["emitted_tokens"]) == (0, 2)
    assert s["tpot_ms"] is None and s["gap_ms"] is None and s["jitter"] is None and s["stall_rate"] is None
    assert s["acceptance_rate"] is None and s["danger_zone"] is False
    assert s["tokens_per_s"] == pytest.approx(2 / 0.2)


def test_context_tokens_override() -> None:
    # extra = W_D + 2 B/token × 1000 tokens = 2100
    assert summarize(spec_run(), None, context_tokens=1000)["extra_memory_bytes"] == 100 + 2 * 1000


def test_all_rejected_run_is_in_the_danger_zone_twice() -> None:
    # α = 0 and a slower spec run (2 s vs 1 s)
    spec = run([request("a", [step(4, 0)] * 3, latency_s=2.0, ttft_s=0.1)])
    base = run([request("a", [step(0, 0)] * 3, latency_s=1.0, ttft_s=0.1)], draft=None)
    s = summarize(spec, base)
    assert s["acceptance_rate"] == 0.0 and s["speedup_measured"] == pytest.approx(0.5)
    assert s["danger_reasons"] == [
        "measured speedup 0.50x < 1.00x: speculative decoding is slower than decoding without it",
    ]
    assert s["verdict"] == "slower"
    assert s["warnings"] == ["α 0.00: most drafted tokens are discarded, and speculation is slower (0.50x)"]
    # traffic: 3 forwards × 1000 + 12 draft forwards × 100 over 3 tokens = 1400 > W_T -> negative efficiency
    assert s["weight_traffic_per_token"] == pytest.approx(1400.0)
    assert s["bandwidth_efficiency"] < 0  # type: ignore[operator]


def test_all_accepted_run() -> None:
    spec = run([request("a", [step(4, 4)] * 2), request("b", [step(4, 4)])])
    s = summarize(spec, None)
    # α = β = 1, τ = 5; E_lev at β = 1 is (k+1)/(kc+1) = 5/1.8; E_seed = 1/(1 − 0.8) = 5
    assert (s["acceptance_rate"], s["beta"], s["acceptance_length"]) == (1.0, 1.0, 5.0)
    assert s["speedup_leviathan"] == pytest.approx(5 / 1.8)
    assert s["speedup_seed"] == pytest.approx(5.0)
    assert s["acceptance_rate_ci"] is None  # two requests: too few for an interval
    assert s["danger_zone"] is False


def test_by_category() -> None:
    by = summarize_by_category(spec_run(), baseline_run())
    assert list(by) == ["general", "legal"]
    legal, general = by["legal"], by["general"]
    # legal = request a: α = (4+1+0)/(4+4+2) = 0.5 (not < 0.5); E_meas = 1.2/0.6 = 2
    assert legal["requests"] == 1
    assert legal["acceptance_rate"] == pytest.approx(0.5)
    assert legal["speedup_measured"] == pytest.approx(2.0)
    assert legal["speedup_measured_ci"] is None  # one request: no interval
    assert legal["danger_zone"] is False
    # legal's own longest request: 20 + 10 = 30 tokens -> 100 + 60
    assert legal["extra_memory_bytes"] == 160
    # general = request b: α = (2+0+3)/12 = 0.4167 -> danger; E_meas = 2.1/1.5 = 1.4
    assert general["acceptance_rate"] == pytest.approx(5 / 12)
    assert general["speedup_measured"] == pytest.approx(1.4)
    assert general["danger_reasons"] == [] and general["verdict"] == "pays"
    assert general["warnings"][0].startswith("α 0.42: most drafted tokens are discarded; still 1.40x")
    assert summarize_by_category(run([]), None) == {}


def test_by_category_without_baseline_and_for_the_baseline() -> None:
    by = summarize_by_category(baseline_run(), None)
    assert set(by) == {"general", "legal"}
    assert by["legal"]["acceptance_rate"] is None
    assert by["legal"]["target_forwards"] == 9


def test_danger_zone_messages() -> None:
    # a speedup decides: α 0.21 beside 1.3x is a warning, not the danger zone
    assert danger_zone({"acceptance_rate": 0.21, "speedup_measured": 1.3}) == (False, [])
    # without a speedup the α rule is all there is to judge by
    assert danger_zone({"acceptance_rate": 0.21}) == (
        True,
        ["acceptance rate 0.21 < 0.50: most drafted tokens are thrown away (no speedup to judge by)"],
    )
    assert danger_zone({"acceptance_rate": 0.7, "speedup_measured": 0.87}) == (
        True,
        ["measured speedup 0.87x < 1.00x: speculative decoding is slower than decoding without it"],
    )
    # borderline figures are printed with enough digits not to read "0.50 < 0.50"
    assert danger_zone({"acceptance_rate": 0.499})[1] == [
        "acceptance rate 0.499 < 0.50: most drafted tokens are thrown away (no speedup to judge by)"
    ]
    assert danger_zone({"speedup_measured": 0.9996})[1] == [
        "measured speedup 0.9996x < 1.00x: speculative decoding is slower than decoding without it"
    ]
    # exactly at the thresholds is not danger; missing figures raise no alarm
    assert danger_zone({"acceptance_rate": 0.5, "speedup_measured": 1.0}) == (False, [])
    assert danger_zone({"acceptance_rate": None, "speedup_measured": None}) == (False, [])
    assert danger_zone({}) == (False, [])


def test_draft_without_steps_is_not_mistaken_for_a_baseline() -> None:
    # an HTTP run knows its draft but has no step records: no α (None), no alarm on α
    s = summarize(run([request("a", [], output_tokens=5, latency_s=1.0)], draft=DRAFT), None)
    assert s["acceptance_rate"] is None and s["danger_zone"] is False
    assert s["weight_traffic_per_token"] is None  # no decode steps recorded


def test_metrics_package_does_not_import_torch() -> None:
    # every module of the package, not only its __init__
    code = (
        "import importlib, pkgutil, sys, specmeter.metrics as m\n"
        "names = [i.name for i in pkgutil.iter_modules(m.__path__, 'specmeter.metrics.')]\n"
        "assert len(names) > 5, names\n"
        "for n in names: importlib.import_module(n)\n"
        "sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_verdict_follows_the_interval() -> None:
    assert speedup_verdict(1.14, [1.06, 1.24]) == "pays"
    assert speedup_verdict(0.9, [0.8, 0.95]) == "slower"
    assert speedup_verdict(1.02, [0.97, 1.08]) == "unclear"
    assert speedup_verdict(1.3) == "pays" and speedup_verdict(0.8) == "slower"
    assert speedup_verdict(None) is None
    # suffix on legal in the issue: α 0.39 beside 1.14x [1.06, 1.24] -> pays, with the α warning's effect
    j = judge({"acceptance_rate": 0.39, "speedup_measured": 1.14, "speedup_measured_ci": [1.06, 1.24],
               "steps": 30, "target_forwards": 100})  # fmt: skip
    assert j["danger_zone"] is False and j["verdict"] == "pays"
    assert j["warnings"] == [
        "α 0.39: most drafted tokens are discarded; still 1.14x because it drafts at only 30% of the steps, "
        "where it has a match"
    ]
    # suffix on legal in the demo: α 0.39 beside 0.99x [0.93, 1.07] is unclear, not "slower"
    j = judge({"acceptance_rate": 0.39, "speedup_measured": 0.99, "speedup_measured_ci": [0.93, 1.07]})
    assert j["verdict"] == "unclear"
    assert j["warnings"] == [
        "α 0.39: most drafted tokens are discarded; 0.99x, whose interval holds 1.00x: "
        "no measurable gain or loss"
    ]
    # E < 1 whose interval holds 1: still named, and the interval said
    j = judge({"acceptance_rate": 0.7, "speedup_measured": 0.97, "speedup_measured_ci": [0.9, 1.05]})
    assert j["verdict"] == "unclear" and j["danger_zone"] is True
    assert j["danger_reasons"][0].endswith("(its interval holds 1.00x)")


def test_no_danger_beside_an_interval_above_one() -> None:
    """Property (issue 37): no verdict contradicts its interval, over 3,000 random (E, interval, α)."""
    rng = random.Random(37)
    for _ in range(3000):
        e, width, skew = rng.uniform(0.05, 5.0), rng.uniform(0.0, 1.0), rng.random()
        alpha = None if rng.random() < 0.2 else rng.random()
        lo, hi = e - width * skew, e + width * (1 - skew)
        j = judge({"acceptance_rate": alpha, "speedup_measured": e, "speedup_measured_ci": [lo, hi]})
        if lo > 1.0:
            assert j["danger_zone"] is False and j["verdict"] == "pays"
        if hi < 1.0:
            assert j["danger_zone"] is True and j["verdict"] == "slower"
        if j["danger_zone"]:
            assert e < 1.0
