"""The console view of ``specmeter demo``: the closing summary of :func:`specmeter.bundled.demo.run_demo`
(per-domain α and E_meas, winners, danger zones, the k sweep, where speculation stops paying under
batching, ROI, the story checks) and which of its runs the machine was busy during."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from specmeter.economics.view_roi import payback_cell
from specmeter.report.fmt import fmt_bytes, fmt_ci, fmt_num, fmt_pct, fmt_speedup
from specmeter.report.view import hygiene_line

__all__ = ["print_machine", "render_load", "render_methods", "render_summary"]


def print_machine(runs: dict[str, dict[str, Any]], console: Console) -> None:
    """One line per run the machine was busy or unusable during (``report.view.hygiene_line``), named:
    printed above and below the summary, like ``framed_by_hygiene`` frames one result."""
    for name, r in runs.items():
        line = hygiene_line(r)
        if line is not None:
            console.print(Text(f"⚠ {name}: {r['hygiene']['message']}", style=line.style), soft_wrap=True)


_VERDICTS = {
    "pays": "[green]pays[/]", "slower": "[bold red]DANGER: slower[/]", "unclear": "[yellow]unclear[/]"
}  # fmt: skip


def _verdict(r: dict[str, Any]) -> str:
    """From the speedup and its interval (metrics.summary.judge); the α rule is a warning (``⚠ α``)."""
    label = _VERDICTS.get(str(r.get("verdict")))
    if label is None:
        label = "[bold red]DANGER[/]" if r["danger_zone"] else "[green]ok[/]"
    return label + (" [yellow]⚠ α[/]" if r.get("warnings") else "")


def render_summary(summary: dict[str, Any], console: Console) -> None:
    table = Table(title="specmeter demo — draft acceptance α and measured speedup E_meas (greedy, k=4)")
    for col in ("domain", "candidate", "α [95% CI]", "τ", "E_meas [95% CI]", "E_cal", "jitter", "verdict"):
        table.add_column(col)
    for r in summary["rows"]:
        verdict = _verdict(r)
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
    gaps = [
        f"{r['domain']} {r['draft']} {r['speedup_measured'] / r['speedup_calibrated']:.2f}"
        for r in summary["rows"]
        if r.get("speedup_measured") and r.get("speedup_calibrated")
        and r["speedup_measured"] / r["speedup_calibrated"] < 0.95
    ]  # fmt: skip
    if gaps:
        console.print(
            "E_cal prices the forwards and each method's proposing (lookups, heads) and the steps without a "
            "draft; what it does not model is the loop's own time between forwards (sampling, cache "
            "bookkeeping, Python) and prefill. E_meas/E_cal below 0.95: " + ", ".join(gaps),
            soft_wrap=True,
        )
    for r in summary["rows"]:
        for w in r.get("warnings") or []:
            console.print(f"[yellow]⚠[/] {r['domain']} × {r['candidate']} {r['draft']}: {w}", soft_wrap=True)
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
    if summary.get("load"):
        render_load(summary["load"], console)
    seed, measured = summary["roi"].get("seed"), summary["roi"].get("measured")
    for label, r in (("field report's 2.5×", seed), ("measured legal winner", measured)):
        if r:
            console.print(
                f"ROI with {label} ({fmt_num(r['speedup'])}×, instance price ×1.75): monthly cost "
                f"{fmt_pct(-(r['savings_fraction'] or 0))}, payback {payback_cell(r['payback_months'])}"
            )
    if summary.get("methods"):
        render_methods(summary["methods"], console)
    console.print("\nchecks of the field report's story:")
    for c in summary["checks"]:
        mark = {True: "[green]pass[/]", False: "[red]miss[/]", None: "[yellow]n/a[/]"}[c["passed"]]
        value = "" if c["measured"] is None else f" (measured {fmt_num(c['measured'], 3)})"
        console.print(f"  {mark}  {c['check']}{value}")


def render_methods(methods: dict[str, Any], console: Console) -> None:
    """The method × domain table (α, τ, E_meas with intervals, extra memory) and, per domain, the method
    ``select --mix`` would route that domain's traffic to."""
    table = Table(title="methods × domains — drafts and model-free methods (greedy, k=4)")
    for col in ("method", "domain", "α [95% CI]", "τ [95% CI]", "E_meas [95% CI]", "extra memory"):
        table.add_column(col)
    for r in sorted(methods["table"], key=lambda r: (r["method"] == "draft_model", r["draft"], r["domain"])):
        name = r["draft"] if r["method"] != "draft_model" else f"{r['candidate']} {r['draft']}"
        table.add_row(
            escape(name), r["domain"], f"{fmt_num(r['alpha'], 3)} {fmt_ci(r['alpha_ci'])}",
            f"{fmt_num(r['tau'])} {fmt_ci(r.get('tau_ci'))}", _with_ci(r["speedup_measured"],
            r["speedup_measured_ci"], True), fmt_bytes(r.get("extra_memory_bytes")),
        )  # fmt: skip
    console.print()
    console.print(table)
    for domain, pick in (methods.get("by_domain") or {}).items():
        if pick is None:
            console.print(
                f"recommendation for [bold]{domain}[/]: no speculation (nothing beats the target alone)"
            )
        else:
            console.print(
                f"recommendation for [bold]{domain}[/]: {escape(str(pick['draft']))} at k={pick['k']} "
                f"(E_meas {fmt_speedup(pick['speedup_measured'])})"
            )
    for line in methods.get("lines") or []:
        console.print(f"  {escape(line)}", soft_wrap=True)


