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
    # a values 4,1,0,2,0,3; d values 4,4,2,4,4,4 (the d=0 step contributes nothing)
    # pos1: d>=1: 6, a>=1: 4 (4,1,2,3)   -> 4/6;  conditional = 4/6
    # pos2: d>=2: 6, a>=2: 3 (4,2,3)     -> 3/6;  conditional = 0.5 / (4/6) = 0.75
    # pos3: d>=3: 5 (not the d=2), a>=3: 2 (4,3) -> 2/5; conditional = 0.4/0.5 = 0.8
    # pos4: d>=4: 5, a>=4: 1 (4)         -> 1/5;  conditional = 0.2/0.4 = 0.5
    positions = per_position_acceptance(spec_run().requests)
    assert [p.position for p in positions] == [1, 2, 3, 4]
    assert [p.count for p in positions] == [6, 6, 5, 5]
    assert [p.accepted for p in positions] == [4, 3, 2, 1]
    assert [p.cumulative for p in positions] == pytest.approx([4 / 6, 3 / 6, 2 / 5, 1 / 5])
    assert [p.conditional for p in positions] == pytest.approx([4 / 6, 0.75, 0.8, 0.5])


def test_per_position_pads_to_requested_length() -> None:
    # Only d = 2 was drafted; asking for 4 positions gives two empty ones.
    positions = per_position_acceptance([step(2, 1)], positions=4)
    assert [p.count for p in positions] == [1, 1, 0, 0]
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
