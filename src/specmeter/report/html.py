"""``specmeter report``: one self-contained HTML file per run — no CDN, no JavaScript, works offline.

Sections follow the decision an engineer has to explain: the verdict; α and E_meas per candidate and
category with intervals; per-position acceptance; the four speedup models against the measured one;
speedup against k; the chunk-gap distribution and a per-request timeline (stutter); memory and weight
traffic; ROI. Charts are inline SVG from ``report.html_svg``. Every user-supplied string (names,
categories, request ids, paths) is escaped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specmeter import __version__
from specmeter.economics.roi import RoiInputs, compute_roi
from specmeter.metrics.records import BASELINE
from specmeter.report.fmt import (
    DASH,
    as_float,
    dig,
    fmt_bytes,
    fmt_int,
    fmt_ms,
    fmt_num,
    fmt_pct,
    fmt_rate,
    fmt_speedup,
    with_ci,
)
from specmeter.report.html_charts import (
    Records,
    acceptance_chart,
    candidate_label,
    estimated_keys,
    gap_chart,
    k_chart,
    memory_chart,
    models_chart,
    position_definition,
    positions_chart,
    speedup_chart,
    timeline_chart,
    traffic_chart,
)
from specmeter.report.html_machine import machine_section
from specmeter.report.html_parts import table
from specmeter.report.html_svg import esc
from specmeter.report.html_sweep import sweep_section
from specmeter.report.html_whatif import whatif_section
from specmeter.report.outfile import FORMATS, write_text_atomic
from specmeter.report.view import (
    bandwidth,
    danger_note,
    danger_tags,
    hygiene_line,
    method_text,
    stability_lines,
    verdict,
    vllm_check_lines,
)

__all__ = ["render_report", "write_report"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#111827;margin:0;background:#f9fafb}
main{max-width:1040px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb}
.meta{color:#4b5563}.verdict{padding:12px 16px;border-radius:6px;font-weight:600;margin:16px 0}
.ok{background:#dcfce7;color:#14532d}.bad{background:#fee2e2;color:#7f1d1d}.warn{background:#fef3c7;color:#78350f}
table{border-collapse:collapse;width:100%;margin:8px 0;font-size:13px;background:#fff}
th,td{border:1px solid #e5e7eb;padding:4px 6px;text-align:left;vertical-align:top}th{background:#f3f4f6}
td.danger{color:#b91c1c;font-weight:600}.note{color:#6b7280;font-size:12px}
svg.chart{width:100%;height:auto;background:#fff;border:1px solid #e5e7eb;border-radius:4px;margin:8px 0}
svg .ctitle{font-size:13px;font-weight:600;fill:#111827}
svg .legend,svg .tl,svg .rv{font-size:11px;fill:#374151}
svg .rl{font-size:11px;fill:#111827}svg .al{font-size:11px;fill:#6b7280}
svg .axis{stroke:#6b7280}svg .tick{stroke:#6b7280}svg .grid{stroke:#eef0f3}
svg .ref{stroke:#dc2626;stroke-dasharray:4 3}svg .reflabel{font-size:10px;fill:#dc2626}
svg .whisker{stroke:#111827;stroke-width:2}
"""


def _danger(s: Any) -> str:
    """A category row's cell: the figures that put it in the danger zone, not the full sentence (that is
    said once per candidate, in the candidates table)."""
    flag = dig(s, "danger_zone")
    if flag is True:
        return "DANGER: " + "; ".join(danger_tags(s))
    return "ok" if flag is False else DASH


def _candidate_danger(c: Any) -> str:
    """A candidate row's cell: its reasons in full and its categories in the danger zone, compactly."""
    note = danger_note(c, label=False) if isinstance(c, Mapping) else None
    if note is not None:
        return "DANGER: " + note
    return "ok" if dig(c, "summary", "danger_zone") is False else DASH


def _alpha(s: Any, approx: bool = False) -> str:
    rate = fmt_rate(dig(s, "acceptance_rate"), dig(s, "accepted_tokens"), dig(s, "drafted_tokens"))
    mark = "≈" if approx and dig(s, "acceptance_rate") is not None else ""
    return mark + with_ci(rate, dig(s, "acceptance_rate_ci"))


def _e_meas(s: Any) -> str:
    return with_ci(fmt_speedup(dig(s, "speedup_measured")), dig(s, "speedup_measured_ci"))


def _dist(s: Any, key: str, q: str) -> str:
    return fmt_ms(dig(s, key, q))


_CANDIDATE_HEADERS = (
    "candidate", "method", "α (count) [95% CI]", "β", "τ", "E_meas [95% CI]", "E_seed / E_lev / E_cal",
    "TTFT p50", "TPOT p50", "gap p99", "jitter", "stalls", "extra memory", "danger zone",
)  # fmt: skip
_CATEGORY_HEADERS = (
    "category", "candidate", "requests", "α (count) [95% CI]", "τ", "E_meas [95% CI]", "jitter",
    "danger zone",
)  # fmt: skip


