"""Acceptance counts and rates against hand-computed cases."""

from __future__ import annotations

import pytest
from metrics_builders import request, spec_run, step

from specmeter.metrics.acceptance import (
    AcceptanceCounts,
    acceptance_counts,
    acceptance_length,
    acceptance_rate,
    beta_mle,
    expected_acceptance_length,
    expected_acceptance_rate,
    iter_steps,
    per_position_acceptance,
    per_request_rates,
)
from specmeter.metrics.records import StepRecord


def test_counts_of_worked_example_mixed_draft_lengths() -> None:
    # Steps (d, a, emitted): a: (4,4,5) (4,1,2) (2,0,1) (0,0,1); b: (4,2,3) (4,0,1) (4,3,2)
    # S = 6 (the d=0 step is excluded), target forwards = 7
    # D = 4+4+2+4+4+4 = 22, A = 4+1+0+2+0+3 = 10
    # R = #{a<d} = (4,1) (2,0) (4,2) (4,0) (4,3) = 5
    # emitted = 5+2+1+1 + 3+1+2 = 15, F_D = 22 (one draft forward per drafted token)
    counts = acceptance_counts(spec_run().requests)
    assert counts == AcceptanceCounts(
        steps=6, target_forwards=7, drafted=22, accepted=10, emitted=15, rejections=5, draft_forwards=22
    )
    assert acceptance_rate(counts) == pytest.approx(10 / 22)  # α = A/D
    assert acceptance_length(counts) == pytest.approx(1 + 10 / 6)  # τ = 1 + A/S = 2.667
    assert beta_mle(counts) == pytest.approx(10 / 15)  # β = A/(A+R)


def test_steps_and_requests_give_the_same_counts() -> None:
    requests = spec_run().requests
    steps = [s for r in requests for s in r.steps]
    assert acceptance_counts(steps) == acceptance_counts(requests)
    assert list(iter_steps(requests)) == steps


def test_no_steps_gives_none_not_nan() -> None:
    counts = acceptance_counts([])
    assert counts == AcceptanceCounts(0, 0, 0, 0, 0, 0, 0)
    assert acceptance_rate(counts) is None
    assert acceptance_length(counts) is None
    assert beta_mle(counts) is None
    assert per_position_acceptance([]) == []


def test_only_target_only_steps_is_like_no_drafts() -> None:
    # A baseline request: 3 forwards of d=0 -> S = 0, D = 0, but 3 target forwards and 3 tokens.
    counts = acceptance_counts([request("x", [step(0, 0)] * 3)])
    assert (counts.steps, counts.target_forwards, counts.emitted, counts.drafted) == (0, 3, 3, 0)
    assert acceptance_rate(counts) is None
    assert acceptance_length(counts) is None


def test_all_accepted() -> None:
    # 3 steps of (4,4): A = D = 12, R = 0 -> α = 1, β = 12/12 = 1, τ = 1 + 12/3 = 5
    counts = acceptance_counts([step(4, 4)] * 3)
    assert acceptance_rate(counts) == 1.0
    assert beta_mle(counts) == 1.0
    assert acceptance_length(counts) == 5.0
    assert counts.rejections == 0
    positions = per_position_acceptance([step(4, 4)] * 3)
    assert [p.cumulative for p in positions] == [1.0, 1.0, 1.0, 1.0]
    assert [p.conditional for p in positions] == [1.0, 1.0, 1.0, 1.0]


def test_all_rejected() -> None:
    # 3 steps of (4,0): A = 0, D = 12, R = 3 -> α = 0, β = 0/3 = 0, τ = 1
    counts = acceptance_counts([step(4, 0)] * 3)
    assert acceptance_rate(counts) == 0.0
    assert beta_mle(counts) == 0.0
    assert acceptance_length(counts) == 1.0
    assert counts.rejections == 3
    positions = per_position_acceptance([step(4, 0)] * 3)
    assert [p.cumulative for p in positions] == [0.0, 0.0, 0.0, 0.0]
    # position 1's conditional is its cumulative; after a zero there is nothing to condition on
    assert [p.conditional for p in positions] == [0.0, None, None, None]


def test_per_position_with_mixed_draft_lengths() -> None:
    # (d, a) = (4,4) (4,1) (2,0) (4,2) (4,0) (4,3); the d=0 step contributes nothing
    # pos1: drafted 6, reached 6 (every step tests position 1), accepted 4 (4,1,2,3) -> q = 4/6
    # pos2: drafted 6, reached = d>=2 and a>=1: (4,4) (4,1) (4,2) (4,3) = 4, accepted 3 -> q = 3/4
    # pos3: drafted 5, reached = d>=3 and a>=2: (4,4) (4,2) (4,3) = 3, accepted 2 -> q = 2/3
    # pos4: drafted 5, reached = d>=4 and a>=3: (4,4) (4,3) = 2, accepted 1 -> q = 1/2
    # P = 4/6, 4/6·3/4 = 1/2, 1/2·2/3 = 1/3, 1/3·1/2 = 1/6
    positions = per_position_acceptance(spec_run().requests)
    assert [p.position for p in positions] == [1, 2, 3, 4]
    assert [p.count for p in positions] == [6, 6, 5, 5]
    assert [p.reached for p in positions] == [6, 4, 3, 2]
    assert [p.accepted for p in positions] == [4, 3, 2, 1]
    assert [p.conditional for p in positions] == pytest.approx([4 / 6, 3 / 4, 2 / 3, 1 / 2])
    assert [p.cumulative for p in positions] == pytest.approx([4 / 6, 1 / 2, 1 / 3, 1 / 6])


