"""The HTML report's what-if section: the measured surface E(α, k, B), break-even α, best k and the overlay
of measured domains — from the result's ``whatif`` section, as the console shows it
(``selection.view_whatif``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specmeter.report.fmt import DASH
from specmeter.report.html_parts import estimate, table
from specmeter.report.html_svg import esc

__all__ = ["whatif_section"]


def _e(value: Any, ci: Sequence[float] | None = None) -> str:
    return estimate(value, ci, "×")


def _num(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, int | float) else DASH


def whatif_section(result: Mapping[str, Any]) -> list[str]:
    """HTML parts of a ``whatif`` result (none for other kinds)."""
    s = result.get("whatif")
    if result.get("kind") != "whatif" or not isinstance(s, Mapping):
        return []
    cells = [c for c in s.get("cells") or [] if isinstance(c, Mapping)]
    batches = [int(b) for b in s.get("batches") or []]
    keys = sorted({(float(c["alpha"]), int(c["k"])) for c in cells})
    by = {(float(c["alpha"]), int(c["k"]), int(c["batch"])): c for c in cells}
    rows = []
    for alpha, k in keys:
        first = next((by[(alpha, k, b)] for b in batches if (alpha, k, b) in by), {})
        row = [f"{alpha:.2f}", str(k), _num(first.get("measured_alpha")), _num(first.get("measured_tau"), 2)]
        for b in batches:
            c = by.get((alpha, k, b))
            row.append(DASH if c is None else _e(c.get("e"), c.get("e_ci")))
        rows.append(row)
    draft = s.get("draft") or {}
    standin = draft.get("standin")
    who = (
        f"a stand-in of the target's first {standin.get('layers')} of {standin.get('of_layers')} layers"
        if isinstance(standin, Mapping)
        else f"draft {draft.get('name', DASH)}"
    )
    parts = [
        "<h2>What if: E_meas(α, k, B) with forced acceptance</h2>",
        f"<p class='verdict warn'>{esc(s.get('note') or '')}</p>",
        f"<p class='note'>Proposals by {esc(who)}, cost ratio c = {esc(_num(s.get('cost_ratio')))}; "
        f"{esc(str(s.get('profile')))} per-position profile; every request ran to its token limit.</p>",
        table(["α", "k", "α drawn", "τ", *(f"B={b}" for b in batches)], rows),
    ]
    be = (s.get("break_even") or {}).get("best") or []
    if be:
        be_rows = [
            [str(r.get("batch")), DASH if r.get("alpha") is None else f"{r['alpha']:.2f}",
             DASH if r.get("k") is None else str(r["k"]), str(r.get("where"))]
            for r in be if isinstance(r, Mapping)
        ]  # fmt: skip
        parts += ["<h3>Break-even α (E = 1)</h3>", table(["B", "α", "k", "where"], be_rows)]
    overlay = [o for o in s.get("overlay") or [] if isinstance(o, Mapping)]
    if overlay:
        o_rows = []
        for o in overlay:
            surface = {int(p["batch"]): p for p in o.get("surface") or []}
            row = [str(o.get("domain")), str(o.get("draft") or DASH), _num(o.get("alpha"), 2),
                   _e(o.get("measured_e"))]  # fmt: skip
            row += [_e(surface[b].get("e")) if b in surface else DASH for b in batches]
            o_rows.append(row)
        headers = ["domain", "draft", "α today", "E measured (B=1)", *(f"E at B={b}" for b in batches)]
        parts += ["<h3>Measured domains on the surface</h3>", table(headers, o_rows)]
    return parts
