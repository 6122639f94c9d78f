"""The HTML report's charts, built from a result dict (docs/results.md) and, when the run came from the
store, its per-request records.

Each builder returns an SVG string, or None when the data it needs is absent (a baseline-only run, a
result file without per-request records); the page then says why the chart is missing instead of
drawing an empty frame.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specmeter.metrics.latency import chunk_gaps, stall_indexes
from specmeter.metrics.records import BASELINE, RequestRecord, run_label
from specmeter.report.fmt import as_float, dig, fmt_bytes, fmt_ms, fmt_speedup
from specmeter.report.html_svg import (
    BASELINE_COLOR,
    DANGER_COLOR,
    PALETTE,
    Bar,
    Lane,
    Row,
    Series,
    dot_whisker,
    ecdf,
    grouped_bars,
    hbars,
    line_chart,
    timeline,
)

__all__ = [
    "acceptance_chart",
    "candidate_label",
    "estimated_keys",
    "gap_chart",
    "k_chart",
    "memory_chart",
    "models_chart",
    "position_definition",
    "positions_chart",
    "speedup_chart",
    "timeline_chart",
    "traffic_chart",
]

Records = Mapping[str, Sequence[RequestRecord]]  # run label (records.run_label) -> records


def _ci(summary: Any, key: str) -> tuple[float | None, float | None]:
    ci = dig(summary, key)
    if isinstance(ci, list) and len(ci) == 2:
        return as_float(ci[0]), as_float(ci[1])
    return None, None


def candidate_label(c: Mapping[str, Any]) -> str:
    return run_label(str(c.get("draft")), int(c.get("k") or 0))


def _server_used(c: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The server's acceptance block a ``load`` level's summary took its figures from (None: not a load
    level, steps rebuilt exactly, or no figures from the server)."""
    server = c.get("server")
    if not isinstance(server, Mapping):
        return None
    block = {"metrics": server.get("metrics"), "per_request": server.get("per_request")}.get(
        str(server.get("used") or "")
    )
    return block if isinstance(block, Mapping) else None


def estimated_keys(c: Mapping[str, Any]) -> list[str]:
    """Summary keys the server's figures only estimate: TGI exports no drafted-token count, so D, α, R and β
    assume every draft had k tokens (docs/monitoring.md)."""
    return [str(k) for k in dig(_server_used(c), "estimated") or []]


def position_definition(c: Mapping[str, Any]) -> str:
    """What a candidate's ``per_position`` rates are: ``"P_i"`` (specmeter's, or counters that show every
    draft had k tokens) or ``"per_draft"`` (a server's counters ÷ all drafts: V_i, docs/metrics.md)."""
    summary = c.get("summary")
    given = dig(summary, "per_position_definition") if isinstance(summary, Mapping) else None
    if given is None and isinstance(summary, Mapping) and "per_position_definition" not in summary:
        given = dig(_server_used(c), "per_position_definition")  # a load result written before the key
    return "per_draft" if given == "per_draft" else "P_i"


def _cands(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in result.get("candidates") or [] if isinstance(c, Mapping)]


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _rows_by_category(result: Mapping[str, Any], value_key: str, ci_key: str, danger: float) -> list[Row]:
    rows = []
    for i, c in enumerate(_cands(result)):
        parts = [("all", c.get("summary")), *sorted((c.get("by_category") or {}).items())]
        approx = value_key in estimated_keys(c)  # the server's level-wide figure, estimated (TGI's α)
        for category, s in parts:
            value = as_float(dig(s, value_key))
            lo, hi = _ci(s, ci_key)
            color = DANGER_COLOR if value is not None and value < danger else _color(i)
            text = ("≈" if approx and category == "all" and value is not None else "") + _text(value, lo, hi)
            rows.append(Row(f"{candidate_label(c)} · {category}", value, lo, hi, color, text))
    return rows


def _text(value: float | None, lo: float | None, hi: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}" + (f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else "")


def acceptance_chart(result: Mapping[str, Any]) -> str | None:
    rows = _rows_by_category(result, "acceptance_rate", "acceptance_rate_ci", 0.5)
    if not any(r.value is not None for r in rows):
        return None
    return dot_whisker("acceptance", "Draft acceptance rate α with 95% interval, per candidate and category",
                       rows, x_label="α = accepted / drafted", domain=(0.0, 1.0),
                       reference=(0.5, "danger < 0.5"))  # fmt: skip


