"""Synthetic acceptance: the per-position rates a what-if run verifies with, from an acceptance rate α.

Vocabulary (docs/metrics.md "Synthetic acceptance"): ``r_i`` is the *unconditional* rate of position i — the
chance that drafts 1 … i of a step are all accepted — exactly vLLM's ``synthetic_acceptance_rates``
(``vllm/config/speculative.py``: non-increasing, one per position, in [0, 1]); ``c_i = r_i / r_{i-1}``
(r_0 = 1) is the conditional rate the verifier draws against (``engine.batched.conditional_rates``).

``whatif --alpha`` names the draft acceptance rate α = A / D of full drafts at draft length k (the α
``bench`` reports). One α at one k does not fix the profile r_1 … r_k, so this module picks the geometric
one, r_i = β^i: every position is accepted with the same conditional rate β given the ones before it
(Leviathan et al.'s i.i.d. model), β solving

    α = (1/k) · Σ_{i=1..k} β^i .

The profile hardly matters for speed: with full drafts D = S·k, so τ = 1 + A/S = 1 + k·α for *any* profile
and any mix of requests — the tokens a step yields on average depend on α and k only. What the profile
changes is second order (how often a step is fully accepted, which makes the draft catch up two tokens).
``--rates`` takes an explicit profile instead (vLLM's list), from which α = (1/k) Σ r_i.

``--length L`` is vLLM's other form, ``synthetic_acceptance_length``: a mean acceptance length L in
[1, k + 1] (tokens per step, the target's own token included), which vLLM resolves to rates with its
minimum-variance schedule (``SpeculativeConfig._acceptance_length_to_rates``): with a = L − 1 accepted drafts
on average, the first ⌊a⌋ positions are always accepted, the next with probability a − ⌊a⌋, the rest never:

    r = (1, …, 1, a − ⌊a⌋, 0, …, 0)[:k]        so τ = 1 + Σ r_i = L and α = (L − 1) / k.

``profile_from_length`` is that definition, so a ``--length`` cell verifies with the rates vLLM would.

Requests differ. A what-if cell forces one profile on every request, while a real domain mixes easy and
hard requests (per-request α of the bundled legal set: median 0.90, tenth percentile 0.57). In a batch
that matters: easy rows finish early and the hard ones go on in a smaller, cheaper batch.
:func:`request_steps` draws one request's steps under synthetic acceptance (the engine's rule near the
token limit) and :func:`draw_requests` draws requests from a measured per-request distribution, so a
what-if reading can be corrected for the spread (``selection.whatif_surface.spread_prediction``;
docs/metrics.md, "What if").

Pure Python; no torch.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "SyntheticProfile",
    "alpha_of_rates",
    "draw_requests",
    "geometric_profile",
    "length_rates",
    "profile_from_length",
    "profile_from_rates",
    "request_steps",
]

_TOLERANCE = 1e-12


@dataclass(frozen=True)
class SyntheticProfile:
    """The acceptance a what-if cell forces: α at k, the unconditional rates, and how they were chosen."""

    alpha: float  # A / D of full drafts of length k: (1/k) Σ r_i
    k: int
    rates: tuple[float, ...]  # r_1 … r_k, unconditional, non-increasing
    beta: float | None  # the geometric profile's conditional rate; None for an explicit or length profile
    profile: str  # "geometric", "given" (rates) or "length" (vLLM's synthetic_acceptance_length)

    @property
    def tau(self) -> float:
        """τ = 1 + Σ r_i = 1 + k·α: expected tokens per full step."""
        return 1.0 + sum(self.rates)

    @property
    def conditional(self) -> tuple[float, ...]:
        """c_i = r_i / r_{i-1} (r_0 = 1); 0 after a zero rate, as vLLM's conversion gives."""
        prev = [1.0, *self.rates[:-1]]
        return tuple(r / p if p > 0 else 0.0 for r, p in zip(self.rates, prev, strict=True))


def alpha_of_rates(rates: Sequence[float]) -> float:
    """α of full drafts under unconditional rates r_1 … r_k: E[accepted] / k = (1/k) Σ r_i."""
    if not rates:
        raise ValueError("no rates")
    return sum(rates) / len(rates)


def _check_alpha(alpha: float) -> None:
    if isinstance(alpha, bool) or not math.isfinite(alpha) or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"an acceptance rate must be in [0, 1], got {alpha}")


