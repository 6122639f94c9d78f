"""Per-domain windows from per-request logs: α, τ, tokens/s and latency percentiles, each with an interval.

A window is ``[t0 + i·W, t0 + (i+1)·W)`` of request time (Unix seconds; windows align to multiples of W
from the epoch, so two monitors agree on them). Within a window requests are grouped by (domain, tenant).

Figures (definitions of docs/metrics.md, summed over the window's requests):

- α = ΣA / ΣD and τ = 1 + ΣA / ΣS through :func:`specmeter.monitoring.acceptance.acceptance_from_requests`
  (the same code as per-request reports under ``load``); β and per-position rates need step histograms and
  are not formed from logs.
- tokens/s = Σ tokens / Σ latency (end-to-end tokens/s, prefill and queueing in the time: ``bench``'s
  ``tokens_per_s``, not its decode-only ``decode_tokens_per_s``; docs/metrics.md).
- latency p50/p90/p99.

Intervals: α, τ − 1 and tokens/s are ratios of per-request sums, so their 95 % intervals are bootstrap
intervals *over requests* (``metrics.stats.bootstrap_ratio_ci``; tokens within one request are not
independent). Latency percentiles get the distribution-free interval of order statistics: the ranks
(l, u) with P(X_(l) ≤ q_p ≤ X_(u)) = P(l ≤ B < u) ≥ 0.95 for B ~ Binomial(n, p), the narrowest such pair
around n·p; with too few requests for 95 % coverage the interval is None.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from specmeter.metrics.stats import bootstrap_ratio_ci
from specmeter.monitoring.acceptance import ServerAcceptance, acceptance_from_requests
from specmeter.monitoring.requestlog import RequestObs
from specmeter.monitoring.windows import AcceptanceFigures, Window, iso

__all__ = ["DomainWindow", "DomainWindows", "group_key", "quantile_ci", "summarize_requests"]

QUANTILES = (0.5, 0.9, 0.99)


def group_key(domain: str, tenant: str | None) -> str:
    """How a (domain, tenant) group is named in alerts, history and the console: ``tenant/domain``."""
    return domain if tenant is None else f"{tenant}/{domain}"


def quantile_ci(values: Sequence[float], q: float, confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free interval for the q-quantile from order statistics (see the module docstring)."""
    n = len(values)
    if n == 0:
        return None
    x = np.sort(np.asarray(values, dtype=np.float64))
    k = np.arange(n + 1)
    # log P(B = k) for B ~ Binomial(n, q), then the CDF; lgamma keeps large n exact enough.
    logc = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in k])
    with np.errstate(divide="ignore"):
        logp = logc + k * math.log(q) + (n - k) * (math.log1p(-q) if q < 1 else -np.inf)
    cdf = np.cumsum(np.exp(logp))
    best: tuple[int, int] | None = None
    centre = n * q
    # Coverage of ranks l..u (1-based order statistics X_(l) ≤ q_p ≤ X_(u)) is P(l ≤ B ≤ u − 1).
    for lo in range(1, n + 1):
        if lo - 1 > centre:
            break
        below = cdf[lo - 1]  # P(B ≤ l − 1)
        need = below + confidence
        hi_index = int(np.searchsorted(cdf, need - 1e-12))  # smallest u-1 with cdf[u-1] ≥ need
        hi = hi_index + 1
        if hi > n:
            continue
        if best is None or hi - lo < best[1] - best[0]:
            best = (lo, hi)
    if best is None:
        return None
    return float(x[best[0] - 1]), float(x[best[1] - 1])


def _ratio_ci(num: Sequence[float], den: Sequence[float], seed: int) -> tuple[float, float] | None:
    if len(num) < 2 or sum(den) <= 0:
        return None
    return bootstrap_ratio_ci(num, den, seed=seed, n_resamples=1000)


def _report(obs: RequestObs) -> dict[str, Any]:
    """A request as the per-request report shapes acceptance_from_requests reads (vLLM's, or llama.cpp's)."""
    if obs.steps is not None:
        return {
            "num_spec_steps": obs.steps,
            "num_draft_tokens": obs.drafted,
            "num_accepted_draft_tokens": obs.accepted,
        }
    return {"draft_n": obs.drafted, "draft_n_accepted": obs.accepted}


