"""The cost surface of batched decoding and the speedup it predicts at batch size B (docs/metrics.md).

A *step* of B live sequences drafts k tokens per row in lockstep and verifies all of them in one target
forward; every row then gains its accepted drafts plus one token. The surface holds, per (B, k), the
median wall time of such a step measured in the engine's own loop (``engine.surface``): the draft
forwards, the target's forward over B·(k+1) tokens, and the loop's bookkeeping for B rows. k = 0 is the
plain decoding step of the same engine, the baseline's.

Prediction (docs/metrics.md, "speedup at batch size B"):

    E(B, k) = τ(k) · t_step(B, 0) / t_step(B, k)

with τ(k) = 1 + Σ_{i<k} P_i from the per-position acceptance (:func:`acceptance_length_by_k`, the one τ of
``tune --batch`` and ``bench --batch``). It assumes that a sequence's acceptance does
not depend on the batch it decodes in — true of the algorithm (each row is verified against its own target
distribution; greedy outputs are identical token for token at any B) — and that the batch stays at B (the
steady state: requests joining and leaving between steps change B for a step or two). Pure functions, no
torch.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from specmeter.metrics.acceptance import per_position_acceptance
from specmeter.metrics.records import CostCurve, RequestRecord, StepRecord

__all__ = [
    "NOISY_SPREAD",
    "CostSurface",
    "SurfacePoint",
    "acceptance_length_by_k",
    "curve_at",
    "predict_speedup_batched",
    "predict_speedup_recorded",
    "predict_speedup_waves",
    "spread",
    "step_time",
    "tau_by_k",
]

# A point whose interquartile range exceeds this share of its median is flagged noisy.
NOISY_SPREAD = 0.25


def spread(xs: Sequence[float]) -> float:
    """Interquartile range (inclusive quartiles); 0 for fewer than two values."""
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[2] - q[0]


@dataclass(frozen=True)
class SurfacePoint:
    """Medians over ``steps`` timed steps of B rows at draft length k (seconds), with the step's IQR.

    ``draft_s`` is the k draft forwards (catch-up included), ``verify_s`` the target's forward over the
    B·(k+1) tokens plus verification, ``step_s`` the whole step: both, plus committing every row.
    """

    batch: int
    k: int
    step_s: float
    draft_s: float
    verify_s: float
    step_spread: float
    steps: int

    @property
    def noisy(self) -> bool:
        return self.step_s > 0 and self.step_spread > NOISY_SPREAD * self.step_s

    @property
    def loop_s(self) -> float:
        """The loop's own share of the step: sampling, bookkeeping, emissions (may be slightly < 0)."""
        return self.step_s - self.draft_s - self.verify_s


@dataclass(frozen=True)
class CostSurface:
    """Step costs per (B, k), timed in the loop at the acceptance given by ``rates`` (unconditional, per
    position, as vLLM's synthetic acceptance), on the workload's own prompts and token limit."""

    points: tuple[SurfacePoint, ...]
    rates: tuple[float, ...] = ()
    repeats: int = 0

    @property
    def batches(self) -> list[int]:
        return sorted({p.batch for p in self.points})

    @property
    def ks(self) -> list[int]:
        return sorted({p.k for p in self.points})

    def point(self, batch: int, k: int) -> SurfacePoint | None:
        for p in self.points:
            if p.batch == batch and p.k == k:
                return p
        return None

    def t_target(self, batch: int, n: int) -> float | None:
        """t_T(B, n): the verification of n tokens per row (the step at k = n − 1), in the loop's rhythm."""
        p = self.point(batch, n - 1)
        return None if p is None else p.verify_s

    def t_draft(self, batch: int) -> float | None:
        """t_D(B, 1): one draft forward of B rows, from the steps at the largest k measured."""
        ks = [k for k in self.ks if k > 0 and self.point(batch, k) is not None]
        if not ks:
            return None
        p = self.point(batch, max(ks))
        return None if p is None else p.draft_s / p.k


