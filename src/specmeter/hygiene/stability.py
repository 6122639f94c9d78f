"""Instability read from the measurements themselves: did the machine move while the run went on?

The sampler says what other processes did; this says what the timings did, and it works on results with no
sampler at all (a JSON file from elsewhere, a store run). For one candidate against its baseline, with
requests paired by id and taken in the order they ran (the interleaved order: prompt by prompt):

- **per-request speedup** r_i = (baseline time per token) / (speculative time per token) of request i, and
  its dispersion ``spread`` = exp(1.4826 · MAD(log r)) — a robust "×/÷ factor" (1.10 = typically ±10 %).
- **explained by acceptance**: the share of the variance of log r_i that a straight line in log τ_i (the
  request's own acceptance length, 1 + A_i/S_i) explains (R²). Prompts that differ in how predictable they
  are make r_i differ through τ_i; what is left over — the residual — is timing noise.
- **drift**: the residuals cut into ``blocks`` consecutive blocks of the run (four by default, so each block
  is a stretch of interleaved rounds); the between-block sum of squares is compared with the same
  statistic after shuffling the residuals *within each category*, 2000 times (a permutation test, seed
  fixed). A small p says the timings depended on *when* a request ran, beyond what its prompt explains:
  the machine moved. Shuffling only within a category keeps a golden set sorted by category from passing
  for drift; the price is that drift exactly aligned with category boundaries cannot be seen.
- **halves**: E_meas (Σ baseline / Σ speculative latency) over the first and the second half of the run, and
  the baseline's own median time per token in the second half over the first (``baseline_drift``): a
  machine that slowed down shows there even when both runs slowed alike.

A drift is a warning (``machine_moved``) when the test finds it (p below ``DRIFT_P``, 0.01) *and* it is
large enough to change a reading: ``drift_shift``, the per-request speedup net of acceptance (exp of the
residuals' mean) in the second half over the first, minus 1, is ``DRIFT_SHIFT`` (5 %) or more either way.
A smaller drift the test finds is real but stays a note with its size: the run's E_meas then lies within
about 2.5 % of what either half alone would say. The size is read from the residuals, not from E_meas of
the halves, because the halves also differ by their prompts (which acceptance explains).

With no warning-sized drift but a spread of ×/÷1.25 or more that acceptance explains less than half of
(``timing_noise``), the interval is wide because of timing noise (a machine busy all along does not drift,
it scatters); when acceptance explains at least half the spread, the spread follows the prompts.
Docs: docs/metrics.md, "Measurement hygiene".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from specmeter.metrics.acceptance import acceptance_counts
from specmeter.metrics.records import RequestRecord

__all__ = ["DRIFT_P", "DRIFT_SHIFT", "MIN_REQUESTS", "drift_test", "stability"]

DRIFT_P = 0.01
DRIFT_SHIFT = 0.05  # a detected drift warns when E_meas moved this much (relative) from half to half
EXPLAINED_BY_PROMPTS = 0.5
NOISY_SPREAD = 1.25  # per-request speedups typically ×/÷ 1.25 or more ...
NOISY_EXPLAINED = 0.5  # ... and acceptance explains less than half of it: timing noise
MIN_REQUESTS = 8  # fewer pairs than this: no test (two blocks of four)
PERMUTATIONS = 2000
MAD_TO_SD = 1.4826  # MAD of a normal distribution × this = its standard deviation


def _per_token(r: RequestRecord) -> float | None:
    return r.latency_s / r.output_tokens if r.output_tokens > 0 and r.latency_s > 0 else None


def _decode_per_token(r: RequestRecord) -> float | None:
    if r.output_tokens <= 1:
        return None
    dt = r.latency_s - r.ttft_s
    return dt / (r.output_tokens - 1) if dt > 0 else None


def _tau(r: RequestRecord) -> float | None:
    c = acceptance_counts(r.steps)
    return 1.0 + c.accepted / c.steps if c.steps > 0 else None


def _pairs(
    baseline: Sequence[RequestRecord], spec: Sequence[RequestRecord]
) -> list[tuple[RequestRecord, RequestRecord]]:
    """(baseline, speculative) in the speculative run's order; an id's n-th repeat pairs with its n-th."""
    by_key: dict[tuple[str, int], RequestRecord] = {}
    seen: dict[str, int] = {}
    for r in baseline:
        n = seen.get(r.id, 0)
        seen[r.id] = n + 1
        by_key[(r.id, n)] = r
    seen.clear()
    out = []
    for s in spec:
        n = seen.get(s.id, 0)
        seen[s.id] = n + 1
        b = by_key.get((s.id, n))
        if b is not None:
            out.append((b, s))
    return out


def _blocks(n: int, blocks: int) -> list[int]:
    """Block index of each of n positions, contiguous, as equal as possible: 10, 4 → 0 0 0 1 1 2 2 2 3 3."""
    return [(i * blocks) // n for i in range(n)]


def drift_test(
    residuals: Sequence[float],
    categories: Sequence[str],
    *,
    blocks: int = 4,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> float | None:
    """Permutation p-value of "the block means of the residuals differ more than shuffling makes them".

    None when there are fewer than ``MIN_REQUESTS`` values (too few for two blocks of four).
    """
    e = np.asarray(residuals, dtype=float)
    n = len(e)
    if n < MIN_REQUESTS:
        return None
    b = min(blocks, n // 4)
    block = _blocks(n, b)
    indicator = np.zeros((n, b))
    indicator[np.arange(n), block] = 1.0
    sizes = indicator.sum(axis=0)

    def between(x: np.ndarray) -> Any:  # x: [P, n] → [P]
        means = (x @ indicator) / sizes
        return ((means - x.mean(axis=1, keepdims=True)) ** 2 * sizes).sum(axis=1)

    observed = between(e[None, :])[0]
    rng = np.random.default_rng(seed)
    shuffled = np.tile(e, (permutations, 1))
    cats = np.asarray(categories)
    for cat in np.unique(cats):
        idx = np.flatnonzero(cats == cat)
        if len(idx) < 2:
            continue
        order = np.argsort(rng.random((permutations, len(idx))), axis=1)  # one permutation per row
        shuffled[:, idx] = e[idx][order]
    stats = between(shuffled)
    # ≥ with a relative tolerance: ties (identical residuals) must not count as "more extreme" by rounding.
    extreme = int(np.count_nonzero(stats >= observed * (1 - 1e-9)))
    return (1 + extreme) / (permutations + 1)


def stability(
    baseline: Sequence[RequestRecord],
    spec: Sequence[RequestRecord],
    *,
    blocks: int = 4,
    permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> dict[str, Any] | None:
    """The figures above for one candidate, ``machine_moved`` and a plain ``note``; None without pairs."""
    rows = []
    for b, s in _pairs(baseline, spec):
        tb, ts = _per_token(b), _per_token(s)
        if tb is not None and ts is not None:
            rows.append((b, s, math.log(tb / ts)))
    if not rows:
        return None
    log_r = np.array([x for _, _, x in rows])
    n = len(rows)
    mad = float(np.median(np.abs(log_r - np.median(log_r))))
    taus = [_tau(s) for _, s, _ in rows]

    # Acceptance explains what it can: OLS of log r on log τ over the requests that drafted at all.
    residuals = log_r - log_r.mean()
    explained: float | None = None
    has_tau = np.array([t is not None for t in taus])
    if has_tau.sum() >= 3:
        x = np.log(np.array([t for t in taus if t is not None]))
        y = log_r[has_tau]
        if np.ptp(x) > 0 and np.var(y) > 0:
            slope, intercept = np.polyfit(x, y, 1)
            fitted = intercept + slope * x
            explained = float(max(0.0, 1.0 - np.var(y - fitted) / np.var(y)))
            residuals = residuals.copy()
            residuals[has_tau] = y - fitted
            residuals[~has_tau] = log_r[~has_tau] - float(np.mean(y))

    half = n // 2
    e_first = e_second = None
    if half >= 1:
        first, second = rows[:half], rows[half:]
        e_first = sum(b.latency_s for b, _, _ in first) / sum(s.latency_s for _, s, _ in first)
        e_second = sum(b.latency_s for b, _, _ in second) / sum(s.latency_s for _, s, _ in second)
    base_tpt = [_decode_per_token(b) for b, _, _ in rows]
    first_b = [t for t in base_tpt[:half] if t is not None]
    second_b = [t for t in base_tpt[half:] if t is not None]
    baseline_drift = float(np.median(second_b) / np.median(first_b)) if first_b and second_b else None
    p = drift_test(
        residuals.tolist(), [s.category for _, s, _ in rows], blocks=blocks, permutations=permutations,
        seed=seed,
    )  # fmt: skip
    # The drift's size: the per-request speedup net of acceptance (the residuals), second half over first.
    shift = float(np.expm1(residuals[half:].mean() - residuals[:half].mean())) if half >= 1 else None
    detected = p is not None and p < DRIFT_P and shift is not None
    moved = detected and shift is not None and abs(shift) >= DRIFT_SHIFT
    spread = math.exp(MAD_TO_SD * mad)
    noisy = explained is not None and explained < NOISY_EXPLAINED and spread >= NOISY_SPREAD
    halves = ""
    if detected and shift is not None:
        halves = (
            f"E_meas {e_first:.2f}× in the first half, {e_second:.2f}× in the second, {shift:+.0%} net of "
            f"acceptance (drift test p = {p:.3g})"
        )
    note = None
    if moved:
        share = (
            "" if explained is None else f"; acceptance explains {explained:.0%} of the per-request spread"
        )
        note = (
            f"the machine moved during the run: {halves}{share} — the speedup changed over time, not "
            "because the prompts differ; rerun on a quiet machine"
        )
    elif noisy and explained is not None:
        note = (
            f"the per-request speedups scatter ×/÷{spread:.2f} and acceptance explains only "
            f"{explained:.0%} of it: the interval is wide because of timing noise, not because the prompts "
            "differ"
        )
    elif detected:
        note = f"a small drift: {halves}, under the {DRIFT_SHIFT:.0%} that would change a reading; no warning"
        if explained is not None and explained >= EXPLAINED_BY_PROMPTS:
            note += f"; acceptance explains {explained:.0%} of the per-request spread"
    elif explained is not None and explained >= EXPLAINED_BY_PROMPTS:
        note = (
            f"the per-request spread follows the prompts: acceptance explains {explained:.0%} of it, and no "
            "drift over the run"
        )
    return {
        "requests": n,
        "spread": spread,
        "explained_by_acceptance": explained,
        "speedup_first_half": e_first,
        "speedup_second_half": e_second,
        "baseline_drift": baseline_drift,
        "drift_p": p,
        "drift_shift": shift,
        "blocks": None if p is None else min(blocks, n // 4),
        "machine_moved": moved,
        "timing_noise": noisy,
        "note": note,
    }
