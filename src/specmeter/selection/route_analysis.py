"""Routing by category: each category's traffic to the candidate with the highest measured E there, and
what that router gains over one candidate for all traffic (the demo's recommendation, docs/selection.md).

From the baseline and one run per candidate over the same prompts, paired request by request
(``metrics.speedup.by_occurrence``) on the requests every run finished. E is E_meas end to end, as
``bench`` reports it: Σ baseline latency / Σ candidate latency over a set of requests, whole requests
(prefill included).

* **Per category** (a request's ``category``: ``legal/redline``, ``general/news``): every candidate's E over
  the category's requests; the *pick* is the highest, or the target alone (E = 1 by definition) where no
  candidate reaches 1.00×; the *runner-up* is the best of the rest, the target alone among them. Each has
  its paired bootstrap 95% interval (``metrics.stats``) where the category holds at least
  ``MIN_CI_REQUESTS`` requests, and the target alone the exact [1, 1]. The pick is *separated* from the
  runner-up when the two intervals do not overlap, not separated when they do, and unknown (None) where
  either has no interval.
* **The router**: every request timed with its category's pick (the baseline's time where the pick is the
  target alone). Its E over a domain (a category's first path part: ``legal`` for ``legal/redline``) and
  over all traffic is Σ baseline / Σ routed time over those requests, the ratio of sums, not a mean of the
  categories' E. Beside it, the *single* candidate with the highest E over the same requests (the target
  alone where none reaches 1.00×), and the gain E_router / E_single − 1. Intervals: paired bootstrap over
  requests, stratified by domain (``selection.mix.bootstrap_weighted`` with each domain at its share of the
  requests, which keeps the ratio of sums), the picks held fixed.
* **Held out.** The picks are made on the requests they are scored on, so the router's E is an upper
  estimate (the winner's curse; the fewer requests a category holds, the larger). ``held_out`` times each
  request with the pick its category's *other* requests make (leave one out; the target alone in a
  category of one request): what the routing rule gains on a request it did not choose on. No interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from specmeter.metrics.records import RunRecord
from specmeter.metrics.speedup import by_occurrence
from specmeter.metrics.stats import MIN_CI_REQUESTS, paired_speedup_ci, percentile_interval
from specmeter.selection.mix import bootstrap_weighted

__all__ = ["CONFIDENCE", "analyse_routes", "speedups_where", "top_domain"]

CONFIDENCE = 0.95


def top_domain(category: str) -> str:
    """A category's domain: its first path part (``legal`` for ``legal/redline``; ``chat`` for ``chat``)."""
    return category.split("/", 1)[0]


@dataclass(frozen=True)
class _Paired:
    """Latencies of the requests every run finished: ``cols[r, j]`` for candidate j < m, and the baseline's
    own time in column m (the target alone); ``base[r]``; each request's category and domain."""

    base: np.ndarray
    cols: np.ndarray
    categories: list[str]
    domains: list[str]

    @property
    def alone(self) -> int:
        """The column of the target alone."""
        return int(self.cols.shape[1]) - 1


def _pair(baseline: RunRecord, runs: Sequence[RunRecord], domain_of: Callable[[str], str]) -> _Paired:
    base_keyed = by_occurrence(baseline.requests)
    keyed = [by_occurrence(r.requests) for r in runs]
    keys = [k for k in base_keyed if all(k in kr for kr in keyed)]
    base = np.array([base_keyed[k].latency_s for k in keys], dtype=np.float64)
    spec = np.array([[kr[k].latency_s for kr in keyed] for k in keys], dtype=np.float64)
    cols = np.column_stack([spec.reshape(len(keys), len(runs)), base])
    categories = [base_keyed[k].category for k in keys]
    return _Paired(base, cols, categories, [domain_of(c) for c in categories])


def _speedups(p: _Paired, idx: np.ndarray) -> np.ndarray:
    """E of every column over the requests ``idx`` (NaN where a column's times sum to 0)."""
    num = float(p.base[idx].sum())
    den = p.cols[idx].sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: np.ndarray = np.where((den > 0) & (num > 0), num / den, np.nan)
    return out