def predict_speedup_batched(surface: CostSurface, batch: int, k: int, tau: float | None) -> float | None:
    """E(B, k) = τ(k) · t_step(B, 0) / t_step(B, k); 1 at k = 0; None without the points or τ."""
    if k == 0:
        return 1.0
    base, spec = surface.point(batch, 0), surface.point(batch, k)
    if tau is None or base is None or spec is None or spec.step_s <= 0:
        return None
    return tau * base.step_s / spec.step_s


def tau_by_k(cumulative: Sequence[float | None], k_max: int) -> Mapping[int, float | None]:
    """τ(k) = 1 + Σ_{i<k} P_i for k = 0 … k_max (None past a position never measured)."""
    out: dict[int, float | None] = {0: 1.0}
    total = 1.0
    for k in range(1, k_max + 1):
        p = cumulative[k - 1] if k - 1 < len(cumulative) else None
        if p is None or out[k - 1] is None:
            out[k] = None
            continue
        total += p
        out[k] = total
    return out


def acceptance_length_by_k(
    items: Iterable[StepRecord | RequestRecord], k_max: int
) -> Mapping[int, float | None]:
    """The steady state's τ(k) = 1 + Σ_{i<k} P_i, k = 0 … k_max, from the per-position (product-limit) rates.

    Not the pooled 1 + A/S: in the steady state every row drafts k, while a run's steps near the token
    limit draft fewer and drag A/S down (docs/metrics.md, "Under load"). None past the measured positions.
    """
    return tau_by_k([p.cumulative for p in per_position_acceptance(items, positions=k_max)], k_max)


def step_time(surface: CostSurface, batch: int, k: int) -> float | None:
    """t_step(b, k) at any b: measured, or linear between the measured batch sizes around it (beyond the
    largest, the line through the last two; below the smallest, the smallest's)."""
    measured = [(p.batch, p.step_s) for p in surface.points if p.k == k]
    if not measured:
        return None
    measured.sort()
    for b, t in measured:
        if b == batch:
            return t
    if batch < measured[0][0] or len(measured) == 1:
        return measured[0][1] if batch < measured[0][0] else measured[-1][1]
    pairs = list(itertools.pairwise(measured))
    (b0, t0), (b1, t1) = next(((lo, hi) for lo, hi in pairs if lo[0] < batch < hi[0]), pairs[-1])
    return t0 + (t1 - t0) * (batch - b0) / (b1 - b0)


def _cost(surface: CostSurface, batch: int, depth: int) -> float | None:
    """t_step(b, d) for any b (:func:`step_time`) and a depth d between measured ks (linear in d)."""
    ks = sorted(k for k in surface.ks if step_time(surface, batch, k) is not None)
    if not ks:
        return None
    if depth in ks:
        return step_time(surface, batch, depth)
    lower = [k for k in ks if k < depth]
    upper = [k for k in ks if k > depth]
    if not lower or not upper:
        return step_time(surface, batch, (lower or upper)[-1 if lower else 0])
    k0, k1 = lower[-1], upper[0]
    t0, t1 = step_time(surface, batch, k0), step_time(surface, batch, k1)
    if t0 is None or t1 is None:
        return None
    return t0 + (t1 - t0) * (depth - k0) / (k1 - k0)


def _wave_time(
    surface: CostSurface,
    drafts: Sequence[Sequence[int]],
    cache: dict[tuple[int, int], float | None] | None = None,
) -> float | None:
    """Σ over requests of their decode time when they start together and each takes its own steps.

    ``drafts[r]`` lists the tokens request r drafted at each of its steps (0 for a plain step); a step of
    the batch costs t_step(live requests, deepest draft) and every live request lives through it.
    ``cache`` keeps t_step(b, d) across waves (one surface).
    """
    cache = {} if cache is None else cache
    total = 0.0
    longest = max((len(d) for d in drafts), default=0)
    for s in range(longest):
        live = [d[s] for d in drafts if s < len(d)]
        key = (len(live), max(live))
        if key not in cache:
            cache[key] = _cost(surface, *key)
        cost = cache[key]
        if cost is None:
            return None
        total += cost * len(live)
    return total


