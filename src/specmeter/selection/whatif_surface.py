"""What an acceptance rate would buy: reading the measured surface E(α, k, B) of ``specmeter whatif``.

``whatif`` measures E at a grid of forced acceptance rates (``measuring.whatif_run``); this module answers the
questions asked of that grid, from the ``whatif`` section of the result JSON (docs/results.md) alone:

* ``surface_e(section, α, k, B)``: E at any α between measured ones — linear in α between the two
  neighbouring grid points at the same k and B. Linear is the right shape: with full drafts τ = 1 + k·α
  whatever the per-position profile (``metrics.synthetic``), and a speculative step's cost does not depend
  on what was accepted, so E(α) at fixed k and B is close to a straight line (tested on the measurements).
  Outside the grid it extrapolates from the two nearest points and says so.
* ``break_even``: the α at which E crosses 1, per (k, B), and per B for the best k.
* ``best_k``: the k with the highest E per (α, B), 0 (no speculation) when none reaches 1.
* ``spread_prediction``: E at α for a workload whose requests differ — the surface's reading times the
  factor by which per-request spread changes E in waves of B (see its docstring; docs/metrics.md, "What
  if").
* ``overlay``: domains measured for real (a ``bench``/``select`` result, a ``monitor --requests`` window)
  placed on the surface: "legal today α 0.02 with draft-general: 0.62× measured, 0.60× on the surface; at
  α 0.65: 1.9× at B = 1, 1.2× at B = 8".

Plain JSON in and out; no torch.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from specmeter.metrics.acceptance import (
    acceptance_counts,
    acceptance_length,
    acceptance_rate,
    per_position_acceptance,
)
from specmeter.metrics.batch_surface import CostSurface, SurfacePoint, predict_speedup_waves
from specmeter.metrics.latency import decode_tokens_per_second, tokens_per_second
from specmeter.metrics.records import RequestRecord
from specmeter.metrics.slo import wilson_interval
from specmeter.metrics.speedup import pair_latencies, speedup_measured
from specmeter.metrics.stats import bootstrap_ratio_ci, paired_speedup_ci
from specmeter.metrics.synthetic import SyntheticProfile, draw_requests, geometric_profile, request_steps
from specmeter.pricing.whatif import measured_cells, surface_e

__all__ = [
    "alpha_for_speedup",
    "baseline_summary",
    "best_k",
    "break_even",
    "cell_summary",
    "describe_overlay",
    "overlay",
    "overlay_points",
    "speedup_at",
    "spread_prediction",
    "surface_e",
]

MS = 1000.0
_BATCH1_KINDS = ("bench", "select", "tune", "demo", "replay")  # replay: acceptance only, its E is null


def _ci(interval: tuple[float, float] | None) -> list[float] | None:
    return None if interval is None else [interval[0], interval[1]]


def baseline_summary(records: Sequence[RequestRecord]) -> dict[str, Any]:
    """The baseline at one batch size: requests, tokens, end-to-end and decode throughput per sequence."""
    return {
        "requests": len(records),
        "tokens": sum(r.output_tokens for r in records),
        "tokens_per_s": tokens_per_second(records),
        "decode_tokens_per_s": decode_tokens_per_second(records),
        "latency_ms": sum(r.latency_s for r in records) / len(records) * MS if records else None,
    }


def cell_summary(
    profile: SyntheticProfile, records: Sequence[RequestRecord], baseline: Sequence[RequestRecord]
) -> dict[str, Any]:
    """One (α, k) at one batch size: E against the baseline at that B, and the acceptance really drawn.

    ``e`` is E_meas = Σ baseline latency / Σ synthetic latency over paired requests (end to end, as
    ``bench``), ``e_decode`` the same over latency − TTFT; both with paired bootstrap intervals from 10
    requests. ``measured_alpha``/``measured_tau`` come from the records (short drafts before the token
    limit included, so α runs slightly above the requested full-draft α). Per position, the conditional rate
    drawn is accepted / reached with a Wilson interval: synthetic draws are independent Bernoulli trials, so
    a binomial interval is exact here (unlike for a real draft, whose steps within a request are not).
    """
    counts = acceptance_counts(records)
    per_request = [acceptance_counts([r]) for r in records]
    positions = []
    for p, wanted in zip(
        per_position_acceptance(records, positions=profile.k), profile.conditional, strict=True
    ):
        positions.append({
            "position": p.position, "requested": wanted, "measured": p.conditional,
            "accepted": p.accepted, "reached": p.reached, "ci": _ci(wilson_interval(p.accepted, p.reached)),
        })  # fmt: skip
    base_e2e, spec_e2e = pair_latencies(records, baseline)
    base_dec, spec_dec = pair_latencies(records, baseline, decode_only=True)
    return {
        "alpha": profile.alpha,
        "k": profile.k,
        "profile": profile.profile,
        "beta": profile.beta,
        "rates": list(profile.rates),
        "requests": len(records),
        "tokens": sum(r.output_tokens for r in records),
        "measured_alpha": acceptance_rate(counts),
        "measured_alpha_ci": _ci(
            bootstrap_ratio_ci([c.accepted for c in per_request], [c.drafted for c in per_request])
        ),
        "measured_tau": acceptance_length(counts),
        "requested_tau": profile.tau,
        "per_position": positions,
        "e": speedup_measured(records, baseline),
        "e_ci": _ci(paired_speedup_ci(base_e2e, spec_e2e)),
        "e_decode": speedup_measured(records, baseline, decode_only=True),
        "e_decode_ci": _ci(paired_speedup_ci(base_dec, spec_dec)),
        "decode_tokens_per_s": decode_tokens_per_second(records),
    }


Cell = Mapping[str, Any]


def _step_costs(section: Mapping[str, Any], alpha: float, k: int) -> CostSurface | None:
    """t_step(B, 0) and t_step(B, k) per measured B, from the section alone: a plain step's time is the
    baseline's decode time per token; a speculative step's is the time per token of the cell nearest α
    times its tokens per step (τ)."""
    points = []
    for base in section.get("baselines") or []:
        b, tps = base.get("batch"), base.get("decode_tokens_per_s")
        cells = [
            c for c in section.get("cells") or []
            if c.get("batch") == b and c.get("k") == k and c.get("decode_tokens_per_s")
            and c.get("measured_tau")
        ]  # fmt: skip
        if not tps or not cells:
            continue
        cell = min(cells, key=lambda c: abs(float(c["alpha"]) - alpha))
        spec = float(cell["measured_tau"]) / float(cell["decode_tokens_per_s"])
        for kk, step in ((0, 1.0 / float(tps)), (k, spec)):
            points.append(SurfacePoint(int(b), kk, step, 0.0, step, 0.0, 1))
    return CostSurface(tuple(points)) if points else None


def _waves(requests: Sequence[Sequence[int]], batch: int) -> list[list[list[int]]]:
    return [[list(r) for r in requests[i : i + batch]] for i in range(0, len(requests), batch)]


def spread_prediction(
    section: Mapping[str, Any],
    alpha: float,
    k: int,
    batch: int,
    requests: Sequence[tuple[float, int]],
    *,
    tokens: int,
    draws: int = 2000,
    seed: int = 0,
) -> dict[str, Any] | None:
    """E at α, k, B for a workload whose requests differ: the surface's E times a spread factor.

    The surface's cells force one α on every request, each running to ``tokens`` (EOS ignored). The
    workload is given as measured per-request (α_i, decode tokens_i) pairs — a real run's requests.
    ``draws`` requests are drawn from them (``metrics.synthetic.draw_requests``), each decodes with the
    geometric profile at its own α_i (``request_steps``), in waves of B as they come; as many run at one
    α — the pooled A/D the draws realised, so both arms yield the same tokens per step on average — and
    at ``tokens`` each, as the cells did. Both arms are priced with the step costs the section measured
    (t_step(B, 0), t_step(B, k) at every measured B, linear in between: ``metrics.batch_surface``'s wave
    prediction), as Σ per-request decode time, the quantity E_meas divides. ``factor`` =
    E(spread) / E(uniform); ``e`` = surface_e × factor. At B = 1 the factor is close to 1 (a request's
    time is its steps); at B > 1 easy rows leave a wave early and the hard ones decode in a smaller,
    cheaper batch. ``factor_alpha`` is the part of the factor that comes from acceptance alone (the
    spread arm with every request at ``tokens``); ``step_ms`` the step costs used, [B, k, ms]. None
    without the surface's points at (k, B).
    """
    reading = surface_e(section, alpha, k, batch)
    costs = _step_costs(section, alpha, k)
    if reading is None or costs is None or not requests or draws < 1:
        return None
    rng = random.Random(seed)
    drawn = draw_requests(requests, draws, rng)
    profiles: dict[float, SyntheticProfile] = {}
    for a in {a for a, _ in drawn}:
        profiles[a] = geometric_profile(a, k)
    spread = [request_steps(profiles[a], n, rng) for a, n in drawn]
    fixed = [request_steps(profiles[a], tokens, rng) for a, _ in drawn]

    def pooled(runs: Sequence[Sequence[tuple[int, int]]]) -> float:
        drafted = sum(d for steps in runs for d, _ in steps)
        return min(1.0, sum(a for steps in runs for _, a in steps) / drafted) if drafted else 0.0

    def e_of(runs: Sequence[Sequence[tuple[int, int]]], lengths: Sequence[int]) -> float | None:
        spec = _waves([[d for d, _ in steps] for steps in runs], batch)
        base = _waves([[0] * n for n in lengths], batch)
        return predict_speedup_waves(costs, base, spec)

    def e_uniform(at: float) -> float | None:
        profile = geometric_profile(at, k)
        return e_of([request_steps(profile, tokens, rng) for _ in drawn], [tokens] * len(drawn))

    e_spread, e_fixed = e_of(spread, [n for _, n in drawn]), e_of(fixed, [tokens] * len(drawn))
    u_spread, u_fixed = e_uniform(pooled(spread)), e_uniform(pooled(fixed))
    if e_spread is None or e_fixed is None or not u_spread or not u_fixed:
        return None
    factor = e_spread / u_spread
    return {
        "alpha": alpha,
        "k": k,
        "batch": batch,
        "surface_e": reading[0],
        "extrapolated": reading[1],
        "pooled_alpha_drawn": pooled(spread),
        "factor": factor,
        "factor_alpha": e_fixed / u_fixed,
        "e": reading[0] * factor,
        "draws": draws,
        "step_ms": [[p.batch, p.k, p.step_s * MS] for p in costs.points],  # t_step(B, k) the factor used
    }


def speedup_at(
    section: Mapping[str, Any], alpha: float, batch: int, k: int | None = None
) -> tuple[float, int, bool] | None:
    """(E, k, extrapolated) at α and B: with the given k, else the k whose interpolated E is highest."""
    ks = [k] if k is not None else sorted({int(c["k"]) for c in section.get("cells") or []})
    best: tuple[float, int, bool] | None = None
    for kk in ks:
        got = surface_e(section, alpha, kk, batch)
        if got is not None and (best is None or got[0] > best[0]):
            best = (got[0], kk, got[1])
    return best


def alpha_for_speedup(
    section: Mapping[str, Any], speedup: float, batch: int, k: int | None = None, *, step: float = 0.001
) -> tuple[float, int, bool] | None:
    """The smallest α in [0, 1] whose E (at k, or the best k) reaches ``speedup`` at B: (α, k, extrapolated).

    Scanned in steps of 0.001 along the piecewise-linear surface; None when even α = 1 falls short.
    """
    n = round(1.0 / step)
    for i in range(n + 1):
        alpha = i / n
        got = speedup_at(section, alpha, batch, k)
        if got is not None and got[0] >= speedup:
            return alpha, got[1], got[2]
    return None


def _crossing(pts: Sequence[tuple[float, float]], level: float = 1.0) -> float | None:
    """The smallest α where the piecewise-linear E(α) reaches ``level`` from below; None if it never does."""
    if pts and pts[0][1] >= level:
        return pts[0][0]
    for (a0, e0), (a1, e1) in itertools.pairwise(pts):
        if e0 < level <= e1:
            return a0 + (level - e0) * (a1 - a0) / (e1 - e0)
    return None


def break_even(section: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The α where E = 1: per (k, B), and per B with the best k (the lowest α any k breaks even at).

    ``where`` says how to read it: "inside" (E crosses 1 between two measured α), "below" (E ≥ 1 already at
    the smallest α measured: the break-even lies at or below it) or "above" (E < 1 at every α measured).
    """
    ks = sorted({int(c["k"]) for c in section.get("cells") or []})
    batches = sorted({int(c["batch"]) for c in section.get("cells") or []})
    per: list[dict[str, Any]] = []
    for b in batches:
        for k in ks:
            pts = measured_cells(section, k, b)
            if not pts:
                continue
            alpha = _crossing(pts)
            if alpha is None:
                where = "above"
            elif pts[0][1] >= 1.0:
                where = "below"
            else:
                where = "inside"
            per.append({"batch": b, "k": k, "alpha": alpha, "where": where,
                        "measured": [pts[0][0], pts[-1][0]]})  # fmt: skip
    best = []
    for b in batches:
        rows = [r for r in per if r["batch"] == b and r["alpha"] is not None]
        if rows:
            r = min(rows, key=lambda r: r["alpha"])
            best.append({"batch": b, "alpha": r["alpha"], "k": r["k"], "where": r["where"]})
        else:
            best.append({"batch": b, "alpha": None, "k": None, "where": "above"})
    return {"per_k": per, "best": best}


