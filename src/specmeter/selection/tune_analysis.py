"""Analysis of a k sweep: four speedups per k, where the gaps come from, predictions, best k per category.

Input: the baseline run and one run per k of the same draft over the same prompts (interleaved by the
engine runner), and the cost curve t_T(n), n = 1..k_max+1, with t_D(1). Output: the ``tune`` section of the
result JSON (docs/selection.md), plain JSON values.

Predictions come from the *source* run — the largest k run that is not held out: its per-position
conditional rates and the requests' decode lengths give the expected steps at every k up to it (short
drafts near the token limit included), the cost curve prices them as it prices a measured run, and the
engine overhead is a line fitted on the baseline and every run except the held-out one
(``metrics.costmodel``). Each category is predicted from its own rates; the figures for all requests sum
the categories' expected steps. The held-out k is measured like the others but used by no fit, so its
prediction error is an honest test of the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from specmeter.metrics.acceptance import (
    acceptance_counts,
    acceptance_length,
    acceptance_rate,
    beta_mle,
    per_position_acceptance,
)
from specmeter.metrics.costmodel import (
    DecodeTiming,
    LineFit,
    StepMix,
    decode_budgets,
    decode_timing,
    fit_cost_curve,
    fit_overhead,
    gap_factors,
    predict_speedup,
    predict_step_mix,
    shortens_drafts,
    step_mix,
    verification_factor,
)
from specmeter.metrics.records import CostCurve, RunRecord
from specmeter.metrics.speedup import (
    cost_ratio,
    speedup_calibrated,
    speedup_leviathan,
    speedup_measured,
    speedup_seed,
)

__all__ = ["ALL", "analyse_tune", "auto_holdout", "cost_curve_section", "explain_row"]

ALL = "all"  # the scope holding every request; the others are categories
MS = 1000.0


def auto_holdout(ks: Sequence[int]) -> int | None:
    """The k held out by default: the middle of the run k values below the largest (None if there are none).

    The largest k is the source of the predictions, so it cannot be held out; the middle keeps the test
    away from both ends of the range.
    """
    others = sorted(set(ks) - {max(ks)}) if ks else []
    return others[len(others) // 2] if others else None


def _scope(run: RunRecord, scope: str) -> RunRecord:
    return (
        run if scope == ALL else replace(run, requests=tuple(r for r in run.requests if r.category == scope))
    )


def _rel_error(predicted: float | None, measured: float | None) -> float | None:
    return None if predicted is None or measured is None or measured == 0 else predicted / measured - 1.0


def _measured(run: RunRecord, base: RunRecord, curve: CostCurve) -> dict[str, Any]:
    counts = acceptance_counts(run.requests)
    alpha, beta, tau = acceptance_rate(counts), beta_mle(counts), acceptance_length(counts)
    c = cost_ratio(curve)
    mix = step_mix(run.requests)
    e_cal = speedup_calibrated(mix, curve)
    e_meas = speedup_measured(run.requests, base.requests)
    e_dec = speedup_measured(run.requests, base.requests, decode_only=True)
    gap = gap_factors(
        k=run.k, beta=beta, mix=mix, curve=curve, e_cal=e_cal, e_meas=e_meas, e_meas_decode=e_dec
    )
    timing = decode_timing(run.requests, curve)
    return {
        "requests": len(run.requests),
        "acceptance_rate": alpha,
        "beta": beta,
        "acceptance_length": tau,
        "speedup_seed": speedup_seed(alpha, c),
        "speedup_leviathan": speedup_leviathan(beta, run.k, c),
        "speedup_calibrated": e_cal,
        "speedup_measured_decode": e_dec,
        "speedup_measured": e_meas,
        "gap": {
            "short_drafts": gap.short_drafts,
            "iid": gap.iid,
            "verification": gap.verification,
            "engine": gap.engine,
            "prefill": gap.prefill,
        },
        "overhead_share": None if timing is None else timing.overhead_share,
    }


# What _measured() returns; a k that was not run has all of them None.
_MEASURED_KEYS = (
    "requests", "acceptance_rate", "beta", "acceptance_length", "speedup_seed", "speedup_leviathan",
    "speedup_calibrated", "speedup_measured_decode", "speedup_measured", "gap", "overhead_share",
)  # fmt: skip


def _timing_dict(k: int, t: DecodeTiming) -> dict[str, Any]:
    return {
        "k": k,
        "decode_ms": t.decode_s * MS,
        "modelled_ms": t.modelled_s * MS,
        "overhead_share": t.overhead_share,
        "overhead_per_forward_ms": None
        if t.overhead_per_forward_s is None
        else t.overhead_per_forward_s * MS,
        "drafted_per_forward": t.drafted_per_forward,
        "forwards": t.forwards,
    }


def cost_curve_section(curve: CostCurve) -> dict[str, Any]:
    """The measured cost curve with its spread, t_T(n)/t_T(1), and a straight-line summary."""
    fit = fit_cost_curve(curve)
    ns = list(range(1, len(curve.target_s) + 1))
    return {
        "n": ns,
        "target_ms": [t * MS for t in curve.target_s],
        "target_spread_ms": [s * MS for s in curve.target_spread] or None,
        "draft_ms": curve.draft_s * MS,
        "draft_spread_ms": curve.draft_spread * MS,
        "repeats": curve.repeats,
        "cost_ratio": cost_ratio(curve),
        "verification_factor": [verification_factor(curve, n - 1) for n in ns],
        "fit": None
        if fit is None
        else {"intercept_ms": fit.intercept * MS, "per_token_ms": fit.slope * MS, "r2": fit.r2},
    }


def _best(rows: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    scored = [(r[key], r["k"]) for r in rows if r.get(key) is not None]
    if not scored:
        return None
    value, k = max(scored)
    return {"k": k, key: value, "pays_off": value >= 1.0}


def _scope_rows(
    scope: str,
    baseline: RunRecord,
    runs: dict[int, RunRecord],
    curve: CostCurve,
    k_max: int,
    source: int,
    holdout: int | None,
    overhead: LineFit | None,
    mixes: dict[int, StepMix | None],
) -> list[dict[str, Any]]:
    """The rows of one scope; ``mixes`` receives the predicted step mix per k (for combining scopes)."""
    base = _scope(baseline, scope)
    src = _scope(runs[source], scope)
    conditional = [p.conditional for p in per_position_acceptance(src.requests, positions=source)]
    # Decode lengths come from the baseline (the same prompts, every k); whether the engine shortens
    # drafts near the limit, from the source run.
    budgets = decode_budgets(base.requests, shortens_drafts(runs[source].requests, source))
    base_timing = decode_timing(base.requests, curve)
    u_base = None if base_timing is None else base_timing.seconds_per_token
    rows = []
    for k in range(1, k_max + 1):
        mix = predict_step_mix(budgets, conditional, k)
        mixes[k] = mix
        row: dict[str, Any] = {"k": k, "run": k in runs, "held_out": k == holdout}
        if k in runs:
            row.update(_measured(_scope(runs[k], scope), base, curve))
        else:
            row.update(dict.fromkeys(_MEASURED_KEYS))
        row["verification_factor"] = verification_factor(curve, k)
        row["acceptance_length_predicted"] = None if mix is None else mix.acceptance_length
        row["speedup_calibrated_predicted"] = speedup_calibrated(mix, curve)
        row["speedup_predicted"] = predict_speedup(mix, curve, overhead, u_base)
        rows.append(row)
    return rows


def _harmonic(weights: Sequence[float], values: Sequence[float | None]) -> float | None:
    """Σw / Σ(w/v): how ratios of totals combine (E = baseline time / spec time)."""
    pairs = [(w, v) for w, v in zip(weights, values, strict=True) if w > 0]
    if not pairs or any(v is None or v <= 0 for _, v in pairs):
        return None
    return sum(w for w, _ in pairs) / sum(w / v for w, v in pairs if v is not None)


def _combine_predictions(
    rows: list[dict[str, Any]],
    by_category: dict[str, list[dict[str, Any]]],
    mixes: dict[str, dict[int, StepMix | None]],
    baseline: RunRecord,
    curve: CostCurve,
) -> None:
    """Predictions for all requests, combined from the categories' own.

    Pooling per-position rates over categories with different acceptance misweights them, because the
    share of steps each category contributes changes with k; the categories' expected steps add up
    instead (τ and E_cal of the sum), and E combines as a ratio of totals weighted by each category's
    baseline decode time.
    """
    times = []
    for category in by_category:
        t = decode_timing(_scope(baseline, category).requests, curve)
        times.append(0.0 if t is None else t.decode_s)
    for i, row in enumerate(rows):
        cats = [r[i] for r in by_category.values()]
        parts = [mixes[category][row["k"]] for category in by_category]
        total: StepMix | None = StepMix()
        for part in parts:
            total = None if total is None or part is None else total + part
        row["acceptance_length_predicted"] = None if total is None else total.acceptance_length
        row["speedup_calibrated_predicted"] = speedup_calibrated(total, curve)
        row["speedup_predicted"] = _harmonic(times, [r["speedup_predicted"] for r in cats])


def _holdout_check(rows: list[dict[str, Any]], holdout: int, source: int) -> dict[str, Any]:
    row = rows[holdout - 1]
    pairs = (
        ("acceptance_length", "acceptance_length_predicted", "acceptance_length"),
        ("speedup_calibrated", "speedup_calibrated_predicted", "speedup_calibrated"),
        ("speedup_measured_decode", "speedup_predicted", "speedup_measured_decode"),
    )
    out: dict[str, Any] = {"k": holdout, "source_k": source}
    for name, predicted, measured in pairs:
        p, m = row[predicted], row[measured]
        out[name] = {"predicted": p, "measured": m, "error": _rel_error(p, m)}
    return out


def analyse_tune(
    baseline: RunRecord,
    runs: Sequence[RunRecord],
    curve: CostCurve,
    *,
    k_max: int,
    holdout: int | None,
) -> dict[str, Any]:
    """The ``tune`` section for ``runs`` (one per k, same draft) against ``baseline``."""
    by_k = {r.k: r for r in runs if r.requests}
    if not by_k:
        return {"k_max": k_max, "k_run": [], "holdout": holdout, "cost_curve": cost_curve_section(curve)}
    if holdout is not None and (holdout not in by_k or holdout == max(by_k)):
        holdout = None
    source = max(k for k in by_k if k != holdout)
    timings = {0: decode_timing(baseline.requests, curve)}
    timings.update({k: decode_timing(r.requests, curve) for k, r in sorted(by_k.items())})
    fitted = [t for k, t in timings.items() if t is not None and k != holdout]
    overhead = fit_overhead(fitted)
    scopes = [ALL, *sorted({r.category for r in baseline.requests})]
    mixes: dict[str, dict[int, StepMix | None]] = {s: {} for s in scopes}
    rows = {
        s: _scope_rows(s, baseline, by_k, curve, k_max, source, holdout, overhead, mixes[s]) for s in scopes
    }
    _combine_predictions(rows[ALL], {s: r for s, r in rows.items() if s != ALL}, mixes, baseline, curve)
    section: dict[str, Any] = {
        "draft": runs[0].draft.name if runs[0].draft is not None else None,
        "k_max": k_max,
        "k_run": sorted(by_k),
        "holdout": holdout,
        "source_k": source,
        "cost_curve": cost_curve_section(curve),
        "overhead": {
            "per_forward_ms": None if overhead is None else overhead.intercept * MS,
            "per_draft_token_ms": None if overhead is None else overhead.slope * MS,
            "r2": None if overhead is None else overhead.r2,
            "fitted_on_k": [k for k, t in timings.items() if t is not None and k != holdout],
            "runs": [_timing_dict(k, t) for k, t in timings.items() if t is not None],
        },
        "by_k": rows,
        "holdout_check": None
        if holdout is None
        else {s: _holdout_check(r, holdout, source) for s, r in rows.items()},
        "best_k": {
            s: {"measured": _best(r, "speedup_measured"), "predicted": _best(r, "speedup_predicted")}
            for s, r in rows.items()
        },
    }
    best = section["best_k"][ALL]["measured"]
    section["explanation"] = None if best is None else explain_row(rows[ALL][best["k"] - 1])
    return section


def explain_row(row: dict[str, Any]) -> list[str]:
    """Plain sentences walking from E_lev to E_meas for one k, one factor each."""
    k, gap = row["k"], row.get("gap") or {}

    def x(value: Any) -> str:
        return "—" if value is None else f"{value:.2f}×"

    lines = [
        f"k={k}: E_lev {x(row.get('speedup_leviathan'))} assumes verifying {k + 1} tokens costs one forward."
    ]
    short = gap.get("short_drafts")
    if short is not None and abs(short - 1.0) > 0.005:
        lines.append(
            f"Steps near the token limit draft fewer than {k} tokens (fewer tokens, cheaper steps): "
            f"×{short:.2f}."
        )
    v = row.get("verification_factor")
    if v is not None and gap.get("verification") is not None:
        lines.append(
            f"Verifying {k + 1} tokens costs {v:.2f} single-token forwards: ×{gap['verification']:.2f} "
            "(verification overhead)."
        )
    if gap.get("iid") is not None:
        lines.append(
            f"Measured τ {row['acceptance_length']:.2f} vs the i.i.d. model's from β: ×{gap['iid']:.2f} "
            f"→ E_cal {x(row.get('speedup_calibrated'))}."
        )
    if gap.get("engine") is not None:
        share = row.get("overhead_share")
        where = "" if share is None else f"; {share:.0%} of speculative decode time is outside the forwards"
        lines.append(
            f"Engine overhead (sampling, cache bookkeeping, draft catch-up{where}): "
            f"×{gap['engine']:.2f} → E_meas decode-only {x(row.get('speedup_measured_decode'))}."
        )
    if gap.get("prefill") is not None:
        lines.append(
            f"Prefill and time to first token: ×{gap['prefill']:.2f} "
            f"→ E_meas {x(row.get('speedup_measured'))}."
        )
    return lines