def _pick(es: np.ndarray, alone: int) -> int:
    """The candidate with the highest E (the first of equals), or ``alone`` where none reaches 1.00×."""
    scored = np.where(np.isfinite(es[:alone]), es[:alone], -np.inf)
    if scored.size == 0 or not np.isfinite(scored.max()) or scored.max() < 1.0:
        return alone
    return int(np.argmax(scored))


def _runner_up(es: np.ndarray, pick: int) -> int | None:
    """The best column but ``pick`` (the target alone, at 1.00×, among them)."""
    scored = np.where(np.isfinite(es), es, -np.inf)
    scored[pick] = -np.inf
    return None if not np.isfinite(scored.max()) else int(np.argmax(scored))


def _name(run: RunRecord) -> str:
    assert run.draft is not None
    return run.draft.name


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _by_candidate(runs: Sequence[RunRecord], es: np.ndarray) -> list[dict[str, Any]]:
    """Every candidate's E from :func:`_speedups` (None where it has none)."""
    return [
        {"draft": _name(run), "k": run.k, "speedup_measured": _finite(es[c])} for c, run in enumerate(runs)
    ]


def _option(
    runs: Sequence[RunRecord], p: _Paired, idx: np.ndarray, j: int, e: float, *, interval: bool = True
) -> dict[str, Any]:
    """A pick or runner-up: the candidate (``draft`` None: the target alone), its E over the requests
    ``idx`` and, with ``interval``, its paired bootstrap 95% interval (None below ``MIN_CI_REQUESTS``)."""
    if j == p.alone:
        return {"draft": None, "k": 0, "speedup_measured": 1.0, "speedup_measured_ci": [1.0, 1.0]}
    run = runs[j]
    ci = paired_speedup_ci(p.base[idx].tolist(), p.cols[idx, j].tolist()) if interval else None
    return {
        "draft": _name(run),
        "k": run.k,
        "speedup_measured": _finite(e),
        "speedup_measured_ci": None if ci is None else [ci[0], ci[1]],
    }


def _separated(a: dict[str, Any], b: dict[str, Any] | None) -> bool | None:
    """True when the two 95% intervals do not overlap, False when they do, None without both."""
    if b is None or a["speedup_measured_ci"] is None or b["speedup_measured_ci"] is None:
        return None
    (a_lo, a_hi), (b_lo, b_hi) = a["speedup_measured_ci"], b["speedup_measured_ci"]
    return bool(a_lo > b_hi or b_lo > a_hi)


def _held_out(p: _Paired, members: np.ndarray) -> np.ndarray:
    """For each request of one category, the column its category's other requests pick."""
    picks = np.full(members.size, p.alone, dtype=np.int64)
    for i in range(members.size):
        others = np.delete(members, i)
        if others.size:
            picks[i] = _pick(_speedups(p, others), p.alone)
    return picks


def _scope(
    runs: Sequence[RunRecord],
    p: _Paired,
    idx: np.ndarray,
    routed: np.ndarray,
    held: np.ndarray,
    strata: np.ndarray,
    *,
    n_resamples: int,
    seed: int,
) -> dict[str, Any]:
    """The router over the requests ``idx`` (a domain, or all traffic) beside the best single candidate."""
    es = _speedups(p, idx)
    j = _pick(es, p.alone)
    single = _option(runs, p, idx, j, float(es[j]), interval=False)  # from the resamples below
    base_sum = float(p.base[idx].sum())
    routed_sum, held_sum = float(routed[idx].sum()), float(held[idx].sum())
    router = base_sum / routed_sum if routed_sum > 0 and base_sum > 0 else None
    held_e = base_sum / held_sum if held_sum > 0 and base_sum > 0 else None
    single_e = single["speedup_measured"]
    gain = None if router is None or not single_e else router / single_e - 1.0

    # Stratified by domain, each at its share of these requests: the weighted E is the ratio of sums.
    names, codes = np.unique(strata[idx], return_inverse=True)
    weights = [float(np.count_nonzero(codes == d)) / idx.size for d in range(names.size)]
    columns = np.column_stack([routed[idx], p.cols[idx, j]])
    samples = bootstrap_weighted(p.base[idx], columns, codes, weights, n_resamples=n_resamples, seed=seed)
    router_ci = gain_ci = None
    if samples is not None:
        router_ci = percentile_interval(samples[:, 0], CONFIDENCE)
        single["speedup_measured_ci"] = percentile_interval(
            samples[:, 1], CONFIDENCE
        )  # the same resamples as the router's
        with np.errstate(divide="ignore", invalid="ignore"):
            gain_ci = percentile_interval(samples[:, 0] / samples[:, 1] - 1.0, CONFIDENCE)
    return {
        "requests": int(idx.size),
        "router": {"speedup_measured": router, "speedup_measured_ci": router_ci},
        "single": single,
        "gain_over_single": gain,
        "gain_over_single_ci": gain_ci,
        "held_out": {
            "speedup_measured": held_e,
            "gain_over_single": None if held_e is None or not single_e else held_e / single_e - 1.0,
        },
    }


