"""Per-request columns of one run slot and their bootstrap distributions, for ``compare``.

``specmeter.metrics.stats`` gives one interval per statistic; a difference between two runs needs the
resampled *values* of each run, so they can be subtracted resample by resample. Each resample is
represented by how often it draws every request (a counts matrix), which turns every ratio of sums
(α, β, τ, P_i, E_meas) into one matrix product, and every percentile (TTFT p50, TPOT p50, pooled gap
p99) into a weighted percentile that is exactly numpy's linear interpolation over the expanded sample.
So the point estimates here equal the summary's figures, and the resampling unit is the request, as in
docs/metrics.md ("Statistics").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from specmeter.metrics.acceptance import acceptance_counts, per_position_acceptance
from specmeter.metrics.latency import chunk_gaps, tpot
from specmeter.metrics.records import RequestRecord
from specmeter.metrics.stats import MIN_CI_REQUESTS

__all__ = ["N_RESAMPLES", "RequestSample", "metric_keys"]

Array = npt.NDArray[np.float64]

N_RESAMPLES = 2000
# Bound the (resamples × values) work arrays to a few tens of MB whatever the run size.
_BLOCK_ELEMENTS = 2_000_000


def metric_keys(positions: int) -> list[str]:
    return ["alpha", "beta", "tau", *(f"p{i + 1}" for i in range(positions)), "e_meas", "ttft", "tpot",
            "gap_p99"]  # fmt: skip


def _pair_times(records: Sequence[RequestRecord], baseline: Sequence[RequestRecord]) -> Array:
    """Baseline latency paired with each record (NaN where the baseline lacks it).

    The n-th occurrence of an id pairs with the n-th occurrence in the baseline, as in
    ``metrics.speedup.pair_latencies``; this keeps the pairing per record so it can be resampled.
    """
    seen: dict[str, int] = {}
    base: dict[tuple[str, int], float] = {}
    for r in baseline:
        n = seen.get(r.id, 0)
        seen[r.id] = n + 1
        base[(r.id, n)] = r.latency_s
    seen.clear()
    out = np.full(len(records), np.nan)
    for i, r in enumerate(records):
        n = seen.get(r.id, 0)
        seen[r.id] = n + 1
        out[i] = base.get((r.id, n), np.nan)
    return out


class _Sorted:
    """Values sorted once, each remembering which request it came from.

    A resample's percentile needs the cumulative weight up to the target rank. Summing weights over every
    value for every resample costs resamples × values (10^8 for a few hundred long requests), so the sorted
    values are cut into ~256 chunks: the cumulative weight at chunk boundaries is one matrix product
    (counts @ per-request counts per chunk), and only the chunk holding the target rank is searched value
    by value. The result is exact.
    """

    _CHUNKS = 256

    def __init__(self, values: Sequence[float], owners: Sequence[int], n_owners: int) -> None:
        order = np.argsort(np.asarray(values, dtype=np.float64), kind="stable")
        self.values: Array = np.asarray(values, dtype=np.float64)[order]
        self.owners = np.asarray(owners, dtype=np.int64)[order]
        size = self.values.size
        # Chunks of at least ~64 values: fewer, larger chunks are cheaper for small samples.
        chunks = max(1, min(self._CHUNKS, size // 64))
        self.bounds = np.linspace(0, size, chunks + 1).round().astype(np.int64)
        chunk_of = np.searchsorted(self.bounds, np.arange(size), side="right") - 1
        per_chunk = np.bincount(chunk_of * n_owners + self.owners, minlength=chunks * n_owners)
        # before[r, c]: request r's values in the chunks before chunk c (c = 0..chunks).
        self.before: Array = np.zeros((n_owners, chunks + 1))
        self.before[:, 1:] = np.cumsum(per_chunk.reshape(chunks, n_owners).T, axis=1)

    def _value_at(self, counts: Array, at_bounds: Array, rank: Array) -> Array:
        """The value at expanded (0-based) ``rank`` of each resample."""
        out = np.empty(rank.size)
        # The chunk holding the rank: the last boundary whose cumulative weight is <= rank.
        chunk = (at_bounds <= rank[:, None]).sum(axis=1) - 1
        chunk = np.minimum(chunk, self.bounds.size - 2)
        for c in np.unique(chunk):
            rows = np.nonzero(chunk == c)[0]
            lo, hi = self.bounds[c], self.bounds[c + 1]
            local = np.cumsum(counts[np.ix_(rows, self.owners[lo:hi])], axis=1) + at_bounds[rows, c][:, None]
            idx = (local <= rank[rows][:, None]).sum(axis=1)
            out[rows] = self.values[np.minimum(lo + idx, self.values.size - 1)]
        return out

    def percentile(self, counts: Array, q: float) -> Array:
        """numpy's linear-interpolation percentile of the sample each counts row expands to."""
        if self.values.size == 0:
            return np.full(counts.shape[0], np.nan)
        at_bounds = counts @ self.before
        total = at_bounds[:, -1]
        last = np.maximum(total - 1, 0)
        h = last * (q / 100.0)
        lo = np.floor(h)
        v_lo = self._value_at(counts, at_bounds, lo)
        v_hi = self._value_at(counts, at_bounds, np.minimum(lo + 1, last))
        return np.where(total > 0, v_lo + (h - lo) * (v_hi - v_lo), np.nan)


