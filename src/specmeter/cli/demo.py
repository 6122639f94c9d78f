"""``specmeter demo``: the field report's story, measured on the bundled models.

A target that knows everyday and contract text, two general drafts (A: a tenth of its size, B: a fiftieth)
and a draft distilled from the target on legal text (C). The demo checks that the drafts can serve the
target, benches A, B and C against the target on the held-out general and legal golden sets (greedy, k=4),
sweeps k for the best legal draft, prices the result with the field report's ROI inputs, and writes JSON,
CSV, per-request logs and HTML reports to one directory, ending with the winner per domain and the
pairs in the danger zone.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from specmeter.cli.common import RichReporter, console, end, fail, measure_errors, resolve_store

if TYPE_CHECKING:
    from specmeter.measuring.config import MeasureConfig

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


def _compat(target: Path, drafts: list[Path]) -> list[dict[str, Any]]:
    from specmeter.modeldir import inspect_model
    from specmeter.selection.compat import check_compat

    t = inspect_model(target)
    return [check_compat(t, inspect_model(d)).to_dict() for d in drafts]


def _bench(cfg: MeasureConfig, out: Path, name: str) -> tuple[dict[str, Any], dict[str, list[int]]]:
    from specmeter.measuring.run import close, run_candidates
    from specmeter.report.html import render_report, write_report

    m = run_candidates(cfg, RichReporter())
    outcome = close(m)
    write_report(
        out / f"report-{name}.html",
        render_report(outcome.result, records=m.records(), source=str(cfg.json_out)),
    )
    end(outcome)
    matched = {
        c.draft.info.name: [sum(bool(r.matches_baseline) for r in recs), len(recs)]
        for c, recs in ((c, m.state.per_candidate.get(i, [])) for i, c in enumerate(m.state.candidates))
    }
    return outcome.result, matched


def _rows(domain: str, result: dict[str, Any], matched: dict[str, list[int]]) -> list[dict[str, Any]]:
    from specmeter.engine.bundled import CANDIDATE_LETTER

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
    from specmeter.economics.roi import RoiInputs, compute_roi

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


def demo(
    out: Path = typer.Option(Path("specmeter-demo"), "--out", help="Directory for all results."),
    quick: bool = typer.Option(False, "--quick", help="A smoke run: few prompts, short outputs (< 2 min)."),
    store: Path | None = typer.Option(
        None, "--store", help="Run store (default: $SPECMETER_STORE or data dir)."
    ),
    no_store: bool = typer.Option(False, "--no-store", help="Do not record the runs in the run store."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads for torch (default: torch's)."),
    models: Path | None = typer.Option(
        None,
        "--models",
        help="Directory with target/ draft-general/ draft-tiny/ draft-legal/ (default: bundled).",
    ),
) -> None:
    """The field report on bundled models: compat, bench of A/B/C on general and legal, k sweep, ROI."""
    import json

    from specmeter.cli.demo_summary import render_summary, summarize_demo
    from specmeter.engine.bundled import DRAFTS, TARGET, bundled_model, missing_models
    from specmeter.measuring.config import MeasureConfig
    from specmeter.measuring.tune import run_tune
    from specmeter.report.files import write_json_atomic
    from specmeter.workloads import bundled_prompts

    missing = missing_models(models)
    if missing:
        where = f"in {models}" if models else "(bundled); rebuild them with `make models`"
        fail(f"demo models missing: {', '.join(missing)} {where}")
    out.mkdir(parents=True, exist_ok=True)
    target, drafts = bundled_model(TARGET, models), [bundled_model(d, models) for d in DRAFTS]
    run_store = resolve_store(store, no_store)

    compat = _compat(target, drafts)
    write_json_atomic(out / "compat.json", {"schema_version": 1, "kind": "compat", "pairs": compat})
    for d, c in zip(DRAFTS, compat, strict=True):
        params = c["draft"]["params"]
        size = f"{params / 1e6:.2f}M params" if params else "size unknown"
        console.print(f"compat  {d:<14} {size:<14} {c['verdict']}")

    results: dict[str, dict[str, Any]] = {}
    matches: dict[str, dict[str, list[int]]] = {}
    for domain in ("general", "legal"):
        console.print(f"\n[bold]bench[/] {domain} golden set: baseline, A, B, C (greedy, k=4)")
        with measure_errors():
            cfg = MeasureConfig(
                target=target, drafts=drafts, prompts=bundled_prompts(domain), k=[4],
                max_tokens=32 if quick else 64, limit=8 if quick else None,
                json_out=out / f"{domain}.json", csv_out=out / f"{domain}.csv",
                log_out=out / f"{domain}.jsonl",
                cost_repeats=3 if quick else 9, kind="demo", store=run_store, threads=threads,
                extra={"domain": domain},
            )  # fmt: skip
            results[domain], matches[domain] = _bench(cfg, out, domain)

    rows = [row for d, r in results.items() for row in _rows(d, r, matches[d])]
    legal = [r for r in rows if r["domain"] == "legal" and r["speedup_measured"] is not None]
    best_legal = max(legal, key=lambda r: r["speedup_measured"]) if legal else None
    tune_result = None
    if best_legal is not None:
        console.print(f"\n[bold]tune[/] k sweep for {best_legal['draft']} on legal text")
        ks = [1, 2, 3] if quick else [1, 2, 3, 4, 6, 8]
        with measure_errors():
            cfg = MeasureConfig(
                target=target, drafts=[bundled_model(best_legal["draft"], models)],
                prompts=bundled_prompts("legal"),
                k=ks, max_tokens=32 if quick else 64, limit=6 if quick else 40,
                json_out=out / "tune-legal.json", cost_repeats=3 if quick else 9, kind="tune",
                store=run_store, threads=threads,
            )  # fmt: skip
            outcome = run_tune(cfg, RichReporter(quiet=True), k_max=max(ks), holdout=None if quick else 3)
        end(outcome)
        tune_result = outcome.result
    roi = _roi(best_legal["speedup_measured"] if best_legal else None)
    write_json_atomic(out / "roi.json", roi)
    summary = summarize_demo(rows, results, tune_result, roi, quick=quick)
    runs = {**results, **({"tune-legal": tune_result} if tune_result else {})}
    summary["machine"] = {name: (r.get("hygiene") or {}).get("verdict") for name, r in runs.items()}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    render_summary(summary, console)
    for name, r in runs.items():  # the bottom line of a busy demo: which of its runs to distrust
        message = (r.get("hygiene") or {}).get("message")
        if message:
            console.print(f"[bold yellow]⚠ {name}: {escape(message)}[/]", soft_wrap=True)
    console.print(
        f"\nEverything is in [bold]{out}/[/]: summary.json, compat.json, general/legal .json .csv .jsonl, "
        "report-general.html, report-legal.html, tune-legal.json, roi.json.",
        soft_wrap=True,
    )
