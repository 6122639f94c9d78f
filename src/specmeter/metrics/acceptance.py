"""Acceptance statistics of a run: how many drafted tokens the target kept, and where they were lost.

Names follow docs/metrics.md: S, D, A, N, R, α (draft acceptance rate), τ (mean acceptance length), q_i and
P_i (per-position acceptance) and β (per-token acceptance probability, Leviathan et al.'s α).
Every function is pure; anything undefined (no steps, nothing drafted) is ``None``, never NaN, so that a
summary stays valid JSON and a missing figure cannot be mistaken for a measured one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from specmeter.metrics.records import RequestRecord, StepRecord

# The largest draft length an option takes without a model to bound it: tune's --k-max, and the server's k
# that load --k and monitor --k describe (engines draft a handful of tokens; vLLM's EAGLE/MTP ones under 10).
# bench/select/serve --k are bounded by the models' context instead (a step needs k + 1 positions).
# Per-position tables are k long, so an unbounded k is unbounded memory.
K_MAX_LIMIT = 64

__all__ = [
    "K_MAX_LIMIT",
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
    """The raw counts behind every acceptance rate (docs/metrics.md: every rate comes with its count)."""

    steps: int  # S: verification steps, i.e. steps with d_s >= 1
    target_forwards: int  # every decode target forward, including target-only steps (d_s == 0)
    drafted: int  # D = Σ d_s
    accepted: int  # A = Σ a_s, as the verifier decided (even where EOS cut the emission short)
    emitted: int  # Σ tokens appended by decode steps (includes target-only steps)
    rejections: int  # R = #{s: a_s < d_s}
    draft_forwards: int  # F_D = Σ draft forwards


@dataclass(frozen=True)
class PositionAcceptance:
    """Acceptance at draft position ``position`` (1-based; P_i in docs/metrics.md is position i+1).

    Three step counts, each a subset of the one before: ``count`` steps drafted this far, ``reached`` of
    them had every earlier position accepted (they put this position to the test), ``accepted`` of those
    accepted it. ``conditional`` = accepted / reached and ``cumulative`` = the product of the conditionals
    up to here, so both lie in [0, 1] and the cumulative never rises with the position.
    """

    position: int
    accepted: int  # #{s: a_s >= position}
    count: int  # #{s: d_s >= position}, the steps that drafted this far
    reached: int  # #{s: d_s >= position and a_s >= position - 1}
    cumulative: float | None  # P_i = Π_{j<=i} conditional_j
    conditional: float | None  # accepted / reached


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


def per_request_rates(pairs: Iterable[tuple[float, float]]) -> dict[str, float | int] | None:
    """The distribution of α = A/D over requests, from each request's (accepted, drafted): how many
    requests drafted, and the 10th, 50th and 90th percentiles (nearest rank) with the mean; None when no
    request drafted. A request that drafted nothing has no α and is left out."""
    rates = sorted(a / d for a, d in pairs if d > 0)
    if not rates:
        return None

    def rank(q: float) -> float:
        return rates[min(len(rates) - 1, max(0, math.ceil(q * len(rates)) - 1))]

    return {
        "requests": len(rates),
        "p10": rank(0.1),
        "p50": rank(0.5),
        "p90": rank(0.9),
        "mean": sum(rates) / len(rates),
    }


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
    """Per draft position: q_i = #{s: a_s ≥ i+1} / #{s: d_s ≥ i+1, a_s ≥ i} and P_i = q_0 · … · q_i.

    q_i (``conditional``) is the chance position i+1 is accepted given the step drafted it and accepted
    every earlier position; P_i (``cumulative``) is the chance that a draft of at least i+1 tokens has its
    first i+1 all accepted. A step that drafted fewer tokens (near the token limit) says nothing about the
    positions it did not draft, so it leaves the denominators there — the product-limit (Kaplan–Meier)
    estimate with the draft length as the censoring point. Both rates stay in [0, 1], P_i never rises with
    i, and when every step drafted the same number of tokens P_i = #{s: a_s ≥ i+1} / S.

    The list runs to the longest draft seen, or to ``positions`` if that is longer. A position nobody
    drafted has rates None; q_i is None when no step reached position i+1, and P_i is then 0 if an earlier
    P already was (nothing gets that far), else None.
    """
    drafted_to: list[int] = []  # drafted_to[i] = #{s: d_s >= i+1}
    reached: list[int] = []  # reached[i] = #{s: d_s >= i+1 and a_s >= i}
    kept: list[int] = []  # kept[i] = #{s: a_s >= i+1}
    for step in iter_steps(items):
        _check(step)
        while len(drafted_to) < step.drafted:
            drafted_to.append(0)
            reached.append(0)
            kept.append(0)
        # (d, a) = (4, 1): drafted_to += [1, 1, 1, 1], reached += [1, 1, 0, 0], kept += [1, 0, 0, 0]
        for i in range(step.drafted):
            drafted_to[i] += 1
        for i in range(min(step.accepted + 1, step.drafted)):
            reached[i] += 1
        for i in range(step.accepted):
            kept[i] += 1
    while positions is not None and len(drafted_to) < positions:
        drafted_to.append(0)
        reached.append(0)
        kept.append(0)

    result: list[PositionAcceptance] = []
    cumulative: float | None = 1.0  # P_{-1}: every draft gets past "no position"
    for i, (count, tested, accepted) in enumerate(zip(drafted_to, reached, kept, strict=True)):
        conditional = accepted / tested if tested else None
        if count == 0:
            cumulative = None  # never drafted this far: nothing measured, and nothing beyond either
        elif cumulative is not None:
            if conditional is not None:
                cumulative *= conditional
            elif cumulative > 0.0:
                cumulative = None  # drafted this far only after rejections or shorter drafts: unknown
        result.append(PositionAcceptance(i + 1, accepted, count, tested, cumulative, conditional))
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