def speedup_chart(result: Mapping[str, Any]) -> str | None:
    rows = _rows_by_category(result, "speedup_measured", "speedup_measured_ci", 1.0)
    if not any(r.value is not None for r in rows):
        return None
    return dot_whisker("speedup", "Measured speedup E_meas with 95% interval, per candidate and category",
                       rows, x_label="E_meas = baseline time / speculative time",
                       reference=(1.0, "no gain = 1.0"), fmt=lambda v: f"{v:.2g}×")  # fmt: skip


def positions_chart(result: Mapping[str, Any]) -> str | None:
    """P_i (solid) and q_i (dashed) per candidate; a ``load`` level read from a server's counters has the
    per-draft rates V_i and their conditional form instead, and the chart says which it shows."""
    series = []
    definitions = set()
    for i, c in enumerate(_cands(result)):
        pos = dig(c, "summary", "per_position") or []
        entries = [p for p in pos if isinstance(p, Mapping) and as_float(p.get("position")) is not None]
        if not entries:
            continue
        definition = position_definition(c)
        definitions.add(definition)
        name = "V_i (per draft)" if definition == "per_draft" else "cumulative"
        cum = [(float(p["position"]), as_float(p.get("cumulative"))) for p in entries]
        cond = [(float(p["position"]), as_float(p.get("conditional"))) for p in entries]
        series.append(Series(f"{candidate_label(c)} {name}", cum, _color(i)))
        series.append(Series(f"{candidate_label(c)} conditional", cond, _color(i), dashed=True, legend=False))
    if not series:
        return None
    if definitions == {"per_draft"}:
        title = "Per-draft acceptance from the server's counters (solid: V_i, dashed: conditional)"
    elif "per_draft" in definitions:
        title = "Per-position acceptance (solid: P_i, or V_i where marked per draft; dashed: conditional)"
    else:
        title = "Per-position acceptance (solid: P_i, dashed: conditional q_i)"
    return line_chart("positions", title, series, x_label="draft position", y_label="acceptance",
                      y_domain=(0.0, 1.0))  # fmt: skip


_MODELS = (
    ("E_meas", "speedup_measured"),
    ("E_seed", "speedup_seed"),
    ("E_lev", "speedup_leviathan"),
    ("E_cal", "speedup_calibrated"),
)


def models_chart(result: Mapping[str, Any]) -> str | None:
    groups = []
    for c in _cands(result):
        s = c.get("summary")
        bars = []
        for name, key in _MODELS:
            lo, hi = _ci(s, "speedup_measured_ci") if key == "speedup_measured" else (None, None)
            bars.append(Bar(name, as_float(dig(s, key)), lo, hi))
        groups.append((candidate_label(c), bars))
    if not any(b.value is not None for _, bars in groups for b in bars):
        return None
    colors = {"E_meas": "#111827", "E_seed": PALETTE[2], "E_lev": PALETTE[3], "E_cal": PALETTE[4]}
    return grouped_bars("models", "Measured speedup against the three models", groups, colors,
                        y_label="speedup", reference=(1.0, "1.0"), fmt=fmt_speedup)  # fmt: skip


def k_chart(result: Mapping[str, Any]) -> str | None:
    """Measured E_meas per k benched, and E_cal(k) as the longest k's run predicts it (the summary's
    ``speedup_calibrated_by_k``, docs/metrics.md "choosing k")."""
    by_draft: dict[str, list[Mapping[str, Any]]] = {}
    for c in _cands(result):
        by_draft.setdefault(str(c.get("draft")), []).append(c)
    series = []
    for i, (draft, cands) in enumerate(by_draft.items()):
        cands = sorted(cands, key=lambda c: int(c.get("k") or 0))
        measured = [(float(c.get("k") or 0), as_float(dig(c, "summary", "speedup_measured"))) for c in cands]
        rows = dig(cands[-1], "summary", "speedup_calibrated_by_k")
        predicted = [
            (float(k), as_float(row.get("speedup_calibrated")))
            for row in (rows if isinstance(rows, list) else [])
            if isinstance(row, Mapping) and (k := as_float(row.get("k"))) is not None
        ]
        if any(y is not None for _, y in measured):
            series.append(Series(f"{draft} measured", measured, _color(i)))
        if any(y is not None for _, y in predicted):
            series.append(Series(f"{draft} E_cal(k) predicted", predicted, _color(i), dashed=True))
    if not series:
        return None
    title = "Speedup against draft length k (dashed: predicted from the longest k's per-position rates)"
    return line_chart("k", title,
                      series, x_label="k (draft tokens per step)", y_label="speedup",
                      reference=(1.0, "1.0"), fmt=fmt_speedup)  # fmt: skip