def analyse_routes(
    baseline: RunRecord,
    runs: Sequence[RunRecord],
    *,
    domain_of: Callable[[str], str] = top_domain,
    n_resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The router by category over ``runs`` (one per candidate, each paired with ``baseline``): each
    category's pick, runner-up and separation, the routed E per domain and over all traffic beside the best
    single candidate, and the held-out estimate (the module's docstring has every definition)."""
    runs = [r for r in runs if r.draft is not None]
    p = _pair(baseline, runs, domain_of)
    routed = p.base.copy()
    held = p.base.copy()
    categories: list[dict[str, Any]] = []
    cats = np.array(p.categories, dtype=object)
    for category in sorted(set(p.categories), key=lambda c: (domain_of(c), c)):
        idx = np.flatnonzero(cats == category)
        es = _speedups(p, idx)
        j = _pick(es, p.alone)
        routed[idx] = p.cols[idx, j]
        held[idx] = p.cols[idx, _held_out(p, idx)]
        pick = _option(runs, p, idx, j, float(es[j]))
        second = _runner_up(es, j)
        runner = None if second is None else _option(runs, p, idx, second, float(es[second]))
        categories.append(
            {
                "category": category,
                "domain": domain_of(category),
                "requests": int(idx.size),
                "pick": pick,
                "runner_up": runner,
                "separated": _separated(pick, runner),
                "by_candidate": _by_candidate(runs, es),
            }
        )
    strata = np.array(p.domains, dtype=object)
    kw = {"n_resamples": n_resamples, "seed": seed}
    domains = {
        d: _scope(runs, p, np.flatnonzero(strata == d), routed, held, strata, **kw)
        for d in sorted(set(p.domains))
    }
    overall = _scope(runs, p, np.arange(p.base.size), routed, held, strata, **kw)
    for row in categories:  # where routing the category on its own changes its domain's single choice
        single, pick = domains[row["domain"]]["single"], row["pick"]
        row["differs_from_domain"] = (pick["draft"], pick["k"]) != (single["draft"], single["k"])
    return {
        "speedup": "end_to_end",
        "confidence": CONFIDENCE,
        "min_ci_requests": MIN_CI_REQUESTS,
        "requests_paired": int(p.base.size),
        "categories": categories,
        "domains": domains,
        "all": overall,
    }


def speedups_where(
    baseline: RunRecord, runs: Sequence[RunRecord], keep: Callable[[str], bool]
) -> tuple[int, list[dict[str, Any]]]:
    """Every candidate's E over the requests every run finished whose category ``keep`` accepts (legal text
    but ``legal/redline``): Σ baseline latency / Σ candidate latency, paired as :func:`analyse_routes`
    pairs. Returns (requests, one ``{"draft", "k", "speedup_measured"}`` per candidate, None where the
    times sum to 0)."""
    runs = [r for r in runs if r.draft is not None]
    p = _pair(baseline, runs, top_domain)
    idx = np.flatnonzero(np.array([keep(c) for c in p.categories], dtype=bool))
    return int(idx.size), _by_candidate(runs, _speedups(p, idx))
