"""Speedup: what speculation measurably bought (E_meas) and what three models say it should buy.

docs/metrics.md shows all four side by side, because the gaps explain where time goes: E_seed (the field
report's formula, from α and the cost ratio c), E_lev (Leviathan et al., from β, k and c, assuming a
k+1-token verification costs one target forward), and E_cal (the run's steps priced by the measured cost
curve, each with its own draft length).
Inputs that are ``None`` (no drafts, no cost curve, no baseline) give ``None``, as do zero-time inputs
that would divide by zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from specmeter.metrics.costmodel import DecodeBudget, StepMix, predict_step_mix
from specmeter.metrics.records import CostCurve, RequestRecord

__all__ = [
    "by_occurrence",
    "cost_ratio",
    "pair_latencies",
    "predict_speedup_calibrated",
    "speedup_calibrated",
    "speedup_leviathan",
    "speedup_measured",
    "speedup_seed",
]


def cost_ratio(curve: CostCurve | None) -> float | None:
    """c = t_D(1) / t_T(1): one draft forward over one target forward (the field report's γ)."""
    if curve is None or not curve.target_s or curve.target_s[0] <= 0:
        return None
    return curve.draft_s / curve.target_s[0]


def speedup_seed(alpha: float | None, c: float | None) -> float | None:
    """E_seed = 1 / (1 − α(1 − c)), the field report's model."""
    if alpha is None or c is None:
        return None
    denominator = 1.0 - alpha * (1.0 - c)
    if denominator <= 0:  # α = 1 with a free draft: unbounded, not a number to print
        return None
    return 1.0 / denominator


def speedup_leviathan(beta: float | None, k: int, c: float | None) -> float | None:
    """E_lev = (1 − β^{k+1}) / ((1 − β)(k·c + 1)); at β = 1 it is (k+1) / (k·c + 1).

    The numerator is evaluated as Σ_{j=0..k} β^j, the same value without the 0/0 at β = 1.
    """
    if beta is None or c is None:
        return None
    expected_tokens = sum(beta**j for j in range(k + 1))
    return expected_tokens / (k * c + 1.0)


def speedup_calibrated(mix: StepMix | None, curve: CostCurve | None, propose_s: float = 0.0) -> float | None:
    """E_cal = Σ tokens · t_T(1) / Σ priced forwards, over every decode forward (docs/metrics.md, "speedup,
    calibrated").

    A verification step s drafted d_s tokens, produced a_s + 1 and costs d_s·t_D(1) + t_T(d_s + 1); a
    forward that drafted nothing (no n-gram match, the last token of a request) produced one token at
    t_T(1); without the draft every token would have cost t_T(1). ``propose_s`` is the measured proposing
    time the curve does not price (t_D(1) = 0: a model-free lookup, an EAGLE head), summed over the run's
    steps. So E_cal pays what E_meas pays but the loop's own time between forwards, and a method that drafts
    on a share f of the steps gets (f·τ + 1 − f)/(f·τ/E_k + 1 − f), E_k its E_cal over the drafting steps.
    With every d_s = k and no plain step this is τ · t_T(1) / (k·t_D(1) + t_T(k+1)). ``mix`` is
    ``costmodel.step_mix(records)`` for a run, ``costmodel.predict_step_mix(...)`` for a prediction.
    """
    if mix is None or curve is None or not curve.target_s or mix.steps + mix.target_only <= 0:
        return None
    priced = mix.decode_s(curve) + max(0.0, propose_s)
    if priced <= 0:
        return None
    return (mix.credited + mix.target_only) * curve.t_target(1) / priced


def predict_speedup_calibrated(
    budgets: Sequence[DecodeBudget], conditional: Sequence[float | None], k: int, curve: CostCurve | None
) -> float | None:
    """E_cal at draft length k predicted from the per-position conditional rates q_0..q_{k−1} measured at a
    larger k and the requests' decode lengths (``costmodel.predict_step_mix``), priced like a measured run.

    This relies on positions 1..k behaving the same whether or not the draft goes on to k_max, which
    holds for a draft model proposing greedily or by sampling token by token. Positions that were never
    measured make the prediction ``None`` rather than a guess.
    """
    return speedup_calibrated(predict_step_mix(budgets, conditional, k), curve)


def by_occurrence(requests: Iterable[RequestRecord]) -> dict[tuple[str, int], RequestRecord]:
    """Requests keyed by (id, n): the n-th occurrence of an id, counted from 0 in run order. Two runs pair
    request by request on these keys, so a workload that repeats a prompt still pairs like with like."""
    seen: dict[str, int] = {}
    out: dict[tuple[str, int], RequestRecord] = {}
    for r in requests:
        n = seen.get(r.id, 0)
        seen[r.id] = n + 1
        out[(r.id, n)] = r
    return out


def pair_latencies(
    spec: Iterable[RequestRecord], baseline: Iterable[RequestRecord], *, decode_only: bool = False
) -> tuple[list[float], list[float]]:
    """(baseline times, speculative times) of the requests present in both runs, paired by id.

    The n-th occurrence of an id in one run pairs with the n-th in the other (:func:`by_occurrence`), so a
    workload that repeats a prompt still pairs like with like. ``decode_only`` uses latency − TTFT,
    removing prefill and queueing.
    """

    def keyed(requests: Iterable[RequestRecord]) -> dict[tuple[str, int], float]:
        return {
            key: r.latency_s - r.ttft_s if decode_only else r.latency_s
            for key, r in by_occurrence(requests).items()
        }

    spec_times = keyed(spec)
    base_times = keyed(baseline)
    keys = [key for key in spec_times if key in base_times]  # spec order, for reproducible bootstraps
    return [base_times[key] for key in keys], [spec_times[key] for key in keys]


def speedup_measured(
    spec: Iterable[RequestRecord], baseline: Iterable[RequestRecord], *, decode_only: bool = False
) -> float | None:
    """E_meas = Σ baseline latency / Σ speculative latency over requests paired by id.

    A ratio of totals, not a mean of per-request ratios: it is the wall-clock saving on the workload,
    and short requests with noisy ratios do not dominate it.
    """
    base, spec_times = pair_latencies(spec, baseline, decode_only=decode_only)
    total_spec = sum(spec_times)
    if not base or total_spec <= 0:
        return None
    return sum(base) / total_spec
