"""The demo: the field report's story, measured on the bundled models.

A target that knows everyday and contract text, two general drafts (A: a tenth of its size, B: a fiftieth)
and a draft distilled from the target on legal text (C). :func:`run_demo` checks that the drafts can serve
the target, benches A, B and C against the target on the held-out general and legal golden sets (greedy,
k=4) through the measuring core, sweeps k for the best legal draft, prices the result with the field
report's ROI inputs, and writes JSON, CSV, per-request logs and HTML reports to one directory; the summary
names the winner per domain, the pairs in the danger zone, and checks the story's claims as measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmeter.bundled.models import CANDIDATE_LETTER, DRAFTS, TARGET, bundled_model
from specmeter.economics.roi import RoiInputs, compute_roi
from specmeter.measuring.config import MeasureConfig
from specmeter.measuring.errors import EXIT_OK, MeasureError
from specmeter.measuring.progress import Reporter, Silent
from specmeter.report.files import write_json_atomic

__all__ = ["SEED_ROI", "DemoOutcome", "run_demo", "story_checks", "summarize_demo"]

# The field report's economics: 2.5x on an instance 1.75x the price gives -30% monthly cost. The volume,
# throughput and prices are illustrative inputs with that ratio; only ratios matter for the savings share.
SEED_ROI = {
    "monthly_tokens": 5e10,
    "baseline_throughput": 2500.0,
    "baseline_price": 4.0,
    "spec_price": 7.0,
    "engineering_cost": 40000.0,
    "seed_speedup": 2.5,
}


@dataclass(frozen=True)
class DemoOutcome:
    """The summary (also in ``summary.json``; None when interrupted), the exit code to end with, and each
    run's result by name (``general``, ``legal``, ``tune-legal``)."""

    summary: dict[str, Any] | None
    exit_code: int
    runs: dict[str, dict[str, Any]]


def _compat(target: Path, drafts: list[Path]) -> list[dict[str, Any]]:
    from specmeter.modeldir import ModelDirError, inspect_model
    from specmeter.selection.compat import check_compat

    try:
        t = inspect_model(target)
        return [check_compat(t, inspect_model(d)).to_dict() for d in drafts]
    except ModelDirError as e:
        raise MeasureError(str(e)) from None


def _bench(cfg: MeasureConfig, out: Path, name: str, reporter: Reporter) -> tuple[dict[str, Any], Any, int]:
    from specmeter.measuring.run import close, run_candidates
    from specmeter.report.html import render_report, write_report

    m = run_candidates(cfg, reporter)
    outcome = close(m)
    report = render_report(outcome.result, records=m.records(), source=str(cfg.json_out))
    write_report(out / f"report-{name}.html", report)
    matched = {
        c.draft.info.name: [sum(bool(r.matches_baseline) for r in recs), len(recs)]
        for c, recs in ((c, m.state.per_candidate.get(i, [])) for i, c in enumerate(m.state.candidates))
    }
    return outcome.result, matched, outcome.exit_code


def _rows(domain: str, result: dict[str, Any], matched: dict[str, list[int]]) -> list[dict[str, Any]]:
    rows = []
    for c in result["candidates"]:
        s = c["summary"]
        rows.append(
            {
                "domain": domain,
                "draft": c["draft"],
                "candidate": CANDIDATE_LETTER.get(c["draft"], "?"),
                "k": c["k"],
                "alpha": s["acceptance_rate"],
                "alpha_ci": s["acceptance_rate_ci"],
                "drafted_tokens": s["drafted_tokens"],
                "tau": s["acceptance_length"],
                "speedup_measured": s["speedup_measured"],
                "speedup_measured_ci": s["speedup_measured_ci"],
                "speedup_calibrated": s["speedup_calibrated"],
                "jitter": s["jitter"],
                "danger_zone": s["danger_zone"],
                "danger_reasons": s["danger_reasons"],
                "outputs_matched": matched.get(c["draft"]),
            }
        )
    return rows


