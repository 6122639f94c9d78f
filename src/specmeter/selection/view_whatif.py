"""Console view of ``specmeter whatif``: the measured surface E(α, k, B), break-even α, best k, the overlay.

Works from the result dict alone (``whatif`` section, docs/results.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from specmeter.report.fmt import fmt_ci, fmt_num, fmt_speedup
from specmeter.report.view import print_hygiene
from specmeter.selection.whatif_surface import describe_overlay

_GOOD, _BAD = "bold green", "bold red"


def _e_text(cell: Mapping[str, Any] | None) -> Text:
    if cell is None or cell.get("e") is None:
        return Text("—")
    e = float(cell["e"])
    ci = f" {fmt_ci(cell['e_ci'])}" if cell.get("e_ci") else ""
    return Text(fmt_speedup(e) + ci, style="green" if e >= 1.0 else "red")


def render_whatif(out: Mapping[str, Any], console: Console) -> None:
    print_hygiene(out, console, where="top")
    s = out.get("whatif") or {}
    draft = s.get("draft") or {}
    standin = draft.get("standin")
    who = (
        f"stand-in: the target's first {standin['layers']} of {standin['of_layers']} layers"
        if standin
        else f"draft {draft.get('name')}"
    )
    c = s.get("cost_ratio")
    console.print(
        f"[bold]What if[/]: acceptance forced per position ({s.get('profile')} profile), {who}, "
        f"cost ratio c = t_D(1)/t_T(1) = {fmt_num(c, 3)}; every request runs to its token limit."
    )
    console.print(f"[yellow]{s.get('note')}[/]", soft_wrap=True)
    cells = s.get("cells") or []
    batches = list(s.get("batches") or [])
    table = Table(
        title="E_meas(α, k, B) [95% CI] — measured, end to end (decode-only in the JSON)",
        title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1),
    )  # fmt: skip
    table.add_column("α", justify="right")
    table.add_column("k", justify="right")
    table.add_column("α drawn", justify="right")
    table.add_column("τ", justify="right")
    for b in batches:
        table.add_column(f"B={b}", justify="right")
    keys = sorted({(float(x["alpha"]), int(x["k"]), x.get("profile")) for x in cells})
    by = {(float(x["alpha"]), int(x["k"]), x.get("profile"), int(x["batch"])): x for x in cells}
    for alpha, k, profile in keys:
        first = next(by[(alpha, k, profile, b)] for b in batches if (alpha, k, profile, b) in by)
        label = f"{alpha:.2f}" + ("*" if profile == "given" else "")
        table.add_row(
            label, str(k), fmt_num(first.get("measured_alpha"), 3), fmt_num(first.get("measured_tau"), 2),
            *(_e_text(by.get((alpha, k, profile, b))) for b in batches),
        )  # fmt: skip
    caption = "α drawn: A/D the synthetic verifier really accepted (short drafts at the token limit included)"
    if any(x.get("profile") == "given" for x in cells):
        caption += "\n* an explicit per-position profile (--rates)"
    table.caption = caption
    console.print(table)

    be = (s.get("break_even") or {}).get("best") or []
    for row in be:
        if row.get("alpha") is None:
            console.print(f"B={row['batch']}: no α measured reaches E = 1 (speculation does not pay here)",
                          style=_BAD)  # fmt: skip
        elif row.get("where") == "below":
            console.print(
                f"B={row['batch']}: E ≥ 1 already at the lowest α measured ({row['alpha']:.2f}, k={row['k']})"
            )
        else:
            console.print(f"B={row['batch']}: break-even α = {row['alpha']:.2f} (k={row['k']}, where E = 1)")
    best = s.get("best_k") or []
    if best:
        bt = Table(title="best k per (α, B) (0: plain decoding pays more)", title_justify="left",
                   title_style="bold", box=box.SIMPLE_HEAD, padding=(0, 1))  # fmt: skip
        bt.add_column("α", justify="right")
        for b in batches:
            bt.add_column(f"B={b}", justify="right")
        alphas = sorted({float(r["alpha"]) for r in best})
        get = {(float(r["alpha"]), int(r["batch"])): r for r in best}
        for a in alphas:
            row_cells = []
            for b in batches:
                r = get.get((a, b))
                if r is None:
                    row_cells.append(Text("—"))
                else:
                    row_cells.append(
                        Text(f"k={r['k']} ({fmt_speedup(r['e'])})", style=_GOOD if r["k"] else _BAD)
                    )
            bt.add_row(f"{a:.2f}", *row_cells)
        console.print(bt)
    for row in s.get("overlay") or []:
        console.print(describe_overlay(row), soft_wrap=True)
    if any(row.get("categories") for row in s.get("overlay") or []):
        note = "(each category of those runs is placed on the surface too: whatif.overlay[].categories)"
        console.print(note, style="dim")
    rows = s.get("overlay") or []
    if any(
        p.get("extrapolated")
        for row in rows
        for p in [*row.get("surface"), *((row.get("at") or {}).get("surface") or [])]
    ):
        console.print("* beyond the α measured: extrapolated from the two nearest points", style="dim")
    print_hygiene(out, console, where="bottom")
