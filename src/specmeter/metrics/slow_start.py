"""A slow start within a level: were the level's first requests markedly slower than the rest?

A server meeting a batch size for the first time (allocations, kernel selection, CUDA-graph capture, caches)
makes the first requests of a level slow; measured, they bias the level's latencies and E_meas. The figure
(docs/metrics.md, "Under load") compares the **time per output token** (latency ÷ output tokens, so long
and short answers compare) of the first quarter of a level's completed requests, in the order they were
sent, with that of the rest:

- **ratio** = median of the first quarter ÷ median of the rest (a size: 1.4 = the first quarter took 40%
  longer per token);
- **ci**: a 95% percentile bootstrap interval of the ratio, each group resampled on its own (requests are
  the unit), seed fixed;
- **flagged** when the ratio is at least :data:`SLOW_START_RATIO` *and* the interval lies above 1: large
  enough to matter and not noise. A tiny but certain difference (a large level) is not flagged, nor a large
  but uncertain one (a few requests).

Fewer than :data:`SLOW_START_MIN_REQUESTS` completed requests give no figure (three in the first quarter
at least: with two, the rule flagged 8% of simulated levels without a slow start; with three, 3–4%; tested
in tests/metrics/test_metrics_slow_start.py). Medians, not means: one stalled request must not make a
quarter look slow.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specmeter.metrics.records import RequestRecord

__all__ = ["SLOW_START_MIN_REQUESTS", "SLOW_START_RATIO", "SlowStart", "slow_start"]

SLOW_START_RATIO = 1.25  # the first quarter 25% slower per token than the rest, or more: "markedly"
SLOW_START_MIN_REQUESTS = 12  # three requests in the first quarter at least
MS = 1000.0


@dataclass(frozen=True)
class SlowStart:
    first: int  # requests in the first quarter
    rest: int
    first_ms_per_token: float  # medians
    rest_ms_per_token: float
    ratio: float
    ci: tuple[float, float]
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": "latency per output token: the first quarter of the level's requests ÷ the rest",
            "first": self.first,
            "rest": self.rest,
            "first_ms_per_token": self.first_ms_per_token,
            "rest_ms_per_token": self.rest_ms_per_token,
            "ratio": self.ratio,
            "ci": list(self.ci),
            "threshold": SLOW_START_RATIO,
            "flagged": self.flagged,
        }


def _per_token(record: RequestRecord) -> float | None:
    if record.error is not None or record.output_tokens <= 0 or record.latency_s <= 0:
        return None
    return record.latency_s / record.output_tokens


def slow_start(
    records: Sequence[RequestRecord], *, n_resamples: int = 2000, seed: int = 0, confidence: float = 0.95
) -> SlowStart | None:
    """The slow-start figure of a level's requests, given **in the order they were sent**; None with fewer
    than :data:`SLOW_START_MIN_REQUESTS` completed requests."""
    times = [t for t in (_per_token(r) for r in records) if t is not None]
    if len(times) < SLOW_START_MIN_REQUESTS:
        return None
    q = len(times) // 4
    first, rest = np.asarray(times[:q]), np.asarray(times[q:])
    ratio = statistics.median(first.tolist()) / statistics.median(rest.tolist())
    rng = np.random.default_rng(seed)
    a = np.median(first[rng.integers(0, first.size, size=(n_resamples, first.size))], axis=1)
    b = np.median(rest[rng.integers(0, rest.size, size=(n_resamples, rest.size))], axis=1)
    tail = 50.0 * (1.0 - confidence)
    lo, hi = np.percentile(a / b, [tail, 100.0 - tail])
    ci = (float(lo), float(hi))
    return SlowStart(
        first=q,
        rest=len(times) - q,
        first_ms_per_token=float(np.median(first)) * MS,
        rest_ms_per_token=float(np.median(rest)) * MS,
        ratio=ratio,
        ci=ci,
        flagged=ratio >= SLOW_START_RATIO and ci[0] > 1.0,
    )
