"""Speculation under load: the cost surface, E(B, k), the best k per batch size and the schedule that follows.

Two sections of the result JSON (docs/results.md, docs/metrics.md "speedup at batch size B"):

* ``tune --batch``: the surface t_step(B, k) measured in the loop's rhythm, the E(B, k) table predicted from
  the per-position acceptance of the tune sweep's source run, the best k per batch size (0 when nothing
  pays), the *crossover* (the smallest batch size from which speculation no longer pays) and the schedule,
  as vLLM's ``num_speculative_tokens_per_batch_size`` and as ``serve --k-schedule``.
* ``bench --batch B``: E_meas at batch B (the golden set in waves of B concurrent sequences, kept at B rows
  until each wave's last request finishes) next to what the surface predicts for those very steps and for
  the steady state, with the relative error.

Plain JSON values only; no torch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from specmeter.engine.schedule import KSchedule
from specmeter.metrics.batch_surface import (
    CostSurface,
    acceptance_length_by_k,
    predict_speedup_batched,
    predict_speedup_recorded,
)
from specmeter.metrics.records import RunRecord
from specmeter.metrics.speedup import pair_latencies, speedup_measured
from specmeter.metrics.stats import paired_speedup_ci

__all__ = ["ASSUMES", "analyse_batch_bench", "analyse_batch_tune", "surface_section"]

MS = 1000.0
ASSUMES = (
    "E(B, k) = τ(k) · t_step(B, 0) / t_step(B, k): a sequence's acceptance does not depend on the batch it "
    "decodes in (each row is verified against its own target distribution), and the batch stays at B"
)


def surface_section(surface: CostSurface) -> dict[str, Any]:
    """Every measured point in milliseconds, with t_T(B, n), t_D(B, 1) and the noisy flag."""
    points = [
        {
            "batch": p.batch,
            "k": p.k,
            "step_ms": p.step_s * MS,
            "draft_ms": p.draft_s * MS,
            "verify_ms": p.verify_s * MS,
            "loop_ms": p.loop_s * MS,
            "step_spread_ms": p.step_spread * MS,
            "steps": p.steps,
            "noisy": p.noisy,
        }
        for p in surface.points
    ]
    per_batch = []
    for b in surface.batches:
        t_t = {str(k + 1): surface.t_target(b, k + 1) for k in surface.ks}
        t_d = surface.t_draft(b)
        per_batch.append(
            {
                "batch": b,
                "target_ms": {n: None if t is None else t * MS for n, t in t_t.items()},
                "draft_ms": None if t_d is None else t_d * MS,
            }
        )
    return {
        "points": points,
        "by_batch": per_batch,
        "rates": list(surface.rates),
        "repeats": surface.repeats,
        "noisy": [[p.batch, p.k] for p in surface.points if p.noisy],
        "timed": "in the loop's rhythm: real batched steps on the workload's prompts, acceptance fixed "
        "at the measured per-position rates (synthetic verification)",
    }


def analyse_batch_tune(
    source: RunRecord,
    surface: CostSurface,
    *,
    k_max: int,
    draft_path: str | None = None,
) -> dict[str, Any]:
    """The ``batch`` part of ``tune --batch``: E(B, k) for every measured B and k = 0 … k_max, the best k per
    B (0 = plain decoding, whenever no k reaches 1.0), the crossover and the schedule."""
    taus = acceptance_length_by_k(source.requests, k_max)
    table = []
    best: dict[int, int] = {}
    for b in surface.batches:
        row: list[dict[str, Any]] = []
        for k in range(k_max + 1):
            e = predict_speedup_batched(surface, b, k, taus.get(k))
            row.append({"k": k, "acceptance_length": taus.get(k), "speedup_predicted": e})
        scored: list[tuple[float, int]] = [
            (float(r["speedup_predicted"]), -int(r["k"])) for r in row if r["speedup_predicted"] is not None
        ]
        value, neg_k = max(scored) if scored else (1.0, 0)  # ties go to the smaller k
        best[b] = -neg_k
        table.append({"batch": b, "by_k": row, "best_k": -neg_k, "best_speedup": value})
    schedule = KSchedule.from_best(best)
    crossover = next((b for b in sorted(best) if best[b] == 0), None)
    config = schedule.vllm_config(model=draft_path)
    return {
        "batches": surface.batches,
        "source_k": source.k,
        "surface": surface_section(surface),
        "table": table,
        "best_k": {str(b): k for b, k in best.items()},
        "crossover_batch": crossover,
        "num_speculative_tokens_per_batch_size": schedule.to_json(),
        "speculative_config": config,
        "serve_k_schedule": json.dumps(schedule.to_json(), separators=(",", ":")),
        "schedule_description": schedule.describe(),
        "assumes": ASSUMES,
    }


def analyse_batch_bench(
    batch: int, baseline: RunRecord, candidates: Sequence[RunRecord], surface: CostSurface
) -> dict[str, Any]:
    """The ``batch`` section of ``bench --batch B``: measured against predicted, per candidate."""
    rows = []
    for run in candidates:
        if not run.requests:
            continue
        base, spec = pair_latencies(run.requests, baseline.requests, decode_only=True)
        measured = speedup_measured(run.requests, baseline.requests, decode_only=True)
        ci = paired_speedup_ci(base, spec)
        tau = acceptance_length_by_k(run.requests, run.k)[run.k]
        steady = waves = None
        if any(p.k > 0 for p in surface.points):  # a model-free method's surface holds plain steps only
            steady = predict_speedup_batched(surface, batch, run.k, tau)
            waves = predict_speedup_recorded(
                surface, [r.steps for r in baseline.requests], [r.steps for r in run.requests]
            )
        rows.append(
            {
                "draft": None if run.draft is None else run.draft.name,
                "k": run.k,
                "acceptance_length": tau,
                "speedup_measured_decode": measured,
                "speedup_measured_decode_ci": None if ci is None else list(ci),
                "speedup_predicted_waves": waves,
                "speedup_predicted": steady,
                "error": None if measured is None or not waves else measured / waves - 1.0,
            }
        )
    return {
        "batch": batch,
        "surface": surface_section(surface),
        "candidates": rows,
        "assumes": ASSUMES,
        "waves": "the golden set in waves of B prompts that start together, the batch kept at B rows by "
        "background requests until the wave's last one finishes (continuous batching's steady state); the "
        "wave prediction prices each request's recorded steps at the surface's t_step(batch, depth)",
    }


# Two k whose measured E differ by less than this share are a tie: the sweep cannot order them.
SWEEP_TIE = 0.03


def schedule_agreement(tune: Mapping[str, Any], batch: Mapping[str, Any]) -> str | None:
    """Whether the batch schedule's k at B = 1 is the sweep's best measured k, and if not, why (issue 37):
    the two figures of each k side by side, and whether the sweep could tell them apart. None when either is
    missing."""
    measured = (((tune.get("best_k") or {}).get("all") or {}).get("measured") or {}).get("k")
    scheduled = (batch.get("best_k") or {}).get("1")
    if measured is None or scheduled is None:
        return None
    if int(measured) == int(scheduled):
        return f"the schedule's k at B=1 ({scheduled}) is the sweep's best measured k"
    rows = {r["k"]: r for r in (tune.get("by_k") or {}).get("all") or []}
    table: Mapping[str, Any] = next((t for t in batch.get("table") or [] if t.get("batch") == 1), {})
    surface = {c["k"]: c.get("speedup_predicted") for c in table.get("by_k") or []}

    def meas(k: int) -> float | None:
        value = (rows.get(k) or {}).get("speedup_measured_decode")
        return float(value) if isinstance(value, int | float) else None

    def x(v: Any) -> str:
        return "—" if v is None else f"{v:.2f}x"

    m_best, m_sched = meas(int(measured)), meas(int(scheduled))
    s_best, s_sched = surface.get(int(measured)), surface.get(int(scheduled))

    if int(scheduled) == 0:
        if m_best is not None and m_best < 1.0:
            return (
                f"the schedule does not speculate at B=1, and the sweep agrees: its best k ({measured}) "
                f"measured {x(m_best)}, below 1"
            )
        return (
            f"the schedule does not speculate at B=1 (at the sweep's best, k={measured}, the surface "
            f"predicts {x(s_best)}), but the sweep measured {x(m_best)} at k={measured}: trust the sweep's "
            "measurement at B=1"
        )
    text = (
        f"the schedule's k at B=1 ({scheduled}) is not the sweep's best measured k ({measured}): the sweep "
        f"measured {x(m_best)} at k={measured} and {x(m_sched)} at k={scheduled}; the surface (timed in the "
        f"batched loop at synthetic acceptance) predicts {x(s_best)} and {x(s_sched)}"
    )
    if m_sched is not None and m_best is not None and m_best > 0 and (m_best - m_sched) / m_best < SWEEP_TIE:
        text += f" — within {SWEEP_TIE:.0%} in the sweep: a tie, either k will do"
    elif m_sched is None:
        text += f" — k={scheduled} was not run in the sweep, so only the surface speaks for it"
    else:
        text += " — trust the sweep's measurement at B=1; the surface's ranking is for larger B"
    return text
