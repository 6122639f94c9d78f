"""Input lengths of the golden set next to the source's: does the sample look like the traffic?

Lengths are characters of the prompt's text (every message and follow-up), or tokens when a tokenizer is
given. The comparison shows quantiles side by side, the share of prompts per length bucket (powers of
two), and the Kolmogorov–Smirnov distance D = max |F_sample − F_source| between the two empirical
distributions (0: identical, 1: disjoint); a stratified sample that over-weights a small category with
long prompts shows up here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "QUANTILES",
    "bucket_shares",
    "compare_lengths",
    "ks_distance",
    "length_bucket",
    "length_quantiles",
]

QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9, 0.99)


def length_quantiles(lengths: Sequence[int]) -> dict[str, float] | None:
    if not lengths:
        return None
    data = np.asarray(lengths, dtype=np.float64)
    out = {f"p{round(q * 100)}": float(np.quantile(data, q)) for q in QUANTILES}
    out["mean"] = float(data.mean())
    out["max"] = float(data.max())
    return out


def length_bucket(n: int) -> int:
    """Upper bound of n's power-of-two bucket: 0–16 → 16, 17–32 → 32, …"""
    bound = 16
    while n > bound:
        bound *= 2
    return bound


def bucket_shares(lengths: Sequence[int], bounds: Sequence[int]) -> list[float]:
    counts = dict.fromkeys(bounds, 0)
    for n in lengths:
        counts[length_bucket(n)] += 1
    total = len(lengths) or 1
    return [counts[b] / total for b in bounds]


def ks_distance(a: Sequence[int], b: Sequence[int]) -> float | None:
    if not a or not b:
        return None
    x, y = np.sort(np.asarray(a)), np.sort(np.asarray(b))
    grid = np.concatenate([x, y])
    fa = np.searchsorted(x, grid, side="right") / x.size
    fb = np.searchsorted(y, grid, side="right") / y.size
    return float(np.max(np.abs(fa - fb)))


def compare_lengths(source: Sequence[int], sample: Sequence[int], unit: str) -> dict[str, Any]:
    bounds = sorted({length_bucket(n) for n in [*source, *sample]})
    return {
        "unit": unit,
        "source": {"count": len(source), "quantiles": length_quantiles(source)},
        "sample": {"count": len(sample), "quantiles": length_quantiles(sample)},
        "buckets": [
            {"up_to": b, "source": s, "sample": t}
            for b, s, t in zip(
                bounds, bucket_shares(source, bounds), bucket_shares(sample, bounds), strict=True
            )
        ],
        "ks_distance": ks_distance(source, sample),
    }