def _matched(row: dict[str, Any]) -> str:
    m = row.get("outputs_matched")
    return "—" if not m else f"{m[0]}/{m[1]}"


def _with_ci(value: Any, ci: Any, colour: bool = False) -> str:
    text = f"{fmt_speedup(value)} {fmt_ci(ci)}"
    if not colour or value is None:
        return text
    return f"[{'green' if value >= 1.0 else 'red'}]{text}[/]"


def render_load(load: dict[str, Any], console: Console) -> None:
    """Where speculation stops paying: each measured B beside its predictions, the curve, the schedule."""
    k = load["k"]
    title = (
        f"where speculation stops paying — {load['candidate']} {load['draft']} at k={k} on {load['domain']} "
        f"({load['prompts']} prompts × {load['max_tokens']} tokens, greedy, waves of B sequences)"
    )
    table = Table(title=title)
    for col in ("B", "E_meas decode [95% CI]", "E_pred (waves)", "error", f"E(B,{k}) curve",
                "E_meas e2e [95% CI]", "same output", "machine"):  # fmt: skip
        table.add_column(col)
    for r in load["measured"]:
        decode = _with_ci(r.get("speedup_measured_decode"), r.get("speedup_measured_decode_ci"), True)
        table.add_row(
            str(r["batch"]), decode,
            fmt_speedup(r.get("speedup_predicted_waves")), fmt_pct(r.get("error")),
            fmt_speedup(r.get("speedup_predicted_curve")),
            _with_ci(r.get("speedup_measured"), r.get("speedup_measured_ci")),
            _matched(r), escape(str(r.get("machine") or "—")),
        )  # fmt: skip
    table.caption = (
        "decode-only E_meas is the figure to compare (a wave's prefill is shared); E_pred (waves) replays "
        "the recorded steps at the cost surface timed between the waves; E(B,k) curve: the steady state below"
    )
    console.print()
    console.print(table)
    curve = "  ".join(
        f"B={p['batch']} {fmt_speedup(p['by_k'].get(str(k)))} (best k {p['best_k']})"
        for p in load["predicted"]
    )
    console.print(f"predicted E(B, k={k}): {curve}", soft_wrap=True)
    top = max(load["batches_predicted"])
    predicted = load.get("crossover_predicted")
    if predicted is None:
        console.print(f"speculation pays at every batch size up to {top} (predicted: best k > 0 throughout)")
    else:
        console.print(
            f"[bold]speculation stops paying at batch size {predicted}[/] (predicted: best k = 0 from there)"
        )
    at_k, measured = load.get("crossover_predicted_at_k"), load.get("crossover_measured")
    console.print(
        f"  first batch size below 1.0× at k={k}: predicted "
        f"{f'B={at_k}' if at_k is not None else f'none up to {top}'}; measured "
        f"{f'B={measured}' if measured is not None else 'none'} "
        f"(of B = {', '.join(map(str, load['batches_measured']))})"
    )
    schedule = load["schedule"]
    console.print(f"recommended schedule: {escape(schedule['description'])}", soft_wrap=True)
    console.print(f"  serve:  --k-schedule '{schedule['serve_k_schedule']}'", soft_wrap=True, markup=False)
    console.print(
        f"  vLLM:   --speculative-config '{json.dumps(schedule['speculative_config'])}'",
        soft_wrap=True, markup=False,
    )  # fmt: skip
    if load.get("noisy_points"):
        console.print(
            f"[yellow]noisy surface points (B, k): {load['noisy_points']}; rerun on a quiet machine[/]"
        )