def _slot_colors(records: Records) -> dict[str, str]:
    colors, i = {}, 0
    for slot in records:
        if slot == BASELINE:
            colors[slot] = BASELINE_COLOR
        else:
            colors[slot], i = _color(i), i + 1
    return colors


def gap_chart(result: Mapping[str, Any], records: Records | None) -> str | None:
    """Chunk-gap distribution: ECDF from the records, else the summary's quantiles as bars."""
    if records:
        colors = _slot_colors(records)
        series = [
            (slot, [g * 1000.0 for r in recs for g in chunk_gaps(r)], colors[slot])
            for slot, recs in records.items()
        ]
        if any(vals for _, vals, _ in series):
            return ecdf("gaps", "Chunk gaps: cumulative distribution (further right = longer pauses)", series,
                        x_label="gap between emissions (ms, log scale)")  # fmt: skip
    groups = []
    for label, s in [(BASELINE, dig(result, "baseline", "summary"))] + [
        (candidate_label(c), c.get("summary")) for c in _cands(result)
    ]:
        bars = [Bar(q, as_float(dig(s, "gap_ms", q))) for q in ("p50", "p90", "p99")]
        groups.append((label, bars))
    if not any(b.value is not None for _, bars in groups for b in bars):
        return None
    colors = {"p50": PALETTE[0], "p90": PALETTE[2], "p99": DANGER_COLOR}
    return grouped_bars(
        "gaps", "Chunk gaps: p50 / p90 / p99 per run", groups, colors, y_label="gap (ms)", fmt=fmt_ms
    )


def _stall_indexes(rec: RequestRecord) -> set[int]:
    """Indexes (into the token-carrying emissions) of emissions that ended a stall."""
    return {i + 1 for i in stall_indexes(rec)}


def timeline_chart(records: Records | None, request_id: str | None = None) -> tuple[str, str] | None:
    """(svg, request id): every run of one request side by side; by default the most-stalling request."""
    if not records:
        return None
    if request_id is None:
        worst = max((r for slot, recs in records.items() if slot != BASELINE for r in recs),
                    key=lambda r: len(_stall_indexes(r)), default=None)  # fmt: skip
        if worst is None:
            worst = next((r for recs in records.values() for r in recs), None)
        if worst is None:
            return None
        request_id = worst.id
    colors = _slot_colors(records)
    lanes = []
    for slot, recs in records.items():
        rec = next((r for r in recs if r.id == request_id), None)
        if rec is None:
            continue
        events = [(e.t * 1000.0, e.tokens) for e in rec.emissions if e.tokens > 0]
        lanes.append(Lane(slot, events, _stall_indexes(rec), colors[slot]))
    if not any(lane.events for lane in lanes):
        return None
    title = f"Request {request_id!s}: when tokens appeared (tick height = tokens per emission)"
    return timeline("timeline", title, lanes), request_id


def memory_chart(result: Mapping[str, Any]) -> str | None:
    rows = []
    for c in _cands(result):
        s = c.get("summary")
        w_t, w_d = as_float(dig(s, "weight_bytes", "target")), as_float(dig(s, "weight_bytes", "draft"))
        extra = as_float(dig(s, "extra_memory_bytes"))
        kv_d = extra - w_d if extra is not None and w_d is not None else None
        segs = [
            (w_t or 0.0, BASELINE_COLOR, "target weights W_T"),
            (w_d or 0.0, PALETTE[0], "draft weights W_D"),
            (kv_d or 0.0, "#f59e0b", "draft KV cache"),
        ]
        rows.append((candidate_label(c), segs))
    if not any(v > 0 for _, segs in rows for v, _, _ in segs):
        return None
    return hbars("memory", "Memory held per sequence: target weights + what speculation adds", rows,
                 x_label="bytes", fmt=fmt_bytes)  # fmt: skip


def traffic_chart(result: Mapping[str, Any]) -> str | None:
    rows = []
    base = as_float(dig(result, "baseline", "summary", "weight_traffic_per_token"))
    if base is not None:
        rows.append((BASELINE, [(base, BASELINE_COLOR, BASELINE)]))
    for i, c in enumerate(_cands(result)):
        value = as_float(dig(c, "summary", "weight_traffic_per_token"))
        if value is not None:
            rows.append((candidate_label(c), [(value, _color(i), candidate_label(c))]))
    if len(rows) < 1:
        return None
    return hbars("traffic", "Weight bytes read per emitted token (lower = less memory bandwidth per token)",
                 rows, x_label="bytes per token", fmt=fmt_bytes, legend=False)  # fmt: skip