def _latency_cells(s: Any) -> list[str]:
    return [
        _dist(s, "ttft_ms", "p50"),
        _dist(s, "tpot_ms", "p50"),
        _dist(s, "gap_ms", "p99"),
        fmt_num(dig(s, "jitter")),
        fmt_int(dig(s, "stalls")),
    ]


def _candidates_table(result: Mapping[str, Any]) -> str:
    rows = []
    base = dig(result, "baseline", "summary")
    if isinstance(base, Mapping):
        rows.append([BASELINE, DASH, DASH, DASH, DASH, "1.00×", DASH, *_latency_cells(base), DASH, DASH])
    notes = []
    for c in result.get("candidates") or []:
        s = c.get("summary") if isinstance(c, Mapping) else None
        estimated = estimated_keys(c) if isinstance(c, Mapping) else []
        if estimated:
            notes.append(f"{candidate_label(c)}: {', '.join(estimated)}")
        models = " / ".join(
            fmt_speedup(dig(s, k)) for k in ("speedup_seed", "speedup_leviathan", "speedup_calibrated")
        )
        beta = with_ci(fmt_num(dig(s, "beta"), 3), dig(s, "beta_ci"))
        if "beta" in estimated and dig(s, "beta") is not None:
            beta = "≈" + beta
        tau = with_ci(fmt_num(dig(s, "acceptance_length")), dig(s, "acceptance_length_ci"))
        extra = fmt_bytes(dig(s, "extra_memory_bytes"))
        rows.append(
            [
                candidate_label(c),
                method_text(c) if isinstance(c, Mapping) else DASH,
                _alpha(s, "acceptance_rate" in estimated),
                beta,
                tau,
                _e_meas(s),
                models,
                *_latency_cells(s),
                extra,
                _candidate_danger(c),
            ]
        )
    note = (
        "<p class='note'>≈ estimated assuming every draft had k tokens (the server exports no drafted-token "
        f"count, so D is S·k): {esc('; '.join(notes))}.</p>"
        if notes
        else ""
    )
    return table(_CANDIDATE_HEADERS, rows, danger_col=13) + note


def _positions_note(result: Mapping[str, Any]) -> str:
    """Says what a server's per-position counters measure, when the chart shows them."""
    if not any(
        position_definition(c) == "per_draft" and dig(c, "summary", "per_position")
        for c in result.get("candidates") or []
        if isinstance(c, Mapping)
    ):
        return ""
    return (
        "<p class='note'>Per draft (from the server's counters): V_i = drafts that accepted position i "
        "÷ all drafts, not P_i (÷ the steps that drafted that far); no server exports how far each draft "
        "went. V_i ≤ P_i, equal when every draft had k tokens (docs/metrics.md, per-draft rate).</p>"
    )


_LOAD_HEADERS = (
    "level", "held (in flight)", "completed", "failed", "TTFT p50 / p99", "TPOT p50", "gap p99", "tok/s",
    "E_meas [95% CI]",
)  # fmt: skip


def _load_table(result: Mapping[str, Any]) -> str | None:
    """A ``load`` result's levels: the nominal level beside the concurrency actually held."""
    if result.get("kind") != "load":
        return None
    rows = []
    for c in result.get("candidates") or []:
        if not isinstance(c, Mapping):
            continue
        level = (
            f"c={c['concurrency']}" if c.get("concurrency") is not None else f"{fmt_num(c.get('rate'))} req/s"
        )
        for role, part in (("", c), (" baseline", c.get("baseline"))):
            if not isinstance(part, Mapping):
                continue
            s, load = part.get("summary"), part.get("load")
            ttft = f"{_dist(s, 'ttft_ms', 'p50')} / {_dist(s, 'ttft_ms', 'p99')}"
            rows.append(
                [
                    level + role,
                    fmt_num(dig(load, "effective_concurrency")),
                    fmt_int(dig(load, "completed")),
                    fmt_int(dig(load, "failed")),
                    ttft,
                    _dist(s, "tpot_ms", "p50"),
                    _dist(s, "gap_ms", "p99"),
                    fmt_num(dig(load, "output_tokens_per_s"), 0),
                    _e_meas(s) if not role else DASH,
                ]
            )
    note = (
        "<p class='note'>held: requests in flight, time-weighted over the level (Σ request spans / wall "
        "time); a closed loop holds less than its nominal concurrency by the turnaround between requests "
        "and each block's ramp-down.</p>"
    )
    return table(_LOAD_HEADERS, rows) + note if rows else None


