"""The demo's closing summary: winner per domain, danger-zone pairs, k sweep, ROI and the story's checks.

The checks are the field report's claims restated as measurable goals on the bundled golden sets (greedy,
k=4). They are reported as measured, pass or miss; the definitions are never bent to make one pass.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from specmeter.report.fmt import fmt_ci, fmt_num, fmt_pct


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


def render_summary(summary: dict[str, Any], console: Console) -> None:
    table = Table(title="specmeter demo — draft acceptance α and measured speedup E_meas (greedy, k=4)")
    for col in ("domain", "candidate", "α [95% CI]", "τ", "E_meas [95% CI]", "E_cal", "jitter", "verdict"):
        table.add_column(col)
    for r in summary["rows"]:
        verdict = "[bold red]DANGER[/]" if r["danger_zone"] else "[green]ok[/]"
        table.add_row(
            r["domain"], f"{r['candidate']} {r['draft']}",
            f"{fmt_num(r['alpha'], 3)} {fmt_ci(r['alpha_ci'])}", fmt_num(r["tau"]),
            f"{fmt_num(r['speedup_measured'])}× {fmt_ci(r['speedup_measured_ci'])}",
            f"{fmt_num(r['speedup_calibrated'])}×", fmt_num(r["jitter"]), verdict,
        )  # fmt: skip
    console.print()
    console.print(table)
    for domain, w in summary["winners"].items():
        pays = "pays off" if w["pays_off"] else "does not pay off"
        console.print(
            f"winner on [bold]{domain}[/]: {w['candidate']} {w['draft']} at k={w['k']} — "
            f"E_meas {fmt_num(w['speedup_measured'])}×, α {fmt_num(w['alpha'], 3)}: speculation {pays}"
        )
    for d in summary["danger_zone_pairs"]:
        console.print(
            f"[bold red]danger zone[/] {d['domain']} × {d['candidate']} {d['draft']}: "
            + "; ".join(d["reasons"])
        )
    t = summary.get("tune")
    if t and t.get("best_k"):
        overall = t["best_k"].get("all") or next(iter(t["best_k"].values()))
        best = overall.get("measured") or {}
        if best.get("k") is not None:
            console.print(
                f"k sweep for {t['draft']} on legal: best measured k = {best['k']} "
                f"(E_meas {fmt_num(best.get('speedup_measured'))}×)"
            )
    seed, measured = summary["roi"].get("seed"), summary["roi"].get("measured")
    for label, r in (("field report's 2.5×", seed), ("measured legal winner", measured)):
        if r:
            console.print(
                f"ROI with {label} ({fmt_num(r['speedup'])}×, instance price ×1.75): monthly cost "
                f"{fmt_pct(-(r['savings_fraction'] or 0))}, payback {fmt_num(r['payback_months'], 1)} months"
            )
    console.print("\nchecks of the field report's story:")
    for c in summary["checks"]:
        mark = {True: "[green]pass[/]", False: "[red]miss[/]", None: "[yellow]n/a[/]"}[c["passed"]]
        value = "" if c["measured"] is None else f" (measured {fmt_num(c['measured'], 3)})"
        console.print(f"  {mark}  {c['check']}{value}")
