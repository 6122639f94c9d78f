"""``tune --batch``'s analysis on a surface where speculation stops paying: best k = 0, the crossover, the
schedule's k = 0 range — fixed inputs with values worked out by hand (the CLI test only sees the bundled
models, which never cross on this machine)."""

from __future__ import annotations

import json

import pytest
from selection_builders import run

from specmeter.engine.schedule import parse_schedule_option
from specmeter.metrics.batch_surface import CostSurface, SurfacePoint
from specmeter.selection.batch_analysis import analyse_batch_tune

K_MAX = 4


def _surface() -> CostSurface:
    # t_step(B, k) = 1 + 0.5 B + k (0.2 + 0.3 B): verification grows with B (k + 1), drafting with B k.
    points = []
    for b in (1, 4, 16):
        for k in range(K_MAX + 1):
            step = 1 + 0.5 * b + k * (0.2 + 0.3 * b)
            points.append(SurfacePoint(b, k, step, draft_s=0.1 * step, verify_s=0.9 * step, step_spread=0.0,
                                       steps=27))  # fmt: skip
    return CostSurface(tuple(points), rates=(0.5, 0.25, 0.125, 0.0625), repeats=27)


def test_best_k_zero_beyond_the_crossover_and_its_schedule() -> None:
    # One β = 1/2 request at k = 4: cumulative P_i = 0.5^i, so τ(1) = 1.5, τ(2) = 1.75, τ(4) = 1.9375.
    source = run(4, requests=(("g1", "general/chat", 0.5, 3255),))
    section = analyse_batch_tune(source, _surface(), k_max=K_MAX, draft_path="/m/draft")
    rows = {r["batch"]: r for r in section["table"]}
    # B = 1: E(1, 1) = 1.5 · 1.5 / 2.0 = 1.125, E(1, 2) = 1.75 · 1.5 / 2.5 = 1.05: k = 1 is best.
    assert rows[1]["by_k"][1]["speedup_predicted"] == pytest.approx(1.125)
    assert rows[1]["best_k"] == 1 and rows[1]["best_speedup"] == pytest.approx(1.125)
    # B = 4: E(4, 1) = 1.5 · 3 / 4.4 = 1.023 still pays; B = 16: E(16, 1) = 1.5 · 9 / 14 = 0.964: none.
    assert rows[4]["best_k"] == 1 and rows[4]["best_speedup"] == pytest.approx(1.5 * 3 / 4.4)
    assert rows[16]["by_k"][1]["speedup_predicted"] == pytest.approx(1.5 * 9 / 14)
    assert rows[16]["best_k"] == 0 and rows[16]["best_speedup"] == 1.0
    assert section["best_k"] == {"1": 1, "4": 1, "16": 0}
    assert section["crossover_batch"] == 16
    table = section["num_speculative_tokens_per_batch_size"]
    assert table[-1][2] == 0 and table[0][:1] == [1]  # the last range decodes plainly
    assert section["speculative_config"]["num_speculative_tokens_per_batch_size"] == table
    schedule = parse_schedule_option(section["serve_k_schedule"])
    assert [schedule.k_for(b) for b in (1, 4, 16)] == [1, 1, 0]
    assert json.loads(section["serve_k_schedule"]) == table


def test_no_crossover_when_speculation_pays_at_every_batch_size() -> None:
    source = run(4, requests=(("l1", "legal/nda", 1.0, 60),))  # every step accepts all 4: τ(k) = k + 1
    section = analyse_batch_tune(source, _surface(), k_max=K_MAX)
    assert section["crossover_batch"] is None
    assert all(k > 0 for k in section["best_k"].values())


def test_bench_and_tune_predict_the_steady_state_with_one_tau() -> None:
    """Issue 28: bench --batch used the pooled τ = 1 + A/S, tune --batch τ(k) = 1 + Σ_{i<k} P_i. Steps near
    the token limit draft fewer than k tokens; the steady state drafts k, so both use τ(k) from the
    per-position (Kaplan–Meier) rates. Steps (d, a) = (4,4) (4,1) (4,0) (4,2) (2,2) (1,0): q_i = 4/6, 3/4,
    1/2, 1/1, so P_i = 2/3, 1/2, 1/4, 1/4 and τ(4) = 8/3, while 1 + A/S = 1 + 9/6 = 2.5."""
    from dataclasses import replace

    from selection_builders import TTFT, base_request

    from specmeter.metrics.records import RequestRecord, StepRecord
    from specmeter.selection.batch_analysis import analyse_batch_bench

    pattern = [(4, 4), (4, 1), (4, 0), (4, 2), (2, 2), (1, 0)]
    steps = tuple(StepRecord(d, a, a + 1, 0.0, 0.0, d) for d, a in pattern)
    tokens = sum(a + 1 for _, a in pattern)
    spec = RequestRecord(
        id="r1", category="general/chat", prompt_tokens=10, output_tokens=tokens + 1,
        latency_s=TTFT + 0.02 * len(steps), ttft_s=TTFT, prefill_s=TTFT, steps=steps,
    )  # fmt: skip
    source = replace(run(4), requests=(spec,))
    baseline = replace(run(0, draft=None), requests=(base_request("r1", "general/chat", tokens),))
    surface = _surface()
    tune = analyse_batch_tune(source, surface, k_max=K_MAX)
    for b in (1, 4):
        bench = analyse_batch_bench(b, baseline, [source], surface)["candidates"][0]
        tuned = next(r for r in tune["table"] if r["batch"] == b)["by_k"][4]
        assert bench["acceptance_length"] == pytest.approx(8 / 3)
        assert tuned["acceptance_length"] == pytest.approx(8 / 3)
        assert bench["speedup_predicted"] == pytest.approx(tuned["speedup_predicted"])