def _category_table(result: Mapping[str, Any]) -> str | None:
    rows = []
    for c in result.get("candidates") or []:
        for category, s in sorted((dig(c, "by_category") or {}).items()):
            tau = fmt_num(dig(s, "acceptance_length"))
            requests = fmt_int(dig(s, "requests"))
            jitter = fmt_num(dig(s, "jitter"))
            rows.append(
                [str(category), candidate_label(c), requests, _alpha(s), tau, _e_meas(s), jitter, _danger(s)]
            )
    return table(_CATEGORY_HEADERS, rows, danger_col=7) if rows else None


def _bandwidth_table(result: Mapping[str, Any]) -> str | None:
    """Weight traffic per token, the bandwidth it takes at the measured decode rate, and its share of the
    device's measured copy bandwidth (docs/metrics.md, "Memory and bandwidth")."""
    runs = [(BASELINE, dig(result, "baseline", "summary"))]
    runs += [
        (candidate_label(c), c.get("summary"))
        for c in result.get("candidates") or []
        if isinstance(c, Mapping)
    ]
    rows = [
        [label, fmt_bytes(dig(s, "weight_traffic_per_token")), fmt_num(dig(s, "decode_tokens_per_s"), 1),
         bandwidth(s)]
        for label, s in runs
        if isinstance(s, Mapping)
    ]  # fmt: skip
    if not any(row[3] != DASH for row in rows):
        return None
    headers = ["run", "weight bytes / token", "decode tokens/s", "weight bandwidth (share of copy)"]
    note = (
        "Weights only (KV cache and activations not counted), single stream; the copy bandwidth is "
        "measured on the same device beside the cost curve."
    )
    return table(headers, rows) + f"<p class='note'>{esc(note)}</p>"


def _roi_section(result: Mapping[str, Any], roi: RoiInputs | None) -> str:
    rows = []
    for c in result.get("candidates") or []:
        e = as_float(dig(c, "summary", "speedup_measured"))
        if e is None or e <= 0:
            continue
        if roi is None:
            rows.append([candidate_label(c), fmt_speedup(e), fmt_pct(1 / e - 1)])
            continue
        r = compute_roi(dataclasses.replace(roi, speedup=e))
        rows.append([candidate_label(c), fmt_speedup(e), f"{r.cost_before:,.0f}", f"{r.cost_after:,.0f}",
                     f"{r.monthly_savings:,.0f}", fmt_pct(r.savings_fraction), fmt_num(r.roi),
                     _payback(r.payback_months)])  # fmt: skip
    if not rows:
        return "<p class='note'>No measured speedup, so no ROI.</p>"
    if roi is None:
        return (
            table(["candidate", "E_meas", "GPU time per token"], rows)
            + "<p class='note'>Pass --monthly-tokens, --baseline-throughput, --baseline-price, "
            "--spec-price and --engineering-cost to turn this into money "
            "(see <code>specmeter roi</code>).</p>"
        )
    headers = ["candidate", "E_meas", "monthly cost before", "after", "monthly savings", "saving",
               f"ROI ({roi.horizon_months:g} months)", "payback (months)"]  # fmt: skip
    note = (
        f"{roi.monthly_tokens:,.0f} tokens/month at {roi.baseline_throughput:,.0f} tokens/s per instance; "
        f"instance prices {roi.baseline_price:g} (baseline) and {roi.spec_price:g} (with the draft) "
        "per hour; "
        f"engineering cost {roi.engineering_cost:,.0f}. ROI = (GPU-time cost saved − extra memory cost) × "
        "months / engineering cost."
    )
    return table(headers, rows) + f"<p class='note'>{esc(note)}</p>"


MAX_LISTED_FAILURES = 50


def _failures_section(records: Records | None) -> str:
    """Requests that failed or were cut short (``RequestRecord.error``); nothing when there are none."""
    failed = [(run, r) for run, recs in (records or {}).items() for r in recs if r.error is not None]
    if not failed:
        return ""
    rows = [
        [run, r.id, r.category, r.finish_reason, fmt_int(r.output_tokens), str(r.error)]
        for run, r in failed[:MAX_LISTED_FAILURES]
    ]
    more = len(failed) - len(rows)
    note = f"{len(failed)} requests failed or were cut short" + (
        f"; the first {len(rows)} are listed." if more else "."
    )
    return (
        "<h2>Failed requests</h2>"
        + table(["run", "request", "category", "finish", "output tokens", "error"], rows)
        + f"<p class='note'>{esc(note)}</p>"
    )


_NO_TIMELINE = (
    "<p class='note'>The per-request timeline needs the run's request records: report a stored run "
    "(specmeter report RUN_ID) rather than a JSON file.</p>"
)


def _figure(svg: str | None, missing: str) -> str:
    return svg if svg is not None else f"<p class='note'>{esc(missing)}</p>"


