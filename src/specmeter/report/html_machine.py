"""The report's "Machine during the run" section: the ``hygiene`` section of a result as HTML tables.

The verdict (quiet / busy / unusable) with its reasons, the figures behind it (other processes' CPU, steal,
pressure, load, frequency, accelerators), the sampler's own cost, the data's own stability per candidate,
and the thresholds (docs/metrics.md, "Measurement hygiene"). Works from the plain result dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specmeter.report.fmt import DASH, fmt_int, fmt_num, fmt_pct, fmt_speedup
from specmeter.report.html_parts import table
from specmeter.report.html_svg import esc
from specmeter.report.view import machine_row

__all__ = ["machine_section"]


def _gpu_text(gpu: Mapping[str, Any]) -> str:
    parts = []
    for d in gpu.get("devices") or []:
        slow = d.get("slowdowns") or []
        parts.append(
            f"GPU {d.get('index')} {d.get('name')}: {len(d.get('other_processes') or [])} other process(es), "
            f"SM clock min {fmt_num(d.get('sm_clock_mhz_min'), 0)} of "
            f"{fmt_num(d.get('sm_clock_mhz_max_rated'), 0)} MHz" + (f", {', '.join(slow)}" if slow else "")
        )
    return "; ".join(parts) or str(gpu.get("reason") or DASH)


def _figure_rows(h: Mapping[str, Any]) -> list[list[str]]:
    f = h.get("figures") or {}
    load = f.get("load1") or {}
    freq = f.get("freq_mhz") or {}
    sampler = f.get("sampler") or {}
    reasons = "; ".join(str(r) for r in h.get("reasons") or [])
    top = "; ".join(
        f"{p.get('cmd') or p.get('name', '?')} (pid {p.get('pid')}) {fmt_num(p.get('cores'))} cores"
        for p in f.get("top_processes") or []
    )
    other = (
        f"{fmt_num(f.get('other_cores'))} / {fmt_num(f.get('other_cores_peak'))} cores of "
        f"{fmt_int(f.get('cores'))} (the measurement: {fmt_num(f.get('own_cores'))} cores, "
        f"{fmt_int(f.get('threads'))} threads)"
    )
    frequency = f"{fmt_num(freq.get('min'), 0)} / {fmt_num(freq.get('mean'), 0)}" if freq else DASH
    cost = (
        f"{fmt_int(f.get('samples'))} samples every {fmt_num(f.get('interval_s'))} s over "
        f"{fmt_num(f.get('duration_s'), 1)} s; its own cost "
        f"{fmt_pct(sampler.get('share_of_core'), 2)} of a core"
    )
    loads = " / ".join(fmt_num(load.get(k)) for k in ("start", "max", "end"))
    return [
        ["verdict", str(h.get("verdict", DASH)) + (f": {reasons}" if reasons else "")],
        ["other processes, mean / peak", other],
        ["time with others ≥ 0.5 core", fmt_pct(f.get("other_busy_time_share"))],
        ["busiest other processes", top or "none"],
        ["steal", fmt_pct(f.get("steal_share"))],
        ["CPU pressure (some task waiting)", fmt_pct(f.get("cpu_pressure_share"))],
        ["load average (1 min) start / max / end", loads],
        ["CPU frequency min / mean (MHz)", frequency],
        ["accelerators", _gpu_text(f.get("gpu") or {})],
        ["sampler", cost],
    ]  # fmt: skip


def _stability_table(stab: Mapping[str, Any]) -> str:
    rows = [
        [
            str(label),
            fmt_num(s.get("spread")),
            fmt_pct(s.get("explained_by_acceptance")),
            f"{fmt_speedup(s.get('speedup_first_half'))} / {fmt_speedup(s.get('speedup_second_half'))}",
            fmt_num(s.get("baseline_drift")),
            DASH if s.get("drift_p") is None else f"{s['drift_p']:.2g}",
            str(s.get("note") or DASH),
        ]
        for label, s in stab.items()
    ]
    headers = ["candidate", "per-request spread ×/÷", "explained by acceptance", "E_meas 1st / 2nd half",
               "baseline drift", "drift p", "reading"]  # fmt: skip
    return table(headers, rows)


def _thresholds(th: Mapping[str, Any]) -> str:
    return (
        "Thresholds (docs/metrics.md, Measurement hygiene): busy from "
        f"{fmt_num(th.get('busy_other_cores'))} core of other processes beyond the cores the measurement "
        f"left free or above {fmt_pct(th.get('busy_other_share'), 0)} of all cores, or "
        f"{fmt_pct(th.get('busy_steal_share'), 0)} steal; unusable when others took "
        f"{fmt_num(th.get('unusable_excess_cores'))} core or more from the measurement's cores, or "
        f"{fmt_pct(th.get('unusable_steal_share'), 0)} steal."
    )


def machine_section(result: Mapping[str, Any]) -> list[str]:
    """HTML blocks for the ``hygiene`` section; empty when the result has none (an older file)."""
    h = result.get("hygiene")
    if not isinstance(h, Mapping):
        return []
    out = ["<h2>Machine during the run</h2>", table(["", ""], _figure_rows(h))]
    stab = h.get("stability") or {}
    if stab:
        out.append(_stability_table(stab))
    note = f"{_thresholds(h.get('thresholds') or {})} Summary: {machine_row(result) or DASH}."
    out.append(f"<p class='note'>{esc(note)}</p>")
    return out