def test_cumulative_never_rises_when_drafts_are_shortened() -> None:
    # issue 20: (1,0)×3 + (2,2) gave "cumulative" [0.25, 1.0]: position 2 divided by the one step that
    # drafted it, which had accepted position 1. Product-limit: q = [1/4, 1/1], P = [0.25, 0.25].
    positions = per_position_acceptance([step(1, 0)] * 3 + [step(2, 2)])
    assert [p.cumulative for p in positions] == pytest.approx([0.25, 0.25])
    assert [p.conditional for p in positions] == pytest.approx([0.25, 1.0])


def test_conditional_never_exceeds_one_when_drafts_are_shortened() -> None:
    # issue 12 saw "0.00/1.02": the conditional was a ratio of cumulative rates with different
    # denominators. 10×(4,4) + 2×(4,1) + 20×(1,0) (short drafts near the token limit, rejected) gave
    # P_0 = 12/32, P_1 = 10/12, so "conditional" 2.22. Now q_i = accepted / reached:
    # pos1: reached 32, accepted 12; pos2: reached (d>=2, a>=1) 12, accepted 10; pos3, pos4: 10 of 10.
    positions = per_position_acceptance([step(4, 4)] * 10 + [step(4, 1)] * 2 + [step(1, 0)] * 20)
    assert [p.conditional for p in positions] == pytest.approx([12 / 32, 10 / 12, 1.0, 1.0])
    assert [p.cumulative for p in positions] == pytest.approx([12 / 32, 10 / 32, 10 / 32, 10 / 32])


def test_per_position_pads_to_requested_length() -> None:
    # Only d = 2 was drafted; asking for 4 positions gives two empty ones.
    positions = per_position_acceptance([step(2, 1)], positions=4)
    assert [p.count for p in positions] == [1, 1, 0, 0]
    assert [p.reached for p in positions] == [1, 1, 0, 0]
    assert [p.cumulative for p in positions] == [1.0, 0.0, None, None]
    assert [p.conditional for p in positions] == [1.0, 0.0, None, None]


def test_eos_cut_counts_accepted_as_decided_but_emitted_as_seen() -> None:
    # (4,3) would emit 4 tokens, EOS cut it to 2: A counts 3, N counts 2.
    counts = acceptance_counts([step(4, 3, emitted=2)])
    assert (counts.accepted, counts.emitted, counts.rejections) == (3, 2, 1)
    assert acceptance_rate(counts) == pytest.approx(0.75)


def test_single_token_request_has_no_steps() -> None:
    # max_tokens = 1: the prefill token is the whole output, no decode step at all.
    counts = acceptance_counts([request("x", [], output_tokens=1)])
    assert counts.steps == 0 and counts.target_forwards == 0
    assert acceptance_rate(counts) is None


def test_inconsistent_step_is_refused() -> None:
    with pytest.raises(ValueError):
        acceptance_counts([StepRecord(drafted=2, accepted=3, emitted=4, draft_s=0.0, verify_s=0.0)])


def test_expected_acceptance_rate_hand_values() -> None:
    # β = 0.5, k = 2: β(1−β^k)/(k(1−β)) = 0.5·0.75/(2·0.5) = 0.375 = (0.5 + 0.25)/2
    assert expected_acceptance_rate(0.5, 2) == pytest.approx(0.375)
    # k = 1: E[A/D] = β
    assert expected_acceptance_rate(0.3, 1) == pytest.approx(0.3)
    # β = 1 (the 0/0 limit) -> 1; β = 0 -> 0
    assert expected_acceptance_rate(1.0, 5) == 1.0
    assert expected_acceptance_rate(0.0, 5) == 0.0
    # closed form at β = 0.8, k = 4: 0.8·(1−0.4096)/(4·0.2) = 0.8·0.5904/0.8 = 0.5904
    assert expected_acceptance_rate(0.8, 4) == pytest.approx(0.5904)
    with pytest.raises(ValueError):
        expected_acceptance_rate(0.5, 0)


def test_expected_acceptance_length_hand_values() -> None:
    # β = 0.5, k = 2: 1 + 0.5 + 0.25 = 1.75 = (1 − 0.125)/0.5
    assert expected_acceptance_length(0.5, 2) == pytest.approx(1.75)
    assert expected_acceptance_length(1.0, 4) == 5.0  # every draft accepted plus the bonus


def test_per_request_alpha_distribution() -> None:
    spread = per_request_rates([(1, 4), (2, 4), (3, 4), (4, 4), (0, 0)])  # the last drafted nothing
    assert spread == {"requests": 4, "p10": 0.25, "p50": 0.5, "p90": 1.0, "mean": 0.625}
    assert per_request_rates([(0, 0)]) is None