def _roi(speedup: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {"inputs": dict(SEED_ROI)}
    for label, e in (("seed", SEED_ROI["seed_speedup"]), ("measured", speedup)):
        if e is None or e <= 0:
            out[label] = None
            continue
        r = compute_roi(
            RoiInputs(
                monthly_tokens=SEED_ROI["monthly_tokens"],
                baseline_throughput=SEED_ROI["baseline_throughput"],
                baseline_price=SEED_ROI["baseline_price"],
                spec_price=SEED_ROI["spec_price"],
                speedup=e,
                engineering_cost=SEED_ROI["engineering_cost"],
            )
        )
        out[label] = {
            "speedup": e,
            "cost_before": r.cost_before,
            "cost_after": r.cost_after,
            "monthly_savings": r.monthly_savings,
            "savings_fraction": r.savings_fraction,
            "roi": r.roi,
            "payback_months": r.payback_months,
        }
    return out


def run_demo(
    out: Path,
    reporter: Reporter,
    *,
    quick: bool = False,
    store: Path | None = None,
    threads: int | None = None,
    models: Path | None = None,
) -> DemoOutcome:
    """Every stage of the demo into ``out``; models from ``models`` (default: the bundled ones)."""
    from specmeter.measuring.tune import run_tune
    from specmeter.workloads import bundled_prompts

    if out.exists() and not out.is_dir():
        raise MeasureError(f"--out: {out} is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    target, drafts = bundled_model(TARGET, models), [bundled_model(d, models) for d in DRAFTS]

    compat = _compat(target, drafts)
    write_json_atomic(out / "compat.json", {"schema_version": 1, "kind": "compat", "pairs": compat})
    for d, c in zip(DRAFTS, compat, strict=True):
        params = c["draft"]["params"]
        size = f"{params / 1e6:.2f}M params" if params else "size unknown"
        reporter.note(f"compat  {d:<14} {size:<14} {c['verdict']}")

    results: dict[str, dict[str, Any]] = {}
    matches: dict[str, dict[str, list[int]]] = {}
    for domain in ("general", "legal"):
        reporter.note(f"\nbench {domain} golden set: baseline, A, B, C (greedy, k=4)")
        cfg = MeasureConfig(
            target=target, drafts=drafts, prompts=bundled_prompts(domain), k=[4],
            max_tokens=32 if quick else 64, limit=8 if quick else None,
            json_out=out / f"{domain}.json", csv_out=out / f"{domain}.csv", log_out=out / f"{domain}.jsonl",
            cost_repeats=3 if quick else 9, kind="demo", store=store, threads=threads,
            extra={"domain": domain},
        )  # fmt: skip
        results[domain], matches[domain], code = _bench(cfg, out, domain, reporter)
        if code != EXIT_OK:
            return DemoOutcome(None, code, results)

    rows = [row for d, r in results.items() for row in _rows(d, r, matches[d])]
    legal = [r for r in rows if r["domain"] == "legal" and r["speedup_measured"] is not None]
    best_legal = max(legal, key=lambda r: r["speedup_measured"]) if legal else None
    tune_result = None
    if best_legal is not None:
        reporter.note(f"\ntune k sweep for {best_legal['draft']} on legal text")
        ks = [1, 2, 3] if quick else [1, 2, 3, 4, 6, 8]
        cfg = MeasureConfig(
            target=target, drafts=[bundled_model(best_legal["draft"], models)],
            prompts=bundled_prompts("legal"), k=ks, max_tokens=32 if quick else 64, limit=6 if quick else 40,
            json_out=out / "tune-legal.json",
            cost_repeats=3 if quick else 9, kind="tune", store=store, threads=threads,
        )  # fmt: skip
        quiet = Silent()  # the sweep runs without a bar; an interruption still reaches the user
        tuned = run_tune(cfg, quiet, k_max=max(ks), holdout=None if quick else 3)
        for line in quiet.warnings:
            reporter.warn(line)
        if tuned.exit_code != EXIT_OK:
            return DemoOutcome(None, tuned.exit_code, results)
        tune_result = tuned.result
    roi = _roi(best_legal["speedup_measured"] if best_legal else None)
    write_json_atomic(out / "roi.json", roi)
    summary = summarize_demo(rows, results, tune_result, roi, quick=quick)
    runs = {**results, **({"tune-legal": tune_result} if tune_result else {})}
    # How quiet the machine was during each run (the hygiene section of its result).
    summary["machine"] = {name: (r.get("hygiene") or {}).get("verdict") for name, r in runs.items()}
    write_json_atomic(out / "summary.json", summary)
    return DemoOutcome(summary, EXIT_OK, runs)


def _row(rows: list[dict[str, Any]], domain: str, draft: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["domain"] == domain and r["draft"] == draft), None)


def _check(name: str, value: float | None, ok: bool | None) -> dict[str, Any]:
    return {"check": name, "measured": value, "passed": ok}


def story_checks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    a_legal, b_legal = _row(rows, "legal", "draft-general"), _row(rows, "legal", "draft-tiny")
    c_legal, a_general = _row(rows, "legal", "draft-legal"), _row(rows, "general", "draft-general")
    checks: list[dict[str, Any]] = []
    alpha_c = c_legal["alpha"] if c_legal else None
    alpha_a = a_legal["alpha"] if a_legal else None
    checks.append(_check("legal: α(C) ≥ 0.60", alpha_c, None if alpha_c is None else alpha_c >= 0.60))
    gap = None if alpha_c is None or alpha_a is None else alpha_c - alpha_a
    checks.append(_check("legal: α(C) ≥ α(A) + 0.20", gap, None if gap is None else gap >= 0.20))
    for label, r in (("A", a_legal), ("B", b_legal)):
        checks.append(
            _check(f"legal: {label} in the danger zone", None, None if r is None else r["danger_zone"])
        )
    alpha_ag = a_general["alpha"] if a_general else None
    checks.append(_check("general: α(A) ≥ 0.60", alpha_ag, None if alpha_ag is None else alpha_ag >= 0.60))
    legal = [r["speedup_measured"] for r in rows if r["domain"] == "legal" and r["speedup_measured"]]
    best = max(legal) if legal else None
    checks.append(_check("legal: best E_meas ≥ 1.3x", best, None if best is None else best >= 1.3))
    matched = [r["outputs_matched"] for r in rows if r.get("outputs_matched") is not None]
    lossless = all(m[0] == m[1] for m in matched) if matched else None
    share = sum(m[0] for m in matched) / sum(m[1] for m in matched) if matched else None
    checks.append(_check("greedy outputs equal target-only outputs", share, lossless))
    return checks


def summarize_demo(
    rows: list[dict[str, Any]],
    results: dict[str, dict[str, Any]],
    tune: dict[str, Any] | None,
    roi: dict[str, Any],
    *,
    quick: bool,
) -> dict[str, Any]:
    winners = {}
    for domain in results:
        candidates = [r for r in rows if r["domain"] == domain and r["speedup_measured"] is not None]
        if candidates:
            best = max(candidates, key=lambda r: r["speedup_measured"])
            winners[domain] = {"draft": best["draft"], "candidate": best["candidate"], "k": best["k"],
                               "speedup_measured": best["speedup_measured"], "alpha": best["alpha"],
                               "pays_off": best["speedup_measured"] >= 1.0}  # fmt: skip
    danger = [
        {
            "domain": r["domain"],
            "draft": r["draft"],
            "candidate": r["candidate"],
            "reasons": r["danger_reasons"],
        }
        for r in rows
        if r["danger_zone"]
    ]
    section = (tune or {}).get("tune") or {}
    return {
        "schema_version": 1,
        "kind": "demo-summary",
        "quick": quick,
        "rows": rows,
        "winners": winners,
        "danger_zone_pairs": danger,
        "tune": None
        if not section
        else {
            "draft": section.get("draft"),
            "k_run": section.get("k_run"),
            "best_k": section.get("best_k"),
            "by_k": section.get("by_k"),
        },
        "roi": roi,
        "checks": story_checks(rows),
    }
