"""E from acceptance and a cost book: each candidate at its own price, each step at the length it drafted.

At batch size B, B rows decode together. Each row is at some step of its own request, drawn from the
candidate's :class:`~specmeter.pricing.steps.StepShape` (the share of forwards that drafted d tokens); rows
are independent requests. One step of the batch verifies every row's draft in one target forward as wide as
the *longest* draft, D = max_r d_r — rows that proposed nothing ride along — and costs

    t_step(B, D) = t_target(B, D) + t_propose(method, B, D)          (pricing.book)

while each row gains its own a + 1 tokens, τ̄ per row on average (plain steps: one). Without speculation
the same B rows take t_target(B, 0) per token each. So

    E(B) = τ̄ · t_target(B, 0) / Σ_D P(D) · t_step(B, D),      P(D ≤ d) = F(d)^B

with F the shape's cumulative distribution of d. At B = 1 this is the run's own steps, each priced at its
own draft length — Σ tokens · t_target(1, 0) / Σ_s t_step(1, d_s) — which covers the steps that drafted
nothing (the drafting share f) and adaptive drafts shorter than k without a separate correction. It
assumes the steady state (the batch stays at B) and that a row's acceptance does not depend on its batch
(true of the algorithm; docs/metrics.md, "speedup at batch size B").

A prediction says what it stands on (:class:`Priced`): the proposing cost's basis (measured for this
candidate, a lookup time, borrowed from another candidate) and the surface's trust. It never exceeds what
its inputs allow: when a drafting step costs at least a plain one, E ≤ τ̄; a larger E means the surface
priced a drafting step below a plain step (noise, or a loaded machine), and the figure is refused with
that reason rather than printed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specmeter.pricing.book import CostBook, ProposeCost
from specmeter.pricing.steps import StepShape, StepShapeError

__all__ = ["Priced", "price", "price_summary", "with_plain_steps"]

# E above the tokens per step by more than rounding means a drafting step priced below a plain one.
ABOVE_TAU_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Priced:
    """One candidate's predicted E at one batch size, and what it stands on."""

    e: float | None
    basis: str  # ProposeCost.basis
    borrowed_from: str | None = None
    refused: str | None = None  # why no E is given
    tokens_per_forward: float | None = None
    mean_draft: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "e": self.e, "basis": self.basis, "borrowed_from": self.borrowed_from, "refused": self.refused,
            "tokens_per_forward": self.tokens_per_forward, "mean_draft": self.mean_draft,
        }  # fmt: skip


def _max_distribution(p: list[float], batch: int) -> list[float]:
    """P(max of ``batch`` independent draws = d) from P(draw = d)."""
    out, below, cdf = [], 0.0, 0.0
    for x in p:
        cdf += x
        at_most = min(1.0, cdf) ** batch
        out.append(max(0.0, at_most - below))
        below = at_most
    return out


def price(
    book: CostBook, label: str, shape: StepShape, batch: int, cost: ProposeCost | None = None
) -> Priced:
    """E(B) of ``label`` with this step shape (module docstring); ``cost`` overrides the book's proposing
    cost (replay passes its own lookup time through :meth:`CostBook.propose`)."""
    cost = cost if cost is not None else book.propose(label)
    tau = shape.tokens_per_forward

    def priced(e: float | None, refused: str | None = None) -> Priced:
        borrowed = cost.source if cost.borrowed else None
        return Priced(e, cost.basis, borrowed, refused, tau, shape.mean_draft)

    if tau is None:
        return priced(None, "no decode step to price")
    plain = book.target_s(batch, 0)
    if plain is None or plain <= 0:
        return priced(None, f"the cost file has no plain step at B={batch}")
    expected = 0.0
    for depth, p in enumerate(_max_distribution(shape.distribution(), batch)):
        if p <= 0:
            continue
        t = book.target_s(batch, depth)
        prop = cost.at(batch, depth)
        if t is None or prop is None:
            return priced(None, f"the cost file has no step of draft length {depth} at B={batch}")
        expected += p * (t + prop)
    if expected <= 0:
        return priced(None, "a step priced at no time")
    if tau * plain / expected > tau * (1.0 + ABOVE_TAU_TOLERANCE):
        return priced(
            None,
            f"E {tau * plain / expected:.2f}x would exceed the {tau:.2f} tokens per step: the cost file "
            f"prices a drafting step at B={batch} below a plain one (noise or a loaded machine); "
            "time it again",
        )
    return priced(tau * plain / expected)


def price_summary(
    book: CostBook,
    label: str,
    summary: Mapping[str, Any],
    batches: Sequence[int],
    *,
    replay_lookup_s: float | None = None,
) -> tuple[ProposeCost, dict[int, Priced]]:
    """:func:`price` of a docs/results.md summary at each batch size, its shape read and its proposing cost
    looked up once; a summary whose counts contradict each other is refused at every B with the field."""
    cost = book.propose(label, replay_lookup_s)
    try:
        shape = StepShape.from_summary(summary)
    except StepShapeError as e:
        return cost, {b: Priced(None, cost.basis, refused=f"the summary's counts: {e}") for b in batches}
    return cost, {b: price(book, label, shape, b, cost) for b in batches}


def with_plain_steps(e_k: float | None, tau: float | None, f: float) -> float | None:
    """E over the whole decode when a share f of the steps draft (speedup E_k at τ tokens each) and the rest
    are plain forwards: (f·τ + 1 − f) / (f·τ/E_k + 1 − f) — E_k at f = 1, 1 at f = 0. For sources that give
    E at full drafts only (what-if cells, a sweep), where no step shape can be priced."""
    if e_k is None or tau is None or e_k <= 0:
        return None
    return (f * tau + 1.0 - f) / (f * tau / e_k + 1.0 - f)