def best_k(section: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per measured (α, B): the k with the highest E, or k = 0 when no k reaches E = 1."""
    cells = [c for c in section.get("cells") or [] if c.get("e") is not None]
    out = []
    for alpha in sorted({float(c["alpha"]) for c in cells}):
        for b in sorted({int(c["batch"]) for c in cells}):
            here = [c for c in cells if abs(float(c["alpha"]) - alpha) < 1e-9 and c["batch"] == b]
            if not here:
                continue
            top = max(here, key=lambda c: float(c["e"]))
            pays = float(top["e"]) >= 1.0
            out.append({"alpha": alpha, "batch": b, "k": int(top["k"]) if pays else 0,
                        "e": float(top["e"]) if pays else 1.0,
                        "best_speculative_e": float(top["e"])})  # fmt: skip
    return out


def overlay_points(result: Mapping[str, Any], source: str) -> list[dict[str, Any]]:
    """The real (domain, draft, k, α, E_meas) points of a bench/select/tune result or a monitor window.

    bench-like results give one point per candidate for the whole run (named after the run's domain, or
    its prompts file) with its categories nested under ``categories`` (E_meas at batch 1 each); a ``monitor
    --requests`` result one point per domain (and tenant) window, without an E.
    """
    points: list[dict[str, Any]] = []
    # load/sweep results have candidates too, measured under load: their E is not a batch-1 E_meas.
    candidates = result.get("candidates") if result.get("kind") in _BATCH1_KINDS else None
    config = (result.get("run") or {}).get("config") or {}
    files = config.get("prompts") or "all"  # one golden set's path, or several (combined)
    stems = "+".join(Path(str(f)).stem for f in (files if isinstance(files, list) else [files]))
    whole = str(config.get("domain") or stems)
    for c in candidates or []:
        draft, k = c.get("draft"), c.get("k")
        if not isinstance(k, int):
            continue

        categories = [
            q
            for name, summary in (c.get("by_category") or {}).items()
            if (q := _point(source, str(name), draft, k, summary or {}))
        ]
        overall = _point(source, whole, draft, k, c.get("summary") or {})
        if overall is not None:
            points.append({**overall, "categories": categories})
        else:
            points += categories
    for window in _monitor_windows(result):
        alpha = window.get("acceptance_rate")
        if alpha is not None:
            domain = str(window.get("domain") or "all")
            if window.get("tenant"):
                domain = f"{window['tenant']}/{domain}"
            points.append({"source": source, "domain": domain, "draft": None, "k": None,
                           "alpha": float(alpha), "measured_e": None,
                           "requests": window.get("requests")})  # fmt: skip
    return points


def _point(source: str, domain: str, draft: Any, k: int, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    alpha = summary.get("acceptance_rate")
    if alpha is None:
        return None
    return {"source": source, "domain": domain, "draft": draft, "k": k, "alpha": float(alpha),
            "measured_e": summary.get("speedup_measured"), "requests": summary.get("requests")}  # fmt: skip


def _monitor_windows(result: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """A ``monitor --requests --json`` result's windows (one per domain and tenant and interval): the
    latest of each domain and tenant. They carry no k: the overlay reads them at the surface's largest k."""
    last: dict[tuple[Any, Any], Mapping[str, Any]] = {}
    for w in result.get("windows") or []:
        if isinstance(w, Mapping) and "domain" in w:
            last[(w.get("tenant"), w.get("domain"))] = w
    return last.values()


def overlay(
    section: Mapping[str, Any], points: Sequence[Mapping[str, Any]], *, at_alpha: float | None = None
) -> list[dict[str, Any]]:
    """Each real point on the surface at its own α and k, at every measured B (and at ``at_alpha`` too).

    A point whose k was not measured is placed at the measured k nearest to it and says so (``k_used``).
    """
    ks = sorted({int(c["k"]) for c in section.get("cells") or []})
    batches = sorted({int(c["batch"]) for c in section.get("cells") or []})
    out = []
    for p in points:
        if not ks:
            break
        measured_k = p.get("k")
        k_real: int = measured_k if isinstance(measured_k, int) else ks[-1]
        k = min(ks, key=lambda x: (abs(x - k_real), x))
        row: dict[str, Any] = {**p, "k_used": k, "surface": _read(section, float(p["alpha"]), k, batches)}
        row["at"] = (
            None if at_alpha is None else {"alpha": at_alpha, "surface": _read(section, at_alpha, k, batches)}
        )
        if p.get("categories"):
            row["categories"] = overlay(section, p["categories"])
        out.append(row)
    return out


def _read(section: Mapping[str, Any], alpha: float, k: int, batches: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    for b in batches:
        e = surface_e(section, alpha, k, b)
        rows.append(
            {"batch": b, "e": None if e is None else e[0], "extrapolated": None if e is None else e[1]}
        )
    return rows


def _x(e: float | None) -> str:
    return "—" if e is None else f"{e:.2f}×"


def describe_overlay(row: Mapping[str, Any]) -> str:
    """One line: "legal today α 0.02 with draft-general (k=4): 0.62× measured; on the surface 0.60× at
    B=1, 0.55× at B=8; at α 0.65: 1.90× at B=1, 1.20× at B=8"."""
    who = f" with {row['draft']}" if row.get("draft") else ""
    if row.get("k") is None:
        k = f"k unknown, read at k={row['k_used']}"
    else:
        k = f"k={row['k_used']}" + ("" if row["k"] == row["k_used"] else f", measured at k={row['k']}")
    text = f"{row['domain']} today α {float(row['alpha']):.2f}{who} ({k})"
    if row.get("measured_e") is not None:
        text += f": {_x(float(row['measured_e']))} measured at B=1"
    parts = [
        f"{_x(s['e'])} at B={s['batch']}" + ("*" if s.get("extrapolated") else "") for s in row["surface"]
    ]
    text += "; on the surface " + ", ".join(parts)
    at = row.get("at")
    if at:
        parts = [
            f"{_x(s['e'])} at B={s['batch']}" + ("*" if s.get("extrapolated") else "") for s in at["surface"]
        ]
        text += f"; at α {float(at['alpha']):.2f}: " + ", ".join(parts)
    return text
