"""Acceptance from server totals equals specmeter's own metrics on the same steps (one set of formulas)."""

from __future__ import annotations

import random

import pytest

from specmeter.metrics.acceptance import acceptance_counts, per_position_acceptance
from specmeter.metrics.records import ModelInfo, RequestRecord, RunRecord, StepRecord
from specmeter.metrics.summary import summarize
from specmeter.monitoring.acceptance import acceptance_from_delta, acceptance_from_requests, steps_from_report
from specmeter.monitoring.adapters import ACCEPTED, DRAFT_TOKENS, DRAFTS, CounterDelta, position_key

INFO = ModelInfo("m", "m", "llama", 1, 1, 1, "float32", 1, 1, 1)


def _steps(rng: random.Random, n: int, k: int, beta: float, *, full: bool) -> list[StepRecord]:
    steps = []
    for _ in range(n):
        d = k if full else rng.randint(1, k)
        a = 0
        while a < d and rng.random() < beta:
            a += 1
        steps.append(StepRecord(drafted=d, accepted=a, emitted=a + 1, draft_s=0.0, verify_s=0.0))
    return steps


def _as_counters(steps: list[StepRecord], k: int) -> CounterDelta:
    """What vLLM (and serve) would count for these steps."""
    values = {
        DRAFTS: float(len(steps)),
        DRAFT_TOKENS: float(sum(s.drafted for s in steps)),
        ACCEPTED: float(sum(s.accepted for s in steps)),
    }
    for i in range(k):
        values[position_key(i)] = float(sum(1 for s in steps if s.accepted > i))
    return CounterDelta(values, (), 10.0)


def test_counters_reproduce_the_metrics_of_the_same_steps() -> None:
    rng = random.Random(3)
    steps = _steps(rng, 400, 4, 0.7, full=True)
    acc = acceptance_from_delta("vllm", _as_counters(steps, 4), k=4)
    run = RunRecord(
        INFO, INFO, 4, 0.0, 1.0, (RequestRecord("r", "c", 1, 1, 1.0, 0.1, 0.0, steps=tuple(steps)),)
    )
    summary = summarize(run, None)
    assert acc.full_drafts is True
    assert acc.acceptance_rate == pytest.approx(summary["acceptance_rate"])
    assert acc.acceptance_length == pytest.approx(summary["acceptance_length"])
    assert acc.beta == pytest.approx(summary["beta"])  # R recovered from the last position's counter
    assert acc.rejections == summary["rejections"]
    ours = [p["cumulative"] for p in summary["per_position"]]  # type: ignore[union-attr]
    assert [p["cumulative"] for p in acc.per_position or []] == pytest.approx(ours)


def test_short_drafts_keep_alpha_and_tau_exact_but_withhold_beta() -> None:
    steps = _steps(random.Random(5), 300, 4, 0.6, full=False)
    acc = acceptance_from_delta("vllm", _as_counters(steps, 4), k=4)
    counts = acceptance_counts(steps)
    assert acc.acceptance_rate == pytest.approx(counts.accepted / counts.drafted)
    assert acc.acceptance_length == pytest.approx(1 + counts.accepted / counts.steps)
    assert acc.full_drafts is False and acc.beta is None
    # Counters divide by all steps (vLLM's convention); specmeter divides by the steps that drafted that far.
    exact = per_position_acceptance(steps, positions=4)
    assert acc.per_position is not None
    assert acc.per_position[0]["cumulative"] == pytest.approx(exact[0].cumulative)
    assert acc.per_position[3]["cumulative"] <= (exact[3].cumulative or 0.0)


def test_vllm_per_request_reports_are_summed_and_rebuilt() -> None:
    reports = [
        {
            "num_spec_steps": 4,
            "num_draft_tokens": 12,
            "num_accepted_draft_tokens": 6,
            "acceptance_histogram": [1, 1, 1, 1],
            "num_spec_tokens": 3,
        },
        {
            "num_spec_steps": 2,
            "num_draft_tokens": 6,
            "num_accepted_draft_tokens": 6,
            "acceptance_histogram": [0, 0, 0, 2],
            "num_spec_tokens": 3,
        },
    ]
    acc = acceptance_from_requests(reports)
    assert acc is not None and acc.kind == "vllm" and acc.k == 3
    assert (acc.steps, acc.drafted_tokens, acc.accepted_tokens) == (6, 18, 12)
    assert acc.acceptance_length == pytest.approx(1 + 12 / 6)
    assert acc.beta == pytest.approx(12 / (12 + 6 - 3))  # full drafts: R = S − steps accepting all 3
    assert [p["cumulative"] for p in acc.per_position or []] == pytest.approx([5 / 6, 4 / 6, 3 / 6])
    steps = steps_from_report(reports[0])
    assert steps is not None and sorted(s.accepted for s in steps) == [0, 1, 2, 3]
    assert all(s.drafted == 3 for s in steps)


def test_rebuild_is_refused_when_drafts_were_short_unless_per_length_histogram() -> None:
    short = {
        "num_spec_steps": 3,
        "num_draft_tokens": 10,
        "num_accepted_draft_tokens": 5,
        "acceptance_histogram": [1, 0, 1, 1, 0],
        "num_spec_tokens": 4,
    }
    assert steps_from_report(short) is None
    exact = {**short, "acceptance_histogram_by_draft_length": {"4": [1, 0, 0, 1, 0], "2": [0, 0, 1]}}
    steps = steps_from_report(exact)
    assert steps is not None
    assert sorted((s.drafted, s.accepted) for s in steps) == [(2, 2), (4, 0), (4, 3)]
    contradictory = {**exact, "num_accepted_draft_tokens": 99}
    assert steps_from_report(contradictory) is None


def test_llamacpp_timings_give_alpha_only() -> None:
    acc = acceptance_from_requests(
        [{"draft_n": 100, "draft_n_accepted": 40}, {"draft_n": 50, "draft_n_accepted": 35}]
    )
    assert acc is not None and acc.kind == "llamacpp"
    assert acc.acceptance_rate == pytest.approx(75 / 150)
    assert acc.acceptance_length is None and acc.unavailable
    assert acceptance_from_requests([{"unrelated": 1}]) is None