def predict_speedup_waves(
    surface: CostSurface,
    baseline: Sequence[Sequence[Sequence[int]]],
    speculative: Sequence[Sequence[Sequence[int]]],
) -> float | None:
    """Decode-only E predicted for waves of requests that start together and leave as they finish.

    Per wave and request, the tokens drafted at each step — the baseline's (all 0) and the candidate's,
    as recorded: acceptance does not depend on the batch, so a request takes the same steps at any B
    (greedy: the very same; sampling: the same in distribution). Time comes from the surface alone: every
    step of the wave costs t_step(live requests, deepest draft), linear between measured batch sizes and
    draft lengths, and is lived through by every live request. The result is Σ baseline time / Σ
    speculative time, as E_meas is. Against the steady-state E(B, k) this adds the wave's tail — the
    batch shrinks as requests finish and steps get cheaper, more so when acceptance differs a lot between
    requests — and the last steps of each request, which draft fewer than k.
    """
    base_total = spec_total = 0.0
    cache: dict[tuple[int, int], float | None] = {}
    for base_wave, spec_wave in zip(baseline, speculative, strict=True):
        b, sp = _wave_time(surface, base_wave, cache), _wave_time(surface, spec_wave, cache)
        if b is None or sp is None:
            return None
        base_total += b
        spec_total += sp
    return base_total / spec_total if spec_total > 0 else None


def predict_speedup_recorded(
    surface: CostSurface,
    baseline: Sequence[Sequence[StepRecord]],
    speculative: Sequence[Sequence[StepRecord]],
) -> float | None:
    """Decode-only E predicted for runs whose steps were recorded with their batch size and depth.

    Per request, its steps as recorded (``StepRecord.batch``: the rows that decoded together; the step's
    depth: its draft-model forwards, or the tokens the request drafted when the method runs none). Each step
    costs t_step(batch, depth) from the surface (linear between measured batch sizes and draft lengths) and
    the request lived through it. The result is Σ baseline time / Σ speculative time, as E_meas is. With
    ``bench --batch``'s rows kept live (``engine.batch_runner``) every step is at B but for the depth, and
    this is the steady-state E(B, k) plus each request's last steps, which draft fewer than k.
    """
    cache: dict[tuple[int, int], float | None] = {}

    def total(runs: Sequence[Sequence[StepRecord]]) -> float | None:
        out = 0.0
        for steps in runs:
            for st in steps:
                key = (max(1, st.batch), max(st.draft_forwards, st.drafted))
                if key not in cache:
                    cache[key] = _cost(surface, *key)
                cost = cache[key]
                if cost is None:
                    return None
                out += cost
        return out

    base, spec = total(baseline), total(speculative)
    if base is None or spec is None or spec <= 0:
        return None
    return base / spec


def curve_at(surface: CostSurface, batch: int, n_max: int) -> CostCurve | None:
    """The batch-1 cost-curve shape at batch B, from the surface: t_T(B, n) for n = 1 … n_max (linear between
    the measured n) and t_D(B, 1), so every formula written for the cost curve (E_cal, the four speedups)
    reads the batched costs. None when the batch has no plain-decoding point."""
    measured = sorted((p.k + 1, p.verify_s) for p in surface.points if p.batch == batch)
    if not measured or measured[0][0] != 1:
        return None
    target = []
    for n in range(1, n_max + 1):
        below = [m for m in measured if m[0] <= n][-1]
        above = next((m for m in measured if m[0] >= n), None)
        if above is None or above[0] == below[0]:
            target.append(below[1] if above is None else above[1])
        else:
            target.append(below[1] + (above[1] - below[1]) * (n - below[0]) / (above[0] - below[0]))
    draft = surface.t_draft(batch) or 0.0
    return CostCurve(target_s=tuple(target), draft_s=draft, repeats=surface.repeats)
