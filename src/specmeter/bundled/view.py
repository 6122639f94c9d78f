"""The console view of ``specmeter demo``: the closing summary of :func:`specmeter.bundled.demo.run_demo`
(per-domain α and E_meas, winners, danger zones, the k sweep, where speculation stops paying under
batching, ROI, the method × domain table, the router by category, the story checks with their margins) and
which of its runs the machine was busy during."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from specmeter.economics.view_roi import payback_cell
from specmeter.report.fmt import DASH, fmt_bytes, fmt_ci, fmt_num, fmt_pct, fmt_speedup, with_ci
from specmeter.report.view import hygiene_line

__all__ = ["check_text", "print_machine", "render_load", "render_methods", "render_router", "render_summary"]


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


def _shown(r: dict[str, Any]) -> str:
    """A row's candidate as the demo names it (``A draft-general``, ``suffix``, ``eagle:head=bundled:…``)."""
    return str(r.get("name") or f"{r['candidate']} {r['draft']}")


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
            r["domain"], escape(_shown(r)),
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
        f"{r['domain']} {escape(_shown(r))} {r['speedup_measured'] / r['speedup_calibrated']:.2f}"
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
            console.print(f"[yellow]⚠[/] {r['domain']} × {escape(_shown(r))}: {escape(w)}", soft_wrap=True)
    for d in summary["danger_zone_pairs"]:
        console.print(
            f"[bold red]danger zone[/] {d['domain']} × {escape(_shown(d))}: " + "; ".join(d["reasons"])
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
        mark = {True: "[green]pass[/]", False: "[red]miss[/]", None: "[yellow]n/a [/]"}[c["passed"]]
        console.print(f"  {mark}  {escape(check_text(c))}", soft_wrap=True)
    checks = summary["checks"]
    missed = [c for c in checks if c["passed"] is False]
    unmeasured = [c for c in checks if c["passed"] is None]
    passed = len(checks) - len(missed) - len(unmeasured)
    if checks and passed == len(checks):
        console.print(f"all {len(checks)} checks pass")
    elif checks:
        parts = [f"{passed} of {len(checks)} checks pass"]
        if missed:
            short = "; ".join(f"{c['check']} by {fmt_num(-(c.get('margin') or 0.0), 3)}" for c in missed)
            parts.append(f"missed: {short}")
        if unmeasured:
            parts.append(f"not measured: {'; '.join(c['check'] for c in unmeasured)}")
        console.print(escape("; ".join(parts)), soft_wrap=True)


def check_text(check: dict[str, Any]) -> str:
    """A story check after its pass/miss mark: the claim, the measured value, the threshold and the margin
    (``0.203 to spare``, ``missed by 0.058``); a check from before thresholds were recorded without them."""
    if check["measured"] is None:
        return f"{check['check']} — not measured"
    text = f"{check['check']} — measured {fmt_num(check['measured'], 3)}"
    if check.get("threshold") is None or check.get("margin") is None:
        return text
    margin = check["margin"]
    side = (
        "missed by " + fmt_num(-margin, 3)
        if check["passed"] is False
        else "met" if margin == 0 else fmt_num(margin, 3) + " to spare"
    )  # fmt: skip
    return f"{text}, threshold {fmt_num(check['threshold'])}: {side}"


def render_methods(methods: dict[str, Any], console: Console) -> None:
    """The method × domain table (α, τ, E_meas with intervals, extra memory; the split categories on rows of
    their own), per domain the candidate ``select --mix`` would route that domain's traffic to, and the
    router by category (:func:`render_router`)."""
    names: dict[str, str] = methods.get("names") or {}
    table = Table(
        title="methods × domains — drafts, model-free methods, layer skipping, EAGLE head (greedy, k=4; "
        "E_meas end to end)"
    )
    for col in ("method", "domain", "α [95% CI]", "τ [95% CI]", "E_meas [95% CI]", "extra memory"):
        table.add_column(col)
    rows = sorted(methods["table"], key=_table_order)
    for i, r in enumerate(rows):
        last = i + 1 == len(rows) or rows[i + 1]["draft"] != r["draft"]
        name = _shown(r) if r.get("name") else _method_name(r)
        table.add_row(
            escape(name), escape(r.get("category") or r["domain"]),
            f"{fmt_num(r['alpha'], 3)} {fmt_ci(r['alpha_ci'])}",
            f"{fmt_num(r['tau'])} {fmt_ci(r.get('tau_ci'))}",
            _with_ci(r["speedup_measured"], r["speedup_measured_ci"], True),
            fmt_bytes(r.get("extra_memory_bytes")), end_section=last,
        )  # fmt: skip
    console.print()
    console.print(table)
    for domain, pick in (methods.get("by_domain") or {}).items():
        if pick is None:
            console.print(
                f"recommendation for [bold]{domain}[/]: no speculation (nothing beats the target alone)"
            )
        else:
            name = names.get(pick["draft"], str(pick["draft"]))
            console.print(
                f"recommendation for [bold]{domain}[/]: {escape(name)} "
                f"at k={pick['k']} (E_meas {fmt_speedup(pick['speedup_measured'])})"
            )
    for line in methods.get("lines") or []:
        for draft, name in names.items():  # a long label (an EAGLE head's path) as the tables show it
            if draft.startswith("eagle:"):
                line = line.replace(draft, name)
        console.print(f"  {escape(line)}", soft_wrap=True)
    if methods.get("category_router"):
        render_router(methods["category_router"], names, console)


def _table_order(r: dict[str, Any]) -> tuple[bool, str, str, str]:
    """Methods first, by label, then the drafts A, B, C; each with its domains, a split category after its
    domain."""
    draft = r["method"] == "draft_model"
    return draft, str(r["candidate"] if draft else r["draft"]), r["domain"], r.get("category") or ""


def _method_name(r: dict[str, Any]) -> str:
    return str(r["draft"]) if r["method"] != "draft_model" else f"{r['candidate']} {r['draft']}"


def _option(option: dict[str, Any] | None, names: dict[str, str]) -> str:
    if option is None:
        return DASH
    return "target alone" if option["draft"] is None else names.get(option["draft"], str(option["draft"]))


def _gain(value: Any, ci: Any) -> str:
    if value is None:
        return DASH
    text = f"{value:+.0%}"
    return text if not ci else f"{text} [{ci[0]:+.0%}, {ci[1]:+.0%}]"


def _separated(row: dict[str, Any], min_requests: int) -> str:
    if row["separated"] is True:
        return "[green]yes[/]"
    if row["separated"] is False:
        return "[yellow]no (overlap)[/]"
    if row["requests"] < min_requests:
        return f"n < {min_requests}"
    return DASH


def _pick_speedup(option: dict[str, Any]) -> str:
    """A pick's E with its interval; the target alone's is 1.00× exactly, with no interval to show."""
    if option["draft"] is None:
        return fmt_speedup(option["speedup_measured"])
    return _with_ci(option["speedup_measured"], option["speedup_measured_ci"], True)


def render_router(router: dict[str, Any], names: dict[str, str], console: Console) -> None:
    """The router by category (``selection.route_analysis``): each category's pick with its interval, the
    runner-up and whether they are separated; then the routed E per domain and over all traffic beside the
    best single candidate, the gain, and the held-out figure."""
    min_requests = int(router.get("min_ci_requests") or 0)
    table = Table(
        title="router by category — each category to the candidate with its best E_meas (end to end, k=4)"
    )
    for col in ("category", "n", "routed to", "E_meas [95% CI]", "runner-up", "separated"):
        table.add_column(col)
    rows = router["categories"]
    for i, row in enumerate(rows):
        pick, runner = row["pick"], row["runner_up"]
        second = _option(runner, names)
        if runner is not None:
            second += f" {fmt_speedup(runner['speedup_measured'])}"
        mark = " ‡" if row.get("differs_from_domain") else ""
        table.add_row(
            escape(row["category"]), str(row["requests"]), escape(_option(pick, names)) + mark,
            _pick_speedup(pick), escape(second),
            _separated(row, min_requests),
            end_section=i + 1 < len(rows) and rows[i + 1]["domain"] != row["domain"],
        )  # fmt: skip
    table.caption = (
        "‡ not its domain's best single candidate: routing the category on its own changes its method. "
        "Separated: the 95% intervals of the pick and the runner-up do not overlap"
        + (f"; a category of fewer than {min_requests} requests has no interval" if min_requests else "")
    )
    console.print()
    console.print(table)
    scopes = [(f"on [bold]{d}[/]", s, f"all of {d}") for d, s in router["domains"].items()]
    scopes.append(("over [bold]all traffic[/]", router["all"], "all traffic"))
    for where, s, whole in scopes:
        r, single, held = s["router"], s["single"], s["held_out"]
        routed = with_ci(fmt_speedup(r["speedup_measured"]), r["speedup_measured_ci"])
        one = with_ci(fmt_speedup(single["speedup_measured"]), single["speedup_measured_ci"])
        console.print(
            f"routed E_meas {where}: {routed} against {escape(_option(single, names))} for {whole} {one}: "
            f"{_gain(s['gain_over_single'], s['gain_over_single_ci'])}; held out "
            f"{fmt_speedup(held['speedup_measured'])} ({_gain(held['gain_over_single'], None)})",
            soft_wrap=True,
        )
    separated = [sum(1 for row in rows if row["separated"] is s) for s in (True, False, None)]
    console.print(
        "  E = Σ baseline time / Σ routed time over the requests, each timed with its category's pick. The "
        "picks are chosen on the requests they are scored on, so the routed E is an upper estimate; held out "
        "times each request with the pick of its category's other requests. "
        f"Of {len(rows)} categories' picks, {separated[0]} are separated from their runner-up, "
        f"{separated[1]} are not (their intervals overlap) and {separated[2]} have no interval to tell.",
        soft_wrap=True,
    )


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
        f"({load['prompts']} prompts × {load['max_tokens']} tokens, greedy, waves kept at B rows)"
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
        "decode-only E_meas is the figure to compare (each wave is kept at B rows, clocks paused while a row "
        "joins); E_pred (waves) prices the recorded steps on the cost surface timed between the waves; "
        "E(B,k) curve: the steady state below"
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
