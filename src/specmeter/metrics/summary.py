"""One run's summary, in exactly the keys of docs/results.md, plus the danger-zone verdict.

This is where the pure metric functions meet a RunRecord: it decides which figures apply (a baseline
run has no acceptance or speedup, so those are None), converts seconds to milliseconds, turns tuples into
lists, and keeps full precision, so the result is plain JSON that bench, tune, load and demo write as is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from specmeter.metrics.acceptance import (
    acceptance_counts,
    acceptance_length,
    acceptance_rate,
    beta_mle,
    per_position_acceptance,
)
from specmeter.metrics.costmodel import decode_budgets, predict_step_mix, shortens_drafts, step_mix
from specmeter.metrics.latency import (
    chunk_gaps,
    count_stalls,
    decode_tokens_per_second,
    jitter,
    per_token_gaps,
    percentiles,
    tail_ratio,
    tokens_per_second,
    tpot,
)
from specmeter.metrics.memory import (
    achieved_bytes_per_s,
    bandwidth_efficiency,
    bandwidth_fraction,
    extra_memory_bytes,
    weight_traffic_per_token,
)
from specmeter.metrics.records import RequestRecord, RunRecord
from specmeter.metrics.speedup import (
    cost_ratio,
    pair_latencies,
    speedup_calibrated,
    speedup_leviathan,
    speedup_measured,
    speedup_seed,
)
from specmeter.metrics.stats import bootstrap_ratio_ci, paired_speedup_ci

__all__ = [
    "ACCEPTANCE_DANGER",
    "MODEL_FILE_KEYS",
    "SPEEDUP_DANGER",
    "SUMMARY_KEYS",
    "danger_zone",
    "judge",
    "speedup_verdict",
    "summarize",
    "summarize_by_category",
]

ACCEPTANCE_DANGER = 0.5  # docs/metrics.md "Danger zone": α < 0.5 ...
SPEEDUP_DANGER = 1.0  # ... or E_meas < 1.0

MS = 1000.0

# The summary figures that come from the models' weights and KV layout (their ModelInfo), not from the
# requests: a remote endpoint's (load) are unknown, so null.
MODEL_FILE_KEYS: tuple[str, ...] = (
    "weight_bytes",
    "kv_bytes_per_token",
    "extra_memory_bytes",
    "weight_traffic_per_token",
    "baseline_weight_traffic_per_token",
    "bandwidth_efficiency",
)

# The summary table of docs/results.md, in its order; summarize() produces exactly these keys.
SUMMARY_KEYS: tuple[str, ...] = (
    "requests",
    "steps",
    "target_forwards",
    "drafted_tokens",
    "accepted_tokens",
    "emitted_tokens",
    "acceptance_rate",
    "acceptance_rate_ci",
    "beta",
    "beta_ci",
    "rejections",
    "acceptance_length",
    "acceptance_length_ci",
    "per_position",
    "cost_ratio",
    "cost_curve",
    "speedup_measured",
    "speedup_measured_ci",
    "speedup_measured_decode",
    "speedup_seed",
    "speedup_leviathan",
    "speedup_calibrated",
    "speedup_calibrated_by_k",
    "ttft_ms",
    "tpot_ms",
    "gap_ms",
    "gap_per_token_ms",
    "latency_ms",
    "jitter",
    "gap_p99_over_p50",
    "stalls",
    "stall_rate",
    "tokens_per_s",
    "decode_tokens_per_s",
    *MODEL_FILE_KEYS,
    "achieved_bytes_per_s",
    "copy_bytes_per_s",
    "bandwidth_fraction",
    "danger_zone",
    "danger_reasons",
    "verdict",
    "warnings",
)


def _as_list(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


def summarize(
    run: RunRecord, baseline: RunRecord | None, *, context_tokens: int | None = None
) -> dict[str, object]:
    """The docs/results.md summary of ``run``; ``baseline`` (paired by request id) gives E_meas.

    ``context_tokens`` sizes the draft's KV cache in ``extra_memory_bytes``; by default the longest
    prompt + output among the run's requests, i.e. what this workload needs held at once.
    """
    requests = run.requests
    speculative = run.draft is not None
    counts = acceptance_counts(requests)
    per_request = [acceptance_counts(r.steps) for r in requests]

    alpha = beta = tau = None
    alpha_ci = beta_ci = tau_ci = None
    positions: list[dict[str, object]] | None = None
    by_k: list[dict[str, object]] | None = None
    c = e_seed = e_lev = e_cal = None
    if speculative:
        alpha, beta, tau = acceptance_rate(counts), beta_mle(counts), acceptance_length(counts)
        accepted = [p.accepted for p in per_request]
        alpha_ci = bootstrap_ratio_ci(accepted, [p.drafted for p in per_request])
        beta_ci = bootstrap_ratio_ci(accepted, [p.accepted + p.rejections for p in per_request])
        mean_accepted_ci = bootstrap_ratio_ci(accepted, [p.steps for p in per_request])
        if mean_accepted_ci is not None:
            tau_ci = (1.0 + mean_accepted_ci[0], 1.0 + mean_accepted_ci[1])  # τ = 1 + A/S
        rates = per_position_acceptance(requests, positions=run.k)
        positions = [
            {
                "position": p.position,
                "cumulative": p.cumulative,
                "conditional": p.conditional,
                "count": p.count,
                "reached": p.reached,
            }
            for p in rates
        ]
        c = cost_ratio(run.cost_curve)
        e_seed = speedup_seed(alpha, c)
        e_lev = speedup_leviathan(beta, run.k, c)
        e_cal = speedup_calibrated(step_mix(requests), run.cost_curve, unpriced_proposing(run))
        by_k = _calibrated_by_k(run, requests, [p.conditional for p in rates])

    e_meas = e_meas_decode = None
    e_meas_ci = None
    if speculative and baseline is not None:
        e_meas = speedup_measured(requests, baseline.requests)
        e_meas_decode = speedup_measured(requests, baseline.requests, decode_only=True)
        base_times, spec_times = pair_latencies(requests, baseline.requests)
        e_meas_ci = paired_speedup_ci(base_times, spec_times)

    gaps = [g for r in requests for g in chunk_gaps(r)]
    token_gaps = [g for r in requests for g in per_token_gaps(r)]
    tpots = [t for t in (tpot(r) for r in requests) if t is not None]
    stall_count, gap_count = count_stalls(requests)

    w_t = run.target.weight_bytes
    w_d = run.draft.weight_bytes if run.draft is not None else None
    extra: int | None = None
    if run.draft is not None:
        if context_tokens is None:
            context_tokens = max((r.prompt_tokens + r.output_tokens for r in requests), default=0)
        extra = extra_memory_bytes(run.draft.added_weight_bytes, run.draft.kv_bytes_per_token, context_tokens)
    traffic = weight_traffic_per_token(
        counts.target_forwards, counts.draft_forwards, counts.emitted, w_t, w_d or 0
    )
    decode_rate = decode_tokens_per_second(requests)
    achieved = achieved_bytes_per_s(traffic, decode_rate) if w_t > 0 else None
    curve = run.cost_curve
    copy_rate = curve.copy_bytes_per_s if curve is not None else None

    summary: dict[str, object] = {
        "requests": len(requests),
        "steps": counts.steps,
        "target_forwards": counts.target_forwards,
        "drafted_tokens": counts.drafted,
        "accepted_tokens": counts.accepted,
        "emitted_tokens": sum(r.output_tokens for r in requests),
        "acceptance_rate": alpha,
        "acceptance_rate_ci": _as_list(alpha_ci),
        "beta": beta,
        "beta_ci": _as_list(beta_ci),
        "rejections": counts.rejections,
        "acceptance_length": tau,
        "acceptance_length_ci": _as_list(tau_ci),
        "per_position": positions,
        "cost_ratio": c,
        "cost_curve": None
        if curve is None
        else {"target_ms": [t * MS for t in curve.target_s], "draft_ms": curve.draft_s * MS},
        "speedup_measured": e_meas,
        "speedup_measured_ci": _as_list(e_meas_ci),
        "speedup_measured_decode": e_meas_decode,
        "speedup_seed": e_seed,
        "speedup_leviathan": e_lev,
        "speedup_calibrated": e_cal,
        "speedup_calibrated_by_k": by_k,
        "ttft_ms": percentiles([r.ttft_s for r in requests], scale=MS),
        "tpot_ms": percentiles(tpots, scale=MS),
        "gap_ms": percentiles(gaps, scale=MS),
        "gap_per_token_ms": percentiles(token_gaps, scale=MS),
        "latency_ms": percentiles([r.latency_s for r in requests], scale=MS),
        "jitter": jitter(gaps),
        "gap_p99_over_p50": tail_ratio(gaps),
        "stalls": stall_count,
        "stall_rate": stall_count / gap_count if gap_count else None,
        "tokens_per_s": tokens_per_second(requests),
        "decode_tokens_per_s": decode_rate,
        "weight_bytes": {"target": w_t, "draft": w_d},
        "kv_bytes_per_token": {
            "target": run.target.kv_bytes_per_token,
            "draft": run.draft.kv_bytes_per_token if run.draft is not None else None,
        },
        "extra_memory_bytes": extra,
        "weight_traffic_per_token": traffic,
        "baseline_weight_traffic_per_token": w_t,
        "bandwidth_efficiency": bandwidth_efficiency(w_t, traffic, extra) if speculative else None,
        "achieved_bytes_per_s": achieved,
        "copy_bytes_per_s": copy_rate,
        "bandwidth_fraction": bandwidth_fraction(achieved, copy_rate),
        "danger_zone": False,
        "danger_reasons": [],
        "verdict": None,
        "warnings": [],
    }
    summary.update(judge(summary))
    return summary


def unpriced_proposing(run: RunRecord) -> float:
    """The run's measured proposing time that its cost curve does not price: every step's ``draft_s`` when
    the curve times no draft forward (t_D(1) = 0: a model-free lookup, an EAGLE head), else 0."""
    curve = run.cost_curve
    if run.draft is None or curve is None or curve.draft_s > 0:
        return 0.0
    return sum(s.draft_s for r in run.requests for s in r.steps)


def _calibrated_by_k(
    run: RunRecord, requests: tuple[RequestRecord, ...], conditional: list[float | None]
) -> list[dict[str, object]] | None:
    """τ and E_cal predicted for k = 1..run.k from this run's per-position rates and decode lengths
    (docs/metrics.md, "choosing k"), for reports that plot speedup against k."""
    if run.cost_curve is None or not run.cost_curve.target_s or run.k < 1:
        return None
    budgets = decode_budgets(requests, shortens_drafts(requests, run.k))
    rows: list[dict[str, object]] = []
    for k in range(1, run.k + 1):
        mix = predict_step_mix(budgets, conditional, k)
        rows.append(
            {
                "k": k,
                "acceptance_length": None if mix is None else mix.acceptance_length,
                "speedup_calibrated": speedup_calibrated(mix, run.cost_curve),
            }
        )
    return rows


def summarize_by_category(
    run: RunRecord, baseline: RunRecord | None, *, context_tokens: int | None = None
) -> dict[str, dict[str, object]]:
    """One summary per request category, sorted by category name.

    The baseline is cut to the ids of the category's requests, so E_meas pairs within the category.
    """
    result: dict[str, dict[str, object]] = {}
    for category in sorted({r.category for r in run.requests}):
        part = tuple(r for r in run.requests if r.category == category)
        ids = {r.id for r in part}
        base_part = None
        if baseline is not None:
            base_part = replace(baseline, requests=tuple(r for r in baseline.requests if r.id in ids))
        result[category] = summarize(replace(run, requests=part), base_part, context_tokens=context_tokens)
    return result


def _figure(value: float, threshold: float, suffix: str = "") -> str:
    # Two decimals, unless that would print 0.499 as "0.50 < 0.50".
    for digits in range(2, 7):
        shown = f"{value:.{digits}f}"
        if shown != f"{threshold:.{digits}f}":
            return shown + suffix
    return f"{value!r}{suffix}"


def speedup_verdict(e: float | None, ci: Sequence[float] | None = None) -> str | None:
    """``pays`` (the interval lies above 1, or E ≥ 1 without one), ``slower`` (below 1, or E < 1), or
    ``unclear`` (the interval holds 1); None without a speedup (docs/metrics.md, "Verdicts")."""
    if not isinstance(e, float | int):
        return None
    if ci is not None and len(ci) == 2:
        lo, hi = float(ci[0]), float(ci[1])
        if lo > SPEEDUP_DANGER:
            return "pays"
        if hi < SPEEDUP_DANGER:
            return "slower"
        return "unclear"
    return "pays" if e >= SPEEDUP_DANGER else "slower"


def _alpha_effect(alpha: float, e: float, share: object, verdict: str | None = None) -> str:
    """The α rule as a warning when a speedup is known: what low acceptance costs, and why E is what it is."""
    text = f"α {_figure(alpha, ACCEPTANCE_DANGER)}: most drafted tokens are discarded"
    if verdict == "unclear":
        return f"{text}; {e:.2f}x, whose interval holds 1.00x: no measurable gain or loss"
    if e < SPEEDUP_DANGER:
        return f"{text}, and speculation is slower ({e:.2f}x)"
    if isinstance(share, float | int) and share < 0.9:
        why = f"it drafts at only {share:.0%} of the steps, where it has a match"
    else:
        why = "what it does accept outweighs drafting and verifying the rest"
    return f"{text}; still {e:.2f}x because {why}"


def judge(
    summary: Mapping[str, object], *, speedup_key: str = "speedup_measured", what: str = "measured"
) -> dict[str, object]:
    """``danger_zone``, ``danger_reasons``, ``verdict`` and ``warnings`` of a summary (docs/metrics.md,
    "Verdicts"): the verdict comes from the speedup and its interval; the field report's α < 0.5 rule is a
    named warning with its effect, and puts a run in the danger zone only when no speedup is known."""
    e = summary.get(speedup_key)
    ci = summary.get(f"{speedup_key}_ci")
    interval = ci if isinstance(ci, list | tuple) and len(ci) == 2 else None
    verdict = speedup_verdict(e if isinstance(e, float | int) else None, interval)  # type: ignore[arg-type]
    reasons: list[str] = []
    warnings: list[str] = []
    alpha = summary.get("acceptance_rate")
    if isinstance(alpha, float | int) and alpha < ACCEPTANCE_DANGER:
        if isinstance(e, float | int):
            share = summary.get("drafting_share")
            if share is None:
                steps, forwards = summary.get("steps"), summary.get("target_forwards")
                if isinstance(steps, int) and isinstance(forwards, int) and forwards:
                    share = steps / forwards
            warnings.append(_alpha_effect(float(alpha), float(e), share, verdict))
        else:
            reasons.append(
                f"acceptance rate {_figure(alpha, ACCEPTANCE_DANGER)} < {ACCEPTANCE_DANGER:.2f}: "
                "most drafted tokens are thrown away (no speedup to judge by)"
            )
    if verdict == "slower" or (verdict == "unclear" and isinstance(e, float | int) and e < SPEEDUP_DANGER):
        assert isinstance(e, float | int)
        reasons.append(
            f"{what} speedup {_figure(e, SPEEDUP_DANGER, 'x')} < {SPEEDUP_DANGER:.2f}x: "
            "speculative decoding is slower than decoding without it"
            + (" (its interval holds 1.00x)" if verdict == "unclear" else "")
        )
    return {"danger_zone": bool(reasons), "danger_reasons": reasons, "verdict": verdict, "warnings": warnings}


def danger_zone(summary: Mapping[str, object]) -> tuple[bool, list[str]]:
    """(in the danger zone, reasons) of :func:`judge`: E_meas < 1.0, or α < 0.5 where no E_meas is known.

    Figures that are None (a baseline run, no baseline to compare with) raise no alarm.
    """
    judged = judge(summary)
    return bool(judged["danger_zone"]), list(judged["danger_reasons"])  # type: ignore[call-overload]
