"""Acceptance statistics of a run: how many drafted tokens the target kept, and where they were lost.

Names follow DESIGN.md "Metric definitions": S, D, A, N, R, α (draft acceptance rate), τ (mean acceptance
length), P_i (per-position acceptance) and β (per-token acceptance probability, Leviathan et al.'s α).
Every function is pure; anything undefined (no steps, nothing drafted) is ``None``, never NaN, so that a
summary stays valid JSON and a missing figure cannot be mistaken for a measured one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from specmeter.metrics.records import RequestRecord, StepRecord

__all__ = [
    "AcceptanceCounts",
    "PositionAcceptance",
    "acceptance_counts",
    "acceptance_length",
    "acceptance_rate",
    "beta_mle",
    "expected_acceptance_length",
    "expected_acceptance_rate",
    "iter_steps",
    "per_position_acceptance",
]


@dataclass(frozen=True)
class AcceptanceCounts:
    """The raw counts behind every acceptance rate (DESIGN.md: every rate comes with its count)."""

    steps: int  # S: verification steps, i.e. steps with d_s >= 1
    target_forwards: int  # every decode target forward, including target-only steps (d_s == 0)
    drafted: int  # D = Σ d_s
    accepted: int  # A = Σ a_s, as the verifier decided (even where EOS cut the emission short)
    emitted: int  # Σ tokens appended by decode steps (includes target-only steps)
    rejections: int  # R = #{s: a_s < d_s}
    draft_forwards: int  # F_D = Σ draft forwards


@dataclass(frozen=True)
class PositionAcceptance:
    """Acceptance at draft position ``position`` (1-based; P_i in DESIGN.md is position i+1)."""

    position: int
    accepted: int  # #{s: a_s >= position}
    count: int  # #{s: d_s >= position}, the steps that drafted this far
    cumulative: float | None  # accepted / count
    conditional: float | None  # cumulative / previous cumulative; position 1: the cumulative itself


def iter_steps(items: Iterable[StepRecord | RequestRecord]) -> Iterator[StepRecord]:
    """Flatten requests into their steps, so every function here accepts either kind of record."""
    for item in items:
        if isinstance(item, RequestRecord):
            yield from item.steps
        else:
            yield item


def _check(step: StepRecord) -> None:
    # A step that accepts more than it drafted is an engine bug; silently averaging it in would
    # produce plausible-looking but wrong rates, so refuse loudly.
    if step.drafted < 0 or step.accepted < 0 or step.emitted < 0 or step.accepted > step.drafted:
        raise ValueError(f"inconsistent step record: {step!r}")


def acceptance_counts(items: Iterable[StepRecord | RequestRecord]) -> AcceptanceCounts:
    """Count S, D, A, R, emitted tokens and forwards over steps (or over requests' steps).

    Steps with d_s == 0 are target-only forwards (one token of budget left, or a baseline step): they
    emit tokens and cost a target forward, but carry no acceptance information, so they are left out of
    S, D, A and R and only counted in ``target_forwards`` and ``emitted``.
    """
    steps = forwards = drafted = accepted = emitted = rejections = draft_forwards = 0
    for step in iter_steps(items):
        _check(step)
        forwards += 1
        emitted += step.emitted
        draft_forwards += step.draft_forwards
        if step.drafted == 0:
            continue
        steps += 1
        drafted += step.drafted
        accepted += step.accepted
        if step.accepted < step.drafted:
            rejections += 1
    return AcceptanceCounts(
        steps=steps,
        target_forwards=forwards,
        drafted=drafted,
        accepted=accepted,
        emitted=emitted,
        rejections=rejections,
        draft_forwards=draft_forwards,
    )


def acceptance_rate(counts: AcceptanceCounts) -> float | None:
    """α = A / D, the draft acceptance rate; None when nothing was drafted."""
    if counts.drafted == 0:
        return None
    return counts.accepted / counts.drafted


def acceptance_length(counts: AcceptanceCounts) -> float | None:
    """τ = 1 + A / S, tokens per verification forward with the bonus token; None without steps."""
    if counts.steps == 0:
        return None
    return 1.0 + counts.accepted / counts.steps


def beta_mle(counts: AcceptanceCounts) -> float | None:
    """β = A / (A + R), the maximum-likelihood per-token acceptance probability.

    Under the i.i.d. model every drafted token is accepted with probability β until the first
    rejection, so each step contributes a_s successes and, when it stopped early, one failure; the
    likelihood β^A (1 − β)^R peaks at A / (A + R).
    """
    trials = counts.accepted + counts.rejections
    if trials == 0:
        return None
    return counts.accepted / trials


def per_position_acceptance(
    items: Iterable[StepRecord | RequestRecord], *, positions: int | None = None
) -> list[PositionAcceptance]:
    """P_i = #{s: a_s ≥ i+1} / #{s: d_s ≥ i+1} for each draft position, with the conditional rate.

    The list runs to the longest draft seen, or to ``positions`` if that is longer (such positions have
    count 0 and rates None). The denominator is the steps that actually drafted that far, so requests
    whose last steps drafted fewer than k tokens do not dilute the later positions.
    """
    reached: list[int] = []  # reached[i] = #{s: d_s >= i+1}
    kept: list[int] = []  # kept[i] = #{s: a_s >= i+1}
    for step in iter_steps(items):
        _check(step)
        while len(reached) < step.drafted:
            reached.append(0)
            kept.append(0)
        for i in range(step.drafted):
            reached[i] += 1
        for i in range(step.accepted):
            kept[i] += 1
    while positions is not None and len(reached) < positions:
        reached.append(0)
        kept.append(0)

    result: list[PositionAcceptance] = []
    previous: float | None = None
    for i, (count, accepted) in enumerate(zip(reached, kept, strict=True)):
        cumulative = accepted / count if count else None
        if i == 0:
            conditional = cumulative
        elif cumulative is None or previous is None or previous == 0.0:
            # Nothing survived to the previous position, so "accepted given the previous one was"
            # has no sample behind it.
            conditional = None
        else:
            conditional = cumulative / previous
        result.append(PositionAcceptance(i + 1, accepted, count, cumulative, conditional))
        previous = cumulative
    return result


def expected_acceptance_rate(beta: float, k: int) -> float:
    """E[A/D] with fixed draft length k under i.i.d. acceptance β: β(1 − β^k) / (k(1 − β)).

    Written as the mean of β^1..β^k, which is the same series without the 0/0 at β = 1 (limit 1).
    It shows why α under a fixed k is not β: later positions are only reached after earlier accepts.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    return sum(beta**j for j in range(1, k + 1)) / k


def expected_acceptance_length(beta: float, k: int) -> float:
    """E[τ] with fixed k under i.i.d. acceptance β: (1 − β^{k+1}) / (1 − β) = Σ_{j=0..k} β^j."""
    if k < 0:
        raise ValueError("k must be >= 0")
    return sum(beta**j for j in range(k + 1))
