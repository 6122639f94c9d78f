"""Property tests: over random step records (any k, any d_s ≤ k) every rate lies in [0, 1] and the identities
of docs/metrics.md hold — for the engine's records and for the per-position rates a monitor derives from a
server's counters. Seeds are fixed; each case is a fresh random workload.
"""

from __future__ import annotations

import math
import random

import pytest

from specmeter.metrics.acceptance import (
    acceptance_counts,
    acceptance_length,
    acceptance_rate,
    beta_mle,
    per_position_acceptance,
)
from specmeter.metrics.costmodel import predict_acceptance_length, step_mix
from specmeter.metrics.records import StepRecord
from specmeter.monitoring.acceptance import acceptance_from_delta, per_position_rates
from specmeter.monitoring.adapters import ACCEPTED, DRAFT_TOKENS, DRAFTS, CounterDelta, position_key

CASES = 400


def random_steps(rng: random.Random, k: int, *, full: bool = False) -> list[StepRecord]:
    """Steps of a random workload at k: draft lengths d ≤ k (some short, some target-only), any a ≤ d."""
    steps = []
    style = rng.random()
    for _ in range(rng.randint(0, 60)):
        d = k if full or rng.random() < style else rng.randint(0, k)
        # acceptance with a per-workload β, sometimes position-dependent, sometimes adversarial
        if rng.random() < 0.2:
            a = rng.randint(0, d)
        else:
            beta = rng.random()
            a = 0
            while a < d and rng.random() < beta:
                a += 1
        steps.append(StepRecord(d, a, a + 1, 0.0, 0.0, d))
    return steps


def in_unit(x: float | None) -> bool:
    return x is None or 0.0 <= x <= 1.0