def geometric_profile(alpha: float, k: int) -> SyntheticProfile:
    """r_i = β^i with (1/k) Σ β^i = α (bisection on β ∈ [0, 1]; the mean is increasing in β)."""
    _check_alpha(alpha)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")

    def mean(beta: float) -> float:
        return sum(beta**i for i in range(1, k + 1)) / k

    if alpha <= 0.0:
        beta = 0.0
    elif alpha >= 1.0:
        beta = 1.0
    else:
        lo, hi = 0.0, 1.0
        while hi - lo > _TOLERANCE:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mean(mid) < alpha else (lo, mid)
        beta = (lo + hi) / 2
    rates = tuple(beta**i for i in range(1, k + 1))
    return SyntheticProfile(alpha=alpha, k=k, rates=rates, beta=beta, profile="geometric")


def profile_from_rates(rates: Sequence[float]) -> SyntheticProfile:
    """An explicit profile (vLLM's ``synthetic_acceptance_rates``), checked as vLLM checks it."""
    values = tuple(float(r) for r in rates)
    if not values:
        raise ValueError("give at least one rate")
    if any(not math.isfinite(r) or not 0.0 <= r <= 1.0 for r in values):
        raise ValueError(f"rates must be in [0, 1], got {list(values)}")
    if any(b > a for a, b in itertools.pairwise(values)):
        raise ValueError(f"rates are unconditional, so they must be non-increasing, got {list(values)}")
    return SyntheticProfile(
        alpha=alpha_of_rates(values), k=len(values), rates=values, beta=None, profile="given"
    )


def length_rates(length: float, k: int) -> tuple[float, ...]:
    """vLLM's rates for ``synthetic_acceptance_length`` L at k positions (its minimum-variance schedule).

    a = L − 1 accepted drafts expected; ⌊a⌋ positions at 1, one at a − ⌊a⌋, the rest 0, cut to k
    (``vllm/config/speculative.py``, ``SpeculativeConfig._acceptance_length_to_rates``). L must lie in
    [1, k + 1], as vLLM checks.
    """
    if isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if isinstance(length, bool) or not math.isfinite(length) or not 1.0 <= length <= k + 1:
        raise ValueError(f"an acceptance length at k = {k} must be in [1, {k + 1}], got {length}")
    drafts = length - 1.0
    full = int(drafts)
    return tuple(([1.0] * full + [drafts - full] + [0.0] * (k - full - 1))[:k])


def profile_from_length(length: float, k: int) -> SyntheticProfile:
    """The profile of vLLM's ``synthetic_acceptance_length`` L at draft length k: τ = L, α = (L − 1) / k."""
    rates = length_rates(length, k)
    return SyntheticProfile(alpha=alpha_of_rates(rates), k=k, rates=rates, beta=None, profile="length")


def request_steps(profile: SyntheticProfile, tokens: int, rng: random.Random) -> list[tuple[int, int]]:
    """(drafted, accepted) of each step of one request of ``tokens`` decode tokens under ``profile``.

    The engine's rule (docs/metrics.md, "choosing k"): a step drafts d = min(k, tokens left − 1), accepts
    position i + 1 with the conditional rate c_i once positions 1 … i were accepted, and emits a + 1
    tokens; with one token left it is a target-only step (d = 0).
    """
    if tokens < 0:
        raise ValueError(f"tokens must be >= 0, got {tokens}")
    conditional = profile.conditional
    steps: list[tuple[int, int]] = []
    left = tokens
    while left > 0:
        d = min(profile.k, left - 1)
        a = 0
        while a < d and rng.random() < conditional[a]:
            a += 1
        steps.append((d, a))
        left -= a + 1
    return steps


def draw_requests(
    population: Sequence[tuple[float, int]], n: int, rng: random.Random
) -> list[tuple[float, int]]:
    """``n`` requests drawn with replacement from measured (α, decode tokens) pairs, in random order.

    Drawing pairs keeps what goes together together (long outputs that are also easy, say); the draws
    reproduce the population's distribution of α, its mean and spread included (tested).
    """
    if not population:
        raise ValueError("no requests to draw from")
    for alpha, tokens in population:
        _check_alpha(alpha)
        if tokens < 0:
            raise ValueError(f"decode tokens must be >= 0, got {tokens}")
    return [population[rng.randrange(len(population))] for _ in range(n)]
