"""Traffic mixes: ``--mix legal=0.7,general=0.3``, and speedups weighted to them, with bootstrap intervals.

A golden set rarely holds its categories in production proportions, so ``select`` reweights: every request
of mix domain d stands for w_d / n_d of the traffic (w_d the domain's share of requests in production, n_d
its measured requests), and the traffic-weighted speedup is the ratio of weighted totals,

    E_mix = Σ_r w_r · T_base,r / Σ_r w_r · T_spec,r,

which is E_meas on a workload with the production mix (and E_meas itself when the weights are the golden
set's own proportions). A mix key names a category or a category prefix: ``legal`` matches ``legal`` and
``legal/indemnity`` but not ``legalese``; the longest matching key wins.

Intervals are a paired, stratified bootstrap: each resample redraws n_d requests within every domain (the
mix is fixed, so the domain sizes are too) and takes every candidate's time for the same requests, so the
difference between two candidates is resampled with prompt difficulty cancelled.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from specmeter.metrics.stats import MIN_CI_REQUESTS

__all__ = [
    "MixError",
    "assign_domains",
    "bootstrap_weighted",
    "match_domain",
    "parse_mix",
    "weighted_speedups",
]

_BLOCK = 256  # resamples drawn at once; bounds memory at _BLOCK × requests counts


class MixError(ValueError):
    """A bad ``--mix``; the message is one line naming the problem."""


def parse_mix(text: str) -> dict[str, float]:
    """``"legal=0.7,general=0.3"`` -> weights normalised to sum 1, in the order given."""
    weights: dict[str, float] = {}
    for part in text.split(","):
        part = part.strip()
        key, sep, value = part.partition("=")
        key = key.strip().rstrip("/")
        if not sep or not key:
            raise MixError(f"--mix: {part!r} is not CATEGORY=WEIGHT (e.g. legal=0.7,general=0.3)")
        try:
            weight = float(value)
        except ValueError:
            raise MixError(f"--mix: weight {value.strip()!r} of {key!r} is not a number") from None
        if not math.isfinite(weight) or weight < 0:
            raise MixError(f"--mix: weight of {key!r} must be a finite number >= 0, got {value.strip()}")
        if key in weights:
            raise MixError(f"--mix: {key!r} is given twice")
        weights[key] = weight
    total = sum(weights.values())
    if total <= 0:
        raise MixError("--mix: the weights add up to 0")
    return {key: w / total for key, w in weights.items()}


def match_domain(category: str, keys: Iterable[str]) -> str | None:
    """The longest key that is ``category`` or a path prefix of it (``legal`` for ``legal/nda``)."""
    hits = [k for k in keys if category == k or category.startswith(k + "/")]
    return max(hits, key=len) if hits else None


def assign_domains(categories: Iterable[str], mix: Mapping[str, float]) -> dict[str, str | None]:
    """category -> its mix key (None: not in the mix); a key matching no category is an error."""
    categories = sorted(set(categories))
    assignment = {c: match_domain(c, mix) for c in categories}
    unknown = [k for k in mix if k not in assignment.values()]
    if unknown:
        raise MixError(
            f"--mix: {', '.join(repr(k) for k in unknown)} match(es) no category of the workload "
            f"(categories: {', '.join(categories) or 'none'})"
        )
    return assignment


def _request_weights(domains: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    w = np.zeros(domains.shape[0], dtype=np.float64)
    for d, weight in enumerate(weights):
        members = domains == d
        n = int(members.sum())
        if n:
            w[members] = weight / n
    return w


def weighted_speedups(
    base: np.ndarray, spec: np.ndarray, domains: np.ndarray, weights: Sequence[float]
) -> list[float | None]:
    """E_mix for each column of ``spec`` (requests × candidates); ``domains[r]`` < 0 means weight 0."""
    w = _request_weights(domains, weights)
    num = float(w @ base)
    dens = w @ spec
    return [num / float(d) if d > 0 and num > 0 else None for d in dens]


def bootstrap_weighted(
    base: np.ndarray,
    spec: np.ndarray,
    domains: np.ndarray,
    weights: Sequence[float],
    *,
    n_resamples: int = 2000,
    seed: int = 0,
) -> np.ndarray | None:
    """Bootstrap samples of E_mix, shape (n_resamples, candidates): paired across candidates, stratified
    by domain. None when some weighted domain has fewer than 2 requests (no spread to resample) or the
    weighted domains hold fewer than ``MIN_CI_REQUESTS`` requests in all (docs/metrics.md, "Statistics")."""
    rng = np.random.default_rng(seed)
    if int(sum(np.count_nonzero(domains == d) for d, w in enumerate(weights) if w > 0)) < MIN_CI_REQUESTS:
        return None
    strata = []
    for d, weight in enumerate(weights):
        idx = np.flatnonzero(domains == d)
        if weight <= 0 or idx.size == 0:
            continue
        if idx.size < 2:
            return None
        strata.append((idx, weight / idx.size))
    if not strata:
        return None
    out = np.empty((n_resamples, spec.shape[1]), dtype=np.float64)
    for start in range(0, n_resamples, _BLOCK):
        rows = min(_BLOCK, n_resamples - start)
        num = np.zeros(rows)
        den = np.zeros((rows, spec.shape[1]))
        for idx, w in strata:
            # Multinomial counts are the same draw as n_d indices with replacement, without the indices.
            counts = rng.multinomial(idx.size, np.full(idx.size, 1.0 / idx.size), size=rows) * w
            num += counts @ base[idx]
            den += counts @ spec[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            out[start : start + rows] = num[:, None] / den
    return out