@dataclass(frozen=True)
class DomainWindow(AcceptanceFigures):
    domain: str
    tenant: str | None
    t_start: float
    t_end: float
    requests: int
    acceptance: ServerAcceptance | None
    alpha_ci: tuple[float, float] | None
    tau_ci: tuple[float, float] | None
    tokens: int | None
    tokens_per_s: float | None
    tokens_per_s_ci: tuple[float, float] | None
    latency: dict[str, dict[str, Any]] | None  # p50/p90/p99 → {"value", "ci"} in seconds

    @property
    def key(self) -> str:
        return group_key(self.domain, self.tenant)

    def as_window(self) -> Window:
        """The monitor's Window (for alert rules and the history store): target = ``tenant/domain``."""
        return Window(self.key, "requests", self.t_start, self.t_end, self.acceptance)

    def as_dict(self) -> dict[str, Any]:
        a = self.acceptance
        return {
            "domain": self.domain,
            "tenant": self.tenant,
            "start": iso(self.t_start),
            "end": iso(self.t_end),
            "requests": self.requests,
            "acceptance_rate": self.alpha,
            "acceptance_rate_ci": list(self.alpha_ci) if self.alpha_ci else None,
            "acceptance_length": self.tau,
            "acceptance_length_ci": list(self.tau_ci) if self.tau_ci else None,
            "steps": None if a is None else a.steps,
            "drafted_tokens": None if a is None else a.drafted_tokens,
            "accepted_tokens": None if a is None else a.accepted_tokens,
            "tokens": self.tokens,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_ci": list(self.tokens_per_s_ci) if self.tokens_per_s_ci else None,
            "latency_s": self.latency,
        }


def summarize_requests(
    requests: Sequence[RequestObs],
    domain: str,
    tenant: str | None,
    t_start: float,
    t_end: float,
    *,
    seed: int = 0,
) -> DomainWindow:
    """The figures of one group's requests in one window (see the module docstring)."""
    acceptance = acceptance_from_requests(_report(r) for r in requests)
    accepted = [float(r.accepted or 0) for r in requests]
    with_steps = [r for r in requests if r.steps is not None]
    alpha_ci = _ratio_ci(accepted, [float(r.drafted or 0) for r in requests], seed)
    tau_ci = None
    if len(with_steps) == len(requests):
        ratio = _ratio_ci(accepted, [float(r.steps or 0) for r in requests], seed)
        tau_ci = None if ratio is None else (1.0 + ratio[0], 1.0 + ratio[1])
    timed = [r for r in requests if r.tokens is not None and r.latency_s is not None]
    tokens = sum(r.tokens or 0 for r in requests) if any(r.tokens is not None for r in requests) else None
    seconds = sum(r.latency_s or 0.0 for r in timed)
    tps = sum(r.tokens or 0 for r in timed) / seconds if timed and seconds > 0 else None
    tps_ci = _ratio_ci([float(r.tokens or 0) for r in timed], [r.latency_s or 0.0 for r in timed], seed)
    latencies = [r.latency_s for r in requests if r.latency_s is not None]
    latency = None
    if latencies:
        latency = {
            f"p{round(q * 100)}": {"value": float(np.quantile(latencies, q)), "ci": quantile_ci(latencies, q)}
            for q in QUANTILES
        }
    return DomainWindow(
        domain,
        tenant,
        t_start,
        t_end,
        len(requests),
        acceptance,
        alpha_ci,
        tau_ci,
        tokens,
        tps,
        tps_ci,
        latency,
    )


@dataclass
class DomainWindows:
    """Assigns requests to windows of length ``width`` seconds and closes them in time order.

    Requests whose window was already closed (late lines, a clock that went back) are counted in ``late``
    and not used, so a closed window's figures never change after they were published.
    """

    width: float
    seed: int = 0
    open: dict[float, list[RequestObs]] = field(default_factory=dict)
    closed_until: float = -math.inf
    late: int = 0

    def start_of(self, t: float) -> float:
        return math.floor(t / self.width) * self.width

    def add(self, requests: Iterable[RequestObs], now: float) -> None:
        for r in requests:
            t = r.time if r.time is not None else now
            start = self.start_of(t)
            if start + self.width <= self.closed_until:
                self.late += 1
                continue
            self.open.setdefault(start, []).append(r)

    def close(self, until: float | None = None) -> list[DomainWindow]:
        """Close every window that ends at or before ``until`` (None: all), oldest first."""
        out: list[DomainWindow] = []
        for start in sorted(self.open):
            end = start + self.width
            if until is not None and end > until:
                break
            groups: dict[tuple[str, str | None], list[RequestObs]] = {}
            for r in self.open.pop(start):
                groups.setdefault(r.group, []).append(r)
            for (domain, tenant), rs in sorted(groups.items(), key=lambda kv: group_key(*kv[0])):
                out.append(summarize_requests(rs, domain, tenant, start, end, seed=self.seed))
            self.closed_until = max(self.closed_until, end)
        if until is not None:
            self.closed_until = max(self.closed_until, self.start_of(until))
        return out