@pytest.mark.parametrize("seed", range(4))
def test_engine_rates_lie_in_unit_interval_and_identities_hold(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(CASES):
        k = rng.randint(1, 10)
        steps = random_steps(rng, k)
        counts = acceptance_counts(steps)
        verification = [s for s in steps if s.drafted > 0]
        positions = per_position_acceptance(steps, positions=k)
        assert len(positions) == k
        # rates in [0, 1]
        assert in_unit(acceptance_rate(counts)) and in_unit(beta_mle(counts))
        for p in positions:
            assert in_unit(p.cumulative) and in_unit(p.conditional), p
            assert 0 <= p.accepted <= p.reached <= p.count <= counts.steps
        # counts: S = steps that drafted position 1, D = Σ drafted-to, A = Σ accepted-at, R
        assert positions[0].count == counts.steps == len(verification)
        assert sum(p.count for p in positions) == counts.drafted
        assert sum(p.accepted for p in positions) == counts.accepted
        assert counts.rejections == sum(1 for s in verification if s.accepted < s.drafted)
        # τ = 1 + A/S = Σ(a_s + 1) / S, the same from the step mix E_cal uses
        tau = acceptance_length(counts)
        assert tau == step_mix(steps).acceptance_length or math.isclose(
            tau or 0.0, step_mix(steps).acceptance_length or 0.0
        )
        if tau is not None:
            assert 1.0 <= tau <= k + 1
        # position 1: reached by every verification step, P_0 = q_0 = #{a ≥ 1} / S
        if counts.steps:
            assert positions[0].reached == counts.steps
            assert positions[0].cumulative == positions[0].conditional
        previous = 1.0
        for p in positions:
            # P_i = P_{i-1}·q_i, never rising; None only where nothing was measured
            if p.cumulative is not None:
                assert p.cumulative <= previous + 1e-12
                if p.conditional is not None:
                    assert p.cumulative == pytest.approx(previous * p.conditional)
                else:
                    assert p.cumulative == 0.0 and previous == 0.0
                previous = p.cumulative
            else:
                previous = math.nan  # everything beyond an unknown position is unknown
                assert p.count == 0 or p.reached == 0


@pytest.mark.parametrize("seed", range(2))
def test_full_drafts_make_cumulative_the_share_of_all_steps_and_predict_tau(seed: int) -> None:
    rng = random.Random(100 + seed)
    for _ in range(CASES):
        k = rng.randint(1, 10)
        steps = [s for s in random_steps(rng, k, full=True) if s.drafted]
        counts = acceptance_counts(steps)
        positions = per_position_acceptance(steps, positions=k)
        if not counts.steps:
            continue
        for i, p in enumerate(positions):
            # every step drafted k: P_i = #{a ≥ i+1} / S, vLLM's counter over num_drafts
            assert p.cumulative == pytest.approx(p.accepted / counts.steps)
            assert p.reached == (counts.steps if i == 0 else positions[i - 1].accepted)
        # τ = 1 + Σ P_i (the "choosing k" identity at k itself)
        cumulative = [p.cumulative for p in positions]
        assert predict_acceptance_length(cumulative, k) == pytest.approx(acceptance_length(counts))


def _counters(steps: list[StepRecord], k: int) -> tuple[float, float, float, list[float]]:
    """What a vLLM-style server exports for these steps: S, D, A and accepted-at-position counters."""
    verification = [s for s in steps if s.drafted]
    accepted_at = [float(sum(1 for s in verification if s.accepted > i)) for i in range(k)]
    return (
        float(len(verification)),
        float(sum(s.drafted for s in verification)),
        float(sum(s.accepted for s in verification)),
        accepted_at,
    )


@pytest.mark.parametrize("seed", range(3))
def test_monitor_rates_from_counters_lie_in_unit_interval(seed: int) -> None:
    rng = random.Random(200 + seed)
    for _ in range(CASES):
        k = rng.randint(1, 10)
        full = rng.random() < 0.3
        steps = random_steps(rng, k, full=full)
        s, d, a, accepted_at = _counters(steps, k)
        rows = per_position_rates(accepted_at, s)
        engine = per_position_acceptance(steps, positions=k)
        previous = 1.0
        for i, row in enumerate(rows):
            assert in_unit(row["cumulative"]) and in_unit(row["conditional"]), row
            if s == 0:
                continue
            # per draft: accepted at i over all drafts, the product of the conditionals
            assert row["cumulative"] == pytest.approx(accepted_at[i] / s)
            if row["conditional"] is not None:
                assert row["cumulative"] == pytest.approx(previous * row["conditional"])
            previous = row["cumulative"]
            # never above specmeter's P_i (short drafts stay in its denominator), equal when all full
            p = engine[i].cumulative
            if p is not None:
                assert row["cumulative"] <= p + 1e-12
                if full:
                    assert row["cumulative"] == pytest.approx(p)
        # the same through a counter delta: α, τ in range; full_drafts only with evidence (D = S·k)
        values = {DRAFTS: s, DRAFT_TOKENS: d, ACCEPTED: a}
        values.update({position_key(i): v for i, v in enumerate(accepted_at)})
        got = acceptance_from_delta("vllm", CounterDelta(values, (), 10.0), k=k)
        assert in_unit(got.acceptance_rate) and in_unit(got.beta)
        if s:
            assert got.acceptance_length == pytest.approx(1 + a / s)
            assert got.full_drafts is (d == s * k)
            if got.full_drafts:
                assert got.beta == pytest.approx(beta_mle(acceptance_counts(steps)))
            else:
                assert got.beta is None


def test_inconsistent_counters_give_no_rate_rather_than_an_impossible_one() -> None:
    # A scrape that caught the per-position counters and the drafts counter at different moments can
    # say position 2 was accepted more often than position 1, or position 1 more often than drafts.
    rows = per_position_rates([12.0, 15.0, 3.0], 10.0)
    assert rows[0]["cumulative"] is None and rows[1]["conditional"] is None
    assert all(in_unit(r["cumulative"]) and in_unit(r["conditional"]) for r in rows)
