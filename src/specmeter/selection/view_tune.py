"""Console view of a tune result: cost curve, the four speedups per k, where the gaps come from, the
held-out check and the best k per category. Works from the result dict alone (a JSON file renders the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from specmeter.report.fmt import DASH, fmt_int, fmt_ms, fmt_num, fmt_pct, fmt_speedup
from specmeter.report.view import framed_by_hygiene
from specmeter.selection.tune_analysis import ALL

_GOOD, _BAD = "bold green", "bold red"


def _cost_table(curve: Mapping[str, Any]) -> Table:
    title = "cost curve (warm cache, median of repeats)"
    if curve.get("source"):
        title = f"cost curve ({curve['source']})"
    table = Table(title=title, title_justify="left", title_style="bold")
    for column in ("n tokens", "t_T(n)", "spread (IQR)", "t_T(n)/t_T(1)"):
        table.add_column(column, justify="right")
    spreads = curve.get("target_spread_ms") or [None] * len(curve["n"])
    for n, t, s, v in zip(curve["n"], curve["target_ms"], spreads, curve["verification_factor"], strict=True):
        table.add_row(str(n), fmt_ms(t), fmt_ms(s), fmt_num(v))
    noisy = [
        n
        for n, t, sp in zip(curve["n"], curve["target_ms"], spreads, strict=True)
        if sp is not None and sp > t
    ]
    fit = curve.get("fit") or {}
    r2 = f", R² {fit['r2']:.3f}" if fit.get("r2") is not None else ""
    table.caption = (
        f"t_D(1) {fmt_ms(curve['draft_ms'])} (IQR {fmt_ms(curve['draft_spread_ms'])}), "
        f"c = {fmt_num(curve['cost_ratio'], 3)}; "
        f"{curve['repeats']} repeats; line fit t_T(n) ≈ {fmt_ms(fit.get('intercept_ms'))} + "
        f"{fmt_ms(fit.get('per_token_ms'))}·n{r2}"
    )
    if noisy:
        table.caption += (
            f"\nNOISY: the spread exceeds the median at n = {', '.join(map(str, noisy))}; "
            "the machine was busy. "
            "Raise --cost-repeats or measure on a quiet machine before trusting E_cal."
        )
    return table


def _k_table(rows: list[Mapping[str, Any]], title: str) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1))
    for column in ("k", "α", "τ", "τ_pred", "E_seed", "E_lev", "E_cal", "E_dec", "E_meas", "pred"):
        table.add_column(column, justify="right")
    for r in rows:
        mark = "*" if r["held_out"] else "" if r["run"] else "?"
        e_meas = r.get("speedup_measured")
        style = "" if e_meas is None else (_GOOD if e_meas >= 1.0 else _BAD)
        table.add_row(
            f"{r['k']}{mark}",
            fmt_num(r.get("acceptance_rate"), 3),
            fmt_num(r.get("acceptance_length")),
            fmt_num(r.get("acceptance_length_predicted")),
            fmt_speedup(r.get("speedup_seed")),
            fmt_speedup(r.get("speedup_leviathan")),
            fmt_speedup(r.get("speedup_calibrated")),
            fmt_speedup(r.get("speedup_measured_decode")),
            Text(fmt_speedup(e_meas), style=style),
            fmt_speedup(r.get("speedup_predicted")),
        )
    table.caption = (
        "* held out of every fit   ? not run   E_dec: E_meas decode-only   pred: decode-only E predicted "
        "from per-position acceptance at the source k, the cost curve and the fitted engine overhead"
    )
    return table


def _category_table(by_k: Mapping[str, list[Mapping[str, Any]]]) -> Table:
    """E_meas per category and k (predicted, dim and in parentheses, where k was not run); best in bold."""
    table = Table(
        title="E_meas by category and k", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD
    )
    table.add_column("category")
    ks = [r["k"] for r in by_k[ALL]]
    for k in ks:
        table.add_column(f"k={k}", justify="right")
    for scope, rows in by_k.items():
        measured = [r["speedup_measured"] for r in rows if r.get("speedup_measured") is not None]
        best = max(measured, default=None)
        cells = []
        for r in rows:
            e = r.get("speedup_measured")
            if e is None:
                cells.append(Text(f"({fmt_speedup(r.get('speedup_predicted'))})", style="dim"))
            else:
                style = (_GOOD if e >= 1.0 else _BAD) if e == best else ""
                cells.append(Text(fmt_speedup(e), style=style))
        table.add_row(Text(scope, style="bold" if scope == ALL else ""), *cells)
    return table


def _overhead_warning(r2: float, hygiene: Any) -> str:
    """Why the engine overhead may not be a line in k, as far as the run's machine verdict tells: a busy
    or unusable machine is named as the cause only when the sampler saw one (a quiet run says so)."""
    head = f"The engine overhead is not a line in k here (R² {r2:.2f})"
    tail = "treat E_pred for k not run with suspicion."
    verdict = hygiene.get("verdict") if isinstance(hygiene, Mapping) else None
    if verdict in ("busy", "unusable"):
        return f"{head}: the machine was {verdict} during the run; {tail}"
    if verdict == "quiet":
        return (
            f"{head}, on a quiet machine: the loop's own overhead varies with k more than a line allows "
            f"(or the run was too short to time it); {tail}"
        )
    return f"{head}: the overhead was noisy or not linear in k; {tail}"


def _holdout_lines(check: Mapping[str, Any]) -> list[str]:
    out = [f"Held-out check: k={check['k']} predicted from k={check['source_k']} and fits that never saw it:"]
    for name, label in (
        ("acceptance_length", "τ"),
        ("speedup_calibrated", "E_cal"),
        ("speedup_measured_decode", "E_meas decode-only"),
    ):
        c = check[name]
        err = DASH if c["error"] is None else f"{c['error']:+.1%}"
        out.append(
            f"  {label}: predicted {fmt_num(c['predicted'])}, measured {fmt_num(c['measured'])} ({err})"
        )
    return out


def _best_table(best: Mapping[str, Any]) -> Table:
    table = Table(title="best k", title_justify="left", title_style="bold")
    for column in ("scope", "best k measured", "E_meas", "best k predicted", "E_pred"):
        table.add_column(column)
    for scope, b in best.items():
        m, p = b.get("measured"), b.get("predicted")
        style = "" if m is None else (_GOOD if m["pays_off"] else _BAD)
        table.add_row(
            Text(scope, style="bold" if scope == ALL else ""),
            DASH if m is None else str(m["k"]),
            Text(DASH if m is None else fmt_speedup(m["speedup_measured"]), style=style),
            DASH if p is None else str(p["k"]),
            DASH if p is None else fmt_speedup(p["speedup_predicted"]),
        )
    return table


@framed_by_hygiene
def render_tune(result: Mapping[str, Any], console: Console) -> None:
    """The result (framed by the machine's warning when it was busy: ``report.view.framed_by_hygiene``)."""
    section = result.get("tune") or {}
    cfg = (result.get("run") or {}).get("config") or {}
    drafts = ", ".join(map(str, cfg.get("drafts") or []))
    console.print(Text(f"specmeter tune — target {cfg.get('target')}, draft {drafts}", style="bold"))
    if result.get("complete") is False:
        console.print(Text("Interrupted: partial results, everything measured so far.", style="bold yellow"))
    if "cost_curve" in section:
        console.print(_cost_table(section["cost_curve"]))
    by_k = section.get("by_k")
    if not by_k:
        console.print(Text("No k finished: nothing to compare.", style="bold yellow"))
        return
    ran = next((row.get("requests") for row in by_k[ALL] if row.get("requests") is not None), None)
    console.print(_k_table(by_k[ALL], f"all categories ({fmt_int(ran)} requests)"))
    if len(by_k) > 2:  # more than one category
        console.print(_category_table(by_k))
    oh = section.get("overhead") or {}
    console.print(
        f"Engine overhead per target forward ≈ {fmt_ms(oh.get('per_forward_ms'))} + "
        f"{fmt_ms(oh.get('per_draft_token_ms'))} per drafted token (fitted on k = "
        f"{', '.join(str(k) for k in oh.get('fitted_on_k', []))}; 0 is the baseline); share of decode time: "
        + ", ".join(f"k={r['k']} {fmt_pct(r['overhead_share'])}" for r in oh.get("runs", []))
    )
    if oh.get("r2") is not None and oh["r2"] < 0.5:
        console.print(Text(_overhead_warning(oh["r2"], result.get("hygiene")), style="yellow"))
    for line in section.get("explanation") or []:
        console.print(f"  {line}")
    check = (section.get("holdout_check") or {}).get(ALL)
    if check is not None:
        for line in _holdout_lines(check):
            console.print(line)
    console.print(_best_table(section.get("best_k") or {}))
    best = ((section.get("best_k") or {}).get(ALL) or {}).get("measured")
    if best is None:
        console.print(Text("Verdict: no measured speedup.", style="bold yellow"))
    elif best["pays_off"]:
        console.print(
            Text(
                f"Verdict: best k overall is {best['k']} (E_meas {fmt_speedup(best['speedup_measured'])}).",
                style=_GOOD,
            )
        )
    else:
        console.print(
            Text(
                f"Verdict: no k pays off — the best, k={best['k']}, is at E_meas "
                f"{fmt_speedup(best['speedup_measured'])}; this draft is slower than the target alone.",
                style=_BAD,
            )
        )
