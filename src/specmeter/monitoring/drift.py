"""Drift: this window against a reference window, per domain, with a request-level significance test.

"Track how acceptance moved since yesterday's change." For every (tenant, domain) present in both windows,
α = ΣA/ΣD and τ = 1 + ΣA/ΣS are compared.

**The test is at the request level.** α̂ = ΣA_r / ΣD_r is a ratio of per-request sums; the drafted tokens
of one request are not independent trials (one hard prompt rejects many drafts, an easy one accepts
nearly all), so the request is the unit. The variance of a ratio estimator over independent requests is,
to first order (the delta method; Cochran, *Sampling Techniques*, §6.3; the cluster-robust variance of
survey statistics):

    Var(α̂) ≈ n / (n − 1) · Σ_r (A_r − α̂ D_r)² / (Σ_r D_r)²

and the two windows are independent, so z = (α̂_now − α̂_ref) / √(Var_now + Var_ref), with a two-sided
normal p-value. τ − 1 = ΣA/ΣS is tested the same way with S in place of D.

**A pooled token-level test overstates significance.** Treating all ΣD drafted tokens as independent
Bernoulli trials (the two-proportion z-test, :func:`pooled_token_test`) uses Var = α(1 − α)/ΣD, which is
too small by the design effect 1 + (m − 1)ρ (m tokens per request, ρ their within-request correlation):
with typical heterogeneity between prompts it calls unchanged traffic "significant" far more often than
its nominal level (shown in ``tests/monitoring/test_monitoring_drift.py``). It is reported beside the
request-level p-value only so that the difference can be seen.

Several domains and two metrics make several tests; p-values are adjusted with Holm's step-down method
(which controls the family-wise error rate at the chosen level), and a change is *significant* when the
adjusted p-value is below the level. A side with fewer than ``min_requests`` requests is not tested.

**Sub-categories match by prefix** (:func:`align_domains`): a log's ``legal`` is compared with a stored
run's ``legal/definitions`` and ``legal/obligations`` together (and the other way round) when the other
window has no domain of that exact name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from specmeter.monitoring.domains import group_key
from specmeter.monitoring.requestlog import RequestObs

__all__ = [
    "DriftRow",
    "TestResult",
    "align_domains",
    "compare_windows",
    "holm",
    "pooled_token_test",
    "ratio_test",
]

Metric = Literal["alpha", "tau"]


@dataclass(frozen=True)
class TestResult:
    before: float
    after: float
    z: float
    p: float


def _two_sided(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2.0))


def _ratio_var(num: Sequence[float], den: Sequence[float]) -> tuple[float, float]:
    """(ratio of sums, its delta-method variance over requests)."""
    n, total = len(num), sum(den)
    ratio = sum(num) / total
    residual = sum((a - ratio * d) ** 2 for a, d in zip(num, den, strict=True))
    return ratio, n / (n - 1) * residual / total**2


def ratio_test(
    num_before: Sequence[float],
    den_before: Sequence[float],
    num_after: Sequence[float],
    den_after: Sequence[float],
) -> TestResult | None:
    """Request-level z-test of Σnum/Σden between two independent sets of requests; None if untestable."""
    if min(len(num_before), len(num_after)) < 2 or sum(den_before) <= 0 or sum(den_after) <= 0:
        return None
    before, v_before = _ratio_var(num_before, den_before)
    after, v_after = _ratio_var(num_after, den_after)
    se = math.sqrt(v_before + v_after)
    if se == 0.0:
        z = 0.0 if after == before else math.copysign(math.inf, after - before)
    else:
        z = (after - before) / se
    return TestResult(before, after, z, _two_sided(z) if math.isfinite(z) else 0.0)


def pooled_token_test(
    accepted_before: int, drafted_before: int, accepted_after: int, drafted_after: int
) -> TestResult | None:
    """The two-proportion z-test on pooled token counts (tokens as independent trials: overstates)."""
    if drafted_before <= 0 or drafted_after <= 0:
        return None
    before, after = accepted_before / drafted_before, accepted_after / drafted_after
    pooled = (accepted_before + accepted_after) / (drafted_before + drafted_after)
    se = math.sqrt(pooled * (1.0 - pooled) * (1.0 / drafted_before + 1.0 / drafted_after))
    z = 0.0 if se == 0.0 else (after - before) / se
    return TestResult(before, after, z, _two_sided(z))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class DriftRow:
    key: str  # tenant/domain
    domain: str
    tenant: str | None
    metric: Metric
    before: float | None
    after: float | None
    requests_before: int
    requests_after: int
    z: float | None
    p: float | None
    p_adjusted: float | None
    significant: bool
    direction: Literal["drop", "rise", "none"]
    pooled_token_p: float | None  # alpha only: what a token-level test would (wrongly) claim
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _parents(domain: str) -> list[str]:
    """``legal/nda/us`` → ``["legal/nda", "legal"]``: the domains a sub-category belongs to, nearest first."""
    parts = domain.split("/")
    return ["/".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


def align_domains(
    reference: Sequence[RequestObs], current: Sequence[RequestObs]
) -> tuple[list[RequestObs], list[RequestObs]]:
    """Both windows with sub-categories matched by prefix: a request whose (domain, tenant) the other window
    lacks is counted under its nearest parent domain that the other window has (``legal/nda`` → ``legal``,
    split at ``/``; ``select --mix``'s rule). So a log that names the domain (``legal``) is compared with a
    stored run on a golden set of sub-categories (``legal/definitions``, ``legal/nda``), in either
    direction; a domain present in both windows is never merged into its parent."""
    groups = ({r.group for r in reference}, {r.group for r in current})

    def relabel(side: Sequence[RequestObs], other: set[tuple[str, str | None]]) -> list[RequestObs]:
        out = []
        for r in side:
            if r.group not in other:
                parent = next((p for p in _parents(r.domain) if (p, r.tenant) in other), None)
                if parent is not None:
                    r = replace(r, domain=parent)
            out.append(r)
        return out

    return relabel(reference, groups[1]), relabel(current, groups[0])


def _groups(requests: Iterable[RequestObs]) -> dict[tuple[str, str | None], list[RequestObs]]:
    out: dict[tuple[str, str | None], list[RequestObs]] = {}
    for r in requests:
        out.setdefault(r.group, []).append(r)
    return out


def compare_windows(
    reference: Sequence[RequestObs],
    current: Sequence[RequestObs],
    *,
    level: float = 0.01,
    min_requests: int = 20,
) -> list[DriftRow]:
    """α and τ of every group present in both windows, reference → current, Holm-adjusted across all tests."""
    before_groups, after_groups = _groups(reference), _groups(current)
    pending: list[dict[str, Any]] = []
    for group in sorted(before_groups.keys() & after_groups.keys(), key=lambda g: group_key(*g)):
        b = [r for r in before_groups[group] if r.accepted is not None and r.drafted is not None]
        a = [r for r in after_groups[group] if r.accepted is not None and r.drafted is not None]
        for metric in ("alpha", "tau"):
            den_b = [float((r.drafted if metric == "alpha" else r.steps) or 0) for r in b]
            den_a = [float((r.drafted if metric == "alpha" else r.steps) or 0) for r in a]
            if metric == "tau" and (any(r.steps is None for r in [*a, *b]) or not b or not a):
                continue  # a log without steps (llama.cpp) has no τ
            num_b, num_a = [float(r.accepted or 0) for r in b], [float(r.accepted or 0) for r in a]
            test = ratio_test(num_b, den_b, num_a, den_a)
            note = None
            if min(len(a), len(b)) < min_requests:
                test, note = None, f"fewer than {min_requests} requests on one side: not tested"
            elif test is None:
                note = "no drafts on one side"
            shift = 1.0 if metric == "tau" else 0.0
            pooled = None
            if metric == "alpha":
                pt = pooled_token_test(int(sum(num_b)), int(sum(den_b)), int(sum(num_a)), int(sum(den_a)))
                pooled = None if pt is None else pt.p
            pending.append(
                {
                    "key": group_key(*group),
                    "domain": group[0],
                    "tenant": group[1],
                    "metric": metric,
                    "before": None if sum(den_b) <= 0 else shift + sum(num_b) / sum(den_b),
                    "after": None if sum(den_a) <= 0 else shift + sum(num_a) / sum(den_a),
                    "requests_before": len(b),
                    "requests_after": len(a),
                    "z": None if test is None else test.z,
                    "p": None if test is None else test.p,
                    "pooled_token_p": pooled,
                    "note": note,
                }
            )
    tested = [row for row in pending if row["p"] is not None]
    for row, adjusted in zip(tested, holm([row["p"] for row in tested]), strict=True):
        row["p_adjusted"] = adjusted
    rows = []
    for row in pending:
        adjusted = row.pop("p_adjusted", None)
        significant = adjusted is not None and adjusted < level
        direction: Literal["drop", "rise", "none"] = "none"
        if significant:
            direction = "drop" if row["after"] < row["before"] else "rise"
        rows.append(DriftRow(**row, p_adjusted=adjusted, significant=significant, direction=direction))
    return rows
