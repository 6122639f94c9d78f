"""The HTML report's sweep section: the E_meas(k, level) matrix with best k, drift, the schedule and its
validation, the capacity headline and the failures — from the result's ``sweep`` section, as the console
shows it (``sweep.view``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from specmeter.report.fmt import DASH
from specmeter.report.html_parts import estimate, table
from specmeter.report.html_svg import esc

__all__ = ["sweep_section"]


def _p(block: Any) -> str:
    if not isinstance(block, Mapping) or not isinstance(block.get("p50"), int | float):
        return DASH
    p99 = block.get("p99")
    return f"{block['p50']:.1f} / {p99:.1f}" if isinstance(p99, int | float) else f"{block['p50']:.1f}"


def sweep_section(result: Mapping[str, Any]) -> list[str]:
    """HTML parts of a ``sweep`` result (none for other kinds)."""
    section = result.get("sweep")
    if result.get("kind") != "sweep" or not isinstance(section, Mapping):
        return []
    cells: list[Mapping[str, Any]] = [c for c in section.get("cells") or [] if isinstance(c, Mapping)]
    levels = [str(v) for v in section.get("levels") or []]
    runs = [r for r in dict.fromkeys(str(c.get("run")) for c in cells) if r != "k=0"]
    best = {b.get("level"): b for b in section.get("best") or [] if isinstance(b, Mapping)}
    rows = []
    for level in levels:
        row = [level]
        for run in runs:
            cell = next((c for c in cells if c.get("run") == run and c.get("level") == level), None)
            row.append(DASH if cell is None else estimate(cell.get("e"), cell.get("e_ci")))
        b = best.get(level)
        row.append(DASH if b is None else f"k={b.get('k')}" + ("" if b.get("sure") else " (not sure)"))
        rows.append(row)
    parts = [
        "<h2>Sweep: E_meas(k, level)</h2>",
        table(["level", *runs, "best k"], rows),
        "<p class='note'>Paired over the same requests; each interval is the union of the intervals against "
        "the first and the last baseline run (drift included).</p>",
    ]
    figures = [
        [str(c.get("run")), str(c.get("level")), _num(c.get("alpha")), _num(c.get("tau")),
         _p(c.get("ttft_ms")), _p(c.get("tpot_ms")), _p(c.get("gap_ms")), str(c.get("stalls", DASH)),
         _num(c.get("requests_per_s")),
         _equal((c.get("counters") or {}).get("equal"))]
        for c in cells
    ]  # fmt: skip
    parts.append(table(["config", "level", "α", "τ", "TTFT ms p50/p99", "TPOT", "chunk gap", "stalls",
                         "req/s", "counters"], figures))  # fmt: skip
    notes = [
        f"Baseline drift at {d.get('level')}: first run ÷ last run = "
        f"{estimate(d.get('first_over_end'), d.get('ci'))}"
        for d in section.get("drift") or []
        if isinstance(d, Mapping)
    ]
    schedule = section.get("schedule")
    if isinstance(schedule, Mapping):
        notes.append(f"Schedule: {schedule.get('describe')}; serve {schedule.get('serve')}")
        notes.append("vLLM --speculative-config " + json.dumps(schedule.get("speculative_config")))
    capacity = section.get("capacity")
    if isinstance(capacity, Mapping) and capacity.get("headline"):
        notes.append(str(capacity["headline"]))
    notes += [f"Failed: {line}" for line in section.get("failures") or []]
    parts += [f"<p class='note'>{esc(n)}</p>" for n in notes]
    validate = section.get("validate")
    if isinstance(validate, Mapping):
        rows = [
            [str(r.get("level")), str(r.get("k_scheduled")), estimate(r.get("e"), r.get("e_ci")),
             DASH if r.get("best_static_k") is None else f"k={r.get('best_static_k')}"
             + (" (interpolated)" if r.get("best_static_interpolated") else ""),
             estimate(r.get("best_static_e"), r.get("best_static_e_ci")),
             "below" if r.get("below_best_static") else ""]
            for r in validate.get("levels") or [] if isinstance(r, Mapping)
        ]  # fmt: skip
        parts += [
            "<h3>Validation: the schedule's own server</h3>",
            table(["level", "k (schedule)", "E (schedule)", "best static", "E (best static)", ""], rows),
        ]
    return parts


def _num(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else DASH


def _equal(value: Any) -> str:
    return DASH if value is None else "= server" if value else "≠ server"
