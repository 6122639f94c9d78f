"""The decode steps of one candidate, as counts per draft length: what a step costs depends on nothing else.

Vocabulary (docs/metrics.md): a *forward* is one target forward in decode; it drafted ``d`` tokens (d = 0:
a plain step, the method proposed nothing, or the last token of a request) and yielded a + 1 tokens. A
result's summary keeps per position i the steps that drafted at least i tokens (``per_position[i-1].count``),
the steps that drafted anything (S, ``steps``), every forward (``target_forwards``) and the accepted tokens
(A), so the shape is recovered exactly from any summary (``replay``, ``bench``, a domain pooled by
``select --from``):

    forwards with d = j  =  count_j − count_{j+1}        (j ≥ 1; count_{k+1} = 0)
    forwards with d = 0  =  target_forwards − S
    tokens               =  target_forwards + A           (every forward yields its accepted drafts + 1)

# counts [10, 8, 3], forwards 14 -> by_length [4, 2, 5, 3]: 4 plain, 2 of d = 1, 5 of d = 2, 3 of d = 3

The shape prices each step at the draft length it used — suffix decoding's adaptive drafts at their own
length, a lookup that found nothing as a plain step — instead of at k. Pure, no torch.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["StepShape", "StepShapeError"]

# The largest draft length a shape holds (methods.spec's K_MAX is far below): a bound on hostile summaries.
MAX_LENGTH = 256


class StepShapeError(ValueError):
    """A summary whose counts contradict each other (one line naming the field)."""


def _count(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise StepShapeError(f"{field}: not a count ({value!r})")
    if value < 0 or value > 1e15 or int(value) != value:
        raise StepShapeError(f"{field}: not a count ({value!r})")
    return int(value)


@dataclass(frozen=True)
class StepShape:
    """``by_length[d]``: the forwards that drafted d tokens (d = 0 … the longest); ``tokens``: what they
    yielded together (Σ a + 1)."""

    by_length: tuple[int, ...]
    tokens: int

    @property
    def forwards(self) -> int:
        return sum(self.by_length)

    @property
    def drafting(self) -> int:
        """S: the forwards that drafted at least one token."""
        return self.forwards - (self.by_length[0] if self.by_length else 0)

    @property
    def drafting_share(self) -> float | None:
        """f = S / forwards."""
        return self.drafting / self.forwards if self.forwards else None

    @property
    def tokens_per_forward(self) -> float | None:
        """τ̄ = tokens / forwards: a plain step counts one token (the f·τ + 1 − f of the steady state)."""
        return self.tokens / self.forwards if self.forwards else None

    @property
    def mean_draft(self) -> float | None:
        """The mean draft length of the steps that drafted."""
        s = self.drafting
        return sum(d * n for d, n in enumerate(self.by_length)) / s if s else None

    def distribution(self) -> list[float]:
        """P(d) per forward, d = 0 … the longest."""
        n = self.forwards
        return [c / n for c in self.by_length] if n else []

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any]) -> StepShape:
        """The shape of a docs/results.md summary (see the module docstring); :class:`StepShapeError` when
        its counts contradict each other (a step count above the forwards, a count that grows with the
        position, accepted tokens above the drafted ones)."""
        forwards = _count(summary.get("target_forwards"), "target_forwards")
        steps = _count(summary.get("steps"), "steps")
        accepted = _count(summary.get("accepted_tokens") or 0, "accepted_tokens")
        drafted = summary.get("drafted_tokens")
        positions: Sequence[Any] = summary.get("per_position") or []
        if not isinstance(positions, Sequence) or len(positions) > MAX_LENGTH:
            raise StepShapeError(f"per_position: not a list of at most {MAX_LENGTH} positions")
        counts = []
        for i, p in enumerate(positions):
            if not isinstance(p, Mapping):
                raise StepShapeError(f"per_position[{i}]: not an object")
            counts.append(_count(p.get("count") or 0, f"per_position[{i}].count"))
        if steps > forwards:
            raise StepShapeError(f"steps: {steps} drafting steps but {forwards} target forwards")
        if counts and counts[0] != steps and counts[0] > 0:
            raise StepShapeError(f"per_position[0].count: {counts[0]} steps drafted, but steps is {steps}")
        if any(b > a for a, b in itertools.pairwise(counts)):
            raise StepShapeError("per_position: a count grows with the position (steps drafting that far)")
        total = sum(counts)
        if drafted is not None and _count(drafted, "drafted_tokens") != total and counts:
            raise StepShapeError(f"drafted_tokens: {drafted}, but the per-position counts add to {total}")
        if accepted > total:
            raise StepShapeError(f"accepted_tokens: {accepted} above the {total} drafted")
        if not counts and steps:
            raise StepShapeError("per_position: missing, but steps drafted")
        lengths = [forwards - steps]
        padded = [*counts, 0]
        lengths += [padded[j - 1] - padded[j] for j in range(1, len(padded))]
        while len(lengths) > 1 and lengths[-1] == 0:
            lengths.pop()
        return cls(tuple(lengths), forwards + accepted)