def render_report(
    result: Mapping[str, Any],
    *,
    records: Records | None = None,
    source: str = "",
    notes: Sequence[str] = (),
    roi: RoiInputs | None = None,
    request_id: str | None = None,
) -> str:
    """The whole report as one HTML string. ``records`` (slot → request records) enable the gap ECDF and
    the timeline; without them those sections fall back to the summary or say what is missing."""
    config = dig(result, "run", "config") or {}
    drafts = config.get("drafts")
    meta = [
        ("source", source or DASH),
        ("kind", str(result.get("kind", DASH))),
        ("started", str(dig(result, "run", "started_at") or DASH)),
        ("target", str(config.get("target", DASH))),
        ("drafts", ", ".join(map(str, drafts)) if isinstance(drafts, list) else DASH),
        ("prompts", str(config.get("prompts", DASH))),
        ("k", ", ".join(map(str, config.get("k") or [])) or DASH),
        (
            "sampling",
            f"temperature {fmt_num(config.get('temperature'))}, top_p {fmt_num(config.get('top_p'))}",
        ),
        ("max tokens", fmt_int(config.get("max_tokens"))),
    ]
    vllm = result.get("vllm")
    if isinstance(vllm, Mapping):
        settings = vllm.get("settings") or {}
        meta.append(
            (
                "engine",
                f"vLLM {vllm.get('version', DASH)}, {settings.get('method', DASH)}, runs one after another",
            )
        )
    line = verdict(result)
    cls = "bad" if "danger" in line.plain.lower() or "no candidate pays off" in line.plain else "ok"
    if "no measured speedup" in line.plain:
        cls = "warn"
    all_notes = list(notes)
    all_notes += [t.plain for t in vllm_check_lines(result) if t.style != "green"]
    all_notes += [t.plain.lstrip("⚠ ") for t in stability_lines(result)]
    if result.get("complete") is False:
        all_notes.insert(0, "Interrupted run: partial results, everything measured up to the interruption.")
    busy = hygiene_line(result)
    busy_box = []
    if busy is not None:
        level = "bad" if dig(result, "hygiene", "verdict") == "unusable" else "warn"
        busy_box = [f"<p class='verdict {level}'>{esc(busy.plain.lstrip('⚠ '))}</p>"]
    timeline = timeline_chart(records, request_id)
    body = [
        f"<h1>specmeter report: {esc(config.get('target', result.get('kind', 'run')))}</h1>",
        "<p class='meta'>" + " · ".join(f"<b>{esc(k)}</b> {esc(v)}" for k, v in meta) + "</p>",
        *busy_box,
        *(f"<p class='verdict warn'>{esc(n)}</p>" for n in all_notes),
        f"<p class='verdict {cls}'>{esc(line.plain)}</p>",
        *(["<h2>Load levels</h2>", load] if (load := _load_table(result)) else []),
        *sweep_section(result),
        *whatif_section(result),
        "<h2>Candidates</h2>",
        _candidates_table(result),
        _failures_section(records),
        "<h2>Acceptance and speedup per category</h2>",
        _figure(acceptance_chart(result), "No candidate drafted anything: no acceptance rate."),
        _figure(speedup_chart(result), "No measured speedup (no baseline or no candidate)."),
        _category_table(result) or "",
        "<h2>Per-position acceptance</h2>",
        _figure(positions_chart(result), "No per-position rates in this result."),
        _positions_note(result),
        "<h2>Speedup: measured against the models</h2>",
        _figure(models_chart(result), "No speedup figures in this result."),
        _figure(k_chart(result), "No speedup-against-k data in this result."),
        "<h2>Stutter: chunk gaps and a request timeline</h2>",
        _figure(gap_chart(result, records), "No chunk gaps in this result."),
        timeline[0] if timeline else _NO_TIMELINE,
        "<h2>Memory and bandwidth</h2>",
        _figure(memory_chart(result), "No memory figures in this result."),
        _figure(traffic_chart(result), "No weight-traffic figures in this result."),
        _bandwidth_table(result) or "",
        "<h2>Return on investment</h2>",
        _roi_section(result, roi),
        *machine_section(result),
        f"<p class='note'>Generated by specmeter {esc(__version__)}. Definitions: docs/metrics.md.</p>",
    ]  # fmt: skip
    title = f"specmeter report — {config.get('target', '')}"
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta name='generator' content='specmeter'>"
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body><main>\n"
        + "\n".join(body)
        + "\n</main></body></html>\n"
    )


def _payback(months: float | None) -> str:
    """The payback cell: months, ``immediate`` with nothing to pay back (docs/economics.md), — never."""
    if months is None:
        return DASH
    return "immediate" if months == 0 else f"{months:.1f}"


def write_report(path: Path, text: str) -> None:
    """Write atomically (a reader never sees half a report), over nothing but a specmeter report
    (``report.outfile``: the generator tag in the head says whose it is)."""
    write_text_atomic(path, text, FORMATS["html"], fsync=False)