class RequestSample:
    """The columns of one run slot (baseline or a candidate), optionally cut to one category."""

    def __init__(
        self, records: Sequence[RequestRecord], baseline: Sequence[RequestRecord] | None, positions: int
    ) -> None:
        self.n = len(records)
        self.positions = positions
        counts = [acceptance_counts(r.steps) for r in records]
        self.accepted: Array = np.array([c.accepted for c in counts], dtype=np.float64)
        self.drafted: Array = np.array([c.drafted for c in counts], dtype=np.float64)
        self.trials: Array = np.array([c.accepted + c.rejections for c in counts], dtype=np.float64)
        self.steps: Array = np.array([c.steps for c in counts], dtype=np.float64)
        self.kept: Array = np.zeros((self.n, positions))
        self.reached: Array = np.zeros((self.n, positions))
        for i, r in enumerate(records):
            for p in per_position_acceptance(r.steps)[:positions]:
                self.kept[i, p.position - 1] = p.accepted
                self.reached[i, p.position - 1] = p.reached
        paired = _pair_times(records, baseline or [])
        mask = ~np.isnan(paired)
        self.has_pairs = bool(mask.any())
        self.base_time: Array = np.where(mask, paired, 0.0)
        self.spec_time: Array = np.where(mask, [r.latency_s for r in records], 0.0)
        self.ttft = _Sorted([r.ttft_s * 1000.0 for r in records], range(self.n), self.n)
        tpots = [(i, t) for i, r in enumerate(records) if (t := tpot(r)) is not None]
        self.tpot = _Sorted([t * 1000.0 for _, t in tpots], [i for i, _ in tpots], self.n)
        gaps = [(i, g) for i, r in enumerate(records) for g in chunk_gaps(r)]
        self.gaps = _Sorted([g * 1000.0 for _, g in gaps], [i for i, _ in gaps], self.n)

    def _stats(self, counts: Array) -> dict[str, Array]:
        def ratio(num: Array, den: Array) -> Array:
            n, d = counts @ num, counts @ den
            return np.where(d > 0, n / np.where(d > 0, d, 1.0), np.nan)

        out = {
            "alpha": ratio(self.accepted, self.drafted),
            "beta": ratio(self.accepted, self.trials),
            "tau": 1.0 + ratio(self.accepted, self.steps),
            "e_meas": ratio(self.base_time, self.spec_time)
            if self.has_pairs
            else np.full(len(counts), np.nan),
            "ttft": self.ttft.percentile(counts, 50.0),
            "tpot": self.tpot.percentile(counts, 50.0),
            "gap_p99": self.gaps.percentile(counts, 99.0),
        }
        # P_i = q_0 · … · q_i, q_i = accepted / reached (docs/metrics.md, "per-position acceptance")
        cumulative = np.ones(len(counts))
        for i in range(self.positions):
            cumulative = cumulative * ratio(self.kept[:, i], self.reached[:, i])
            out[f"p{i + 1}"] = cumulative
        return out

    def point(self) -> dict[str, float | None]:
        """The statistics of the sample itself (equal to the summary's figures)."""
        stats = self._stats(np.ones((1, self.n)))
        return {k: (float(v[0]) if np.isfinite(v[0]) else None) for k, v in stats.items()}

    def bootstrap(self, n_resamples: int = N_RESAMPLES, seed: int = 0) -> dict[str, Array] | None:
        """Each statistic over ``n_resamples`` resamples of the requests (NaN where undefined).

        None with fewer than ``MIN_CI_REQUESTS`` requests, where the intervals would be far too narrow
        (docs/metrics.md, "Statistics").
        """
        if self.n < max(MIN_CI_REQUESTS, 2):
            return None
        rng = np.random.default_rng(seed)
        block = max(1, _BLOCK_ELEMENTS // (self.n * (1 + _Sorted._CHUNKS // 16)))
        parts: list[dict[str, Array]] = []
        for start in range(0, n_resamples, block):
            rows = min(block, n_resamples - start)
            idx = rng.integers(0, self.n, size=(rows, self.n))
            flat = (idx + self.n * np.arange(rows)[:, None]).ravel()
            counts = np.bincount(flat, minlength=rows * self.n).reshape(rows, self.n).astype(np.float64)
            parts.append(self._stats(counts))
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
