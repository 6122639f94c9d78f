"""A sweep's results: the E_meas(k, level) matrix with drift in its intervals, best k per level, the schedule.

Every cell (a speculative configuration at a level) is summarised by ``load.result.level_entry`` against the
baseline's run at the same level — the same requests, paired by prompt id — so its E_meas, paired
bootstrap interval, acceptance (per-request reports or /metrics counter deltas, ``server.used``), latency
percentiles and stalls are exactly those of ``load``. The sweep adds:

- **Drift (A … A).** The baseline runs first and again last. Each cell's E is computed against both runs;
  the cell's E is their geometric mean and its interval the union of the two paired intervals, so a
  machine that drifted between the runs widens the interval instead of biasing the figure; decode-only E
  likewise, and the cell's full entry (summary and groups) carries the same figures (``against_both``).
  The drift
  itself, per level, is the first run's time over the last run's on the same requests
  (E of "k=0 (end)" against "k=0"), with its paired interval: 1 = no drift.
- **Counters per cell.** The server's /metrics counter deltas around the cell (drafted, accepted) beside the
  sums of its per-request reports; on a server that served nothing else they are equal
  (``counters_equal``).
- **Failures.** A cell (or another run's level) none of whose requests completed is one line in
  ``failures`` (``k=4 at c=16: none of the 8 requests completed (first failure: …)``) beside the
  configurations' own; such a cell has no E and is never a candidate for the best k.
- **Best k per level** (k = 0 included: its E is 1 by definition), over the levels where at least one
  speculative cell has an E (a level where nothing could be compared has no best k), and the schedule
  that follows (``engine.schedule.KSchedule.from_best`` over the concurrency levels), as vLLM's
  ``num_speculative_tokens_per_batch_size`` and as ``serve --k-schedule``.
- **Validation** (``--validate``): the schedule's own server at each level of a ramp across its switch
  points, against the best static k measured at that level; at a switch point between two grid levels,
  against the best static k interpolated between them (``best_static_interpolated``).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specmeter.engine.schedule import KSchedule, ScheduleError
from specmeter.load.config import Phase
from specmeter.load.level import PhaseResult, RoleResult
from specmeter.load.result import level_entry
from specmeter.metrics.summary import judge
from specmeter.sweep.config import BASELINE_NAME, SweepConfig
from specmeter.sweep.search import capacity_section, level_slo
from specmeter.sweep.state import END, ConfigRun, SweepRun, none_completed

__all__ = [
    "SweepView",
    "against_both",
    "below_best_static",
    "build_view",
    "combine_drift",
    "interpolated_static",
    "schedule_from_section",
]


@dataclass
class SweepView:
    section: dict[str, Any]
    entries: list[dict[str, Any]]  # full level entries (load's shape), one per measured cell


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def combine_drift(
    first: float | None, first_ci: Sequence[float] | None, end: float | None, end_ci: Sequence[float] | None
) -> tuple[float | None, list[float] | None]:
    """E against both baseline runs: the geometric mean of the two, the union of their intervals.

    With one baseline run only, its figure and interval. An interval missing on either side (too few
    requests) leaves the combined one missing: an envelope of one side would look tighter than it is.
    """
    if first is None or end is None:
        figure = first if first is not None else end
        ci = first_ci if first is not None else end_ci
        return figure, list(ci) if ci else None
    figure = math.sqrt(first * end)
    if not first_ci or not end_ci:
        return figure, None
    return figure, [min(first_ci[0], end_ci[0]), max(first_ci[1], end_ci[1])]


_GROUPS = ("by_category", "by_input_length", "by_temperature")


def _combine_summary(summary: dict[str, Any], end: Mapping[str, Any]) -> None:
    """``summary`` (against the first baseline run) made the sweep's: E, its interval and decode-only E
    against both runs (:func:`combine_drift`), the danger-zone verdict recomputed with that E."""
    e, ci = combine_drift(
        _num(summary.get("speedup_measured")), summary.get("speedup_measured_ci"),
        _num(end.get("speedup_measured")), end.get("speedup_measured_ci"),
    )  # fmt: skip
    decode, _ = combine_drift(
        _num(summary.get("speedup_measured_decode")), None, _num(end.get("speedup_measured_decode")), None
    )
    summary.update(speedup_measured=e, speedup_measured_ci=ci, speedup_measured_decode=decode)
    summary.update(judge(summary))


def against_both(entry: dict[str, Any], end_entry: Mapping[str, Any]) -> None:
    """A cell's full entry, computed against the first baseline run, turned into the sweep's: its summary and
    every group's (category, input length, temperature) carry E against both runs (docs/metrics.md, "E_meas
    in a sweep"), so a stored sweep, ``runs list``, ``report`` and ``roi RUN`` read the figure the sweep
    prints. The cell keeps the one-sided figures (``e_first``, ``e_end``)."""
    _combine_summary(entry["summary"], end_entry["summary"])
    for key in _GROUPS:
        ends = end_entry.get(key) or {}
        for group, part in (entry.get(key) or {}).items():
            if group in ends:
                _combine_summary(part, ends[group])


def _pct(summary: Mapping[str, Any], key: str) -> dict[str, float | None] | None:
    block = summary.get(key)
    if not isinstance(block, Mapping):
        return None
    return {"p50": _num(block.get("p50")), "p99": _num(block.get("p99"))}


def _counters(server: Mapping[str, Any]) -> dict[str, Any]:
    metrics = server.get("metrics") or {}
    reports = server.get("per_request") or {}
    out = {
        "drafted": metrics.get("drafted_tokens"),
        "accepted": metrics.get("accepted_tokens"),
        "steps": metrics.get("steps"),
        "per_request_drafted": reports.get("drafted_tokens"),
        "per_request_accepted": reports.get("accepted_tokens"),
    }
    both = out["drafted"] is not None and out["per_request_drafted"] is not None
    out["equal"] = (
        both
        and out["drafted"] == out["per_request_drafted"]
        and out["accepted"] == out["per_request_accepted"]
        if both
        else None
    )
    return out


def _entry(run: ConfigRun, label: str, baseline: RoleResult | None, cfg: SweepConfig) -> dict[str, Any]:
    role = run.levels[label]
    phase = next(p for p in run.phases if p.label == label)
    roles = {"speculative": role} | ({"baseline": baseline} if baseline is not None else {})
    last = run.phases[-1].label == label
    complete = not (last and run.status in ("failed", "interrupted"))
    entry = level_entry(
        PhaseResult(phase, roles, complete),
        label=run.run,
        k=run.config.k or None,
        temperature=cfg.load.temperature,
        top_p=cfg.load.top_p,
    )
    entry["k"] = run.config.k
    entry["run"] = run.run
    return entry


def _level_error(run: ConfigRun, label: str) -> str | None:
    """``k=4 at c=16: none of the 8 requests completed (…)`` for a level that measured nothing."""
    line = none_completed(run.levels[label].outcomes)
    return None if line is None else f"{run.run} at {label}: {line}"


def _failures(state: SweepRun) -> list[str]:
    """One line per failed configuration, then per level none of whose requests completed — except the
    levels a configuration's own line already names (the level it died in; every level, when its
    requests all failed)."""
    out = []
    for run in state.runs:
        if run.error:
            out.append(run.error)
            if not run.measured():
                continue
        last = run.phases[-1].label if run.phases else None
        for label in run.levels:
            line = _level_error(run, label)
            if line is not None and not (run.status == "failed" and label == last):
                out.append(line)
    return out


def _requests(state: SweepRun) -> dict[str, Any]:
    """Every request the sweep sent (grid, search, validation, both baseline runs): ``--max-error-rate``."""
    outcomes = [o for run in state.runs for o in run.outcomes()]
    failed = [o for o in outcomes if not o.ok]
    errors = Counter((o.error or "unknown").split(":")[0] for o in failed)
    return {
        "sent": len(outcomes),
        "completed": len(outcomes) - len(failed),
        "failed": len(failed),
        "errors": dict(errors.most_common()),
    }


def _cell(entry: Mapping[str, Any], end_summary: Mapping[str, Any] | None) -> dict[str, Any]:
    """The cell of one entry (E against the first baseline run in its summary) and ``end_summary``, the same
    requests against the last baseline run: E and decode-only E are both the geometric mean of the two."""
    s = entry["summary"]
    load = entry["load"]
    end_s: Mapping[str, Any] = end_summary or {}
    first, first_ci = _num(s.get("speedup_measured")), s.get("speedup_measured_ci")
    end, end_ci = _num(end_s.get("speedup_measured")), end_s.get("speedup_measured_ci")
    e, e_ci = combine_drift(first, first_ci, end, end_ci)
    decode_first, decode_end = (
        _num(s.get("speedup_measured_decode")),
        _num(end_s.get("speedup_measured_decode")),
    )
    per_position = s.get("per_position") or []
    return {
        "run": entry["run"],
        "k": entry["k"],
        "level": _label(entry),
        "concurrency": entry["concurrency"],
        "rate": entry["rate"],
        "complete": entry["complete"],
        "e": e,
        "e_ci": e_ci,
        "e_first": first,
        "e_first_ci": first_ci,
        "e_end": end,
        "e_end_ci": end_ci,
        "e_decode": combine_drift(decode_first, None, decode_end, None)[0],
        "e_decode_first": decode_first,
        "e_decode_end": decode_end,
        "alpha": _num(s.get("acceptance_rate")),
        "tau": _num(s.get("acceptance_length")),
        "per_position": [_num(p.get("cumulative")) for p in per_position if isinstance(p, Mapping)],
        "acceptance_source": entry["server"].get("used"),
        "counters": _counters(entry["server"]),
        "ttft_ms": _pct(s, "ttft_ms"),
        "tpot_ms": _pct(s, "tpot_ms"),
        "gap_ms": _pct(s, "gap_ms"),
        "gap_per_token_ms": _pct(s, "gap_per_token_ms"),
        "stalls": s.get("stalls"),
        "requests": s.get("requests"),
        "failed": load.get("failed"),
        "requests_per_s": load.get("requests_per_s"),
        "output_tokens_per_s": load.get("output_tokens_per_s"),
        "effective_concurrency": load.get("effective_concurrency"),
        "warmup_requests": load.get("warmup_requests"),
        "warmup_s": load.get("warmup_s"),
        "slow_start": load.get("slow_start"),
    }


def _label(entry: Mapping[str, Any]) -> str:
    return Phase(concurrency=entry.get("concurrency"), rate=entry.get("rate")).label


def _comparable(c: Mapping[str, Any]) -> bool:
    """A speculative cell with an E to compare (not a failed one): a candidate for the best static k."""
    return c["e"] is not None and not c.get("error") and str(c["run"]).startswith("k=")


def _best(cells: Sequence[Mapping[str, Any]], levels: Sequence[str]) -> list[dict[str, Any]]:
    """The best k per level: the highest E, k = 0 (E = 1) when no speculative cell beats it. A level where
    no speculative cell has an E (its requests, or the baseline's, all failed) has none: nothing there says
    which k is best, so it is left out (and out of the schedule)."""
    out = []
    for level in levels:
        candidates = [c for c in cells if c["level"] == level and _comparable(c)]
        if not candidates:
            continue
        best = max(candidates, key=lambda c: c["e"])
        if best["e"] <= 1.0:
            pick = {
                "k": 0,
                "e": 1.0,
                "e_ci": None,
                "sure": all(c["e_ci"] is not None and c["e_ci"][1] < 1.0 for c in candidates),
            }
        else:
            others = [c for c in candidates if c is not best]
            ci = best["e_ci"]
            sure = (
                ci is not None
                and ci[0] > 1.0
                and all(c["e_ci"] is not None and c["e_ci"][1] < ci[0] for c in others)
            )
            pick = {"k": best["k"], "e": best["e"], "e_ci": ci, "sure": sure}
        concurrency = next((c["concurrency"] for c in cells if c["level"] == level), None)
        out.append({"level": level, "concurrency": concurrency, **pick})
    return out


def _schedule(best: Sequence[Mapping[str, Any]], draft: str | None, method: str) -> dict[str, Any] | None:
    points = {int(b["concurrency"]): int(b["k"]) for b in best if b.get("concurrency")}
    if not points:
        return None
    try:
        schedule = KSchedule.from_best(points)
    except ScheduleError:
        return None
    return {
        "num_speculative_tokens_per_batch_size": schedule.to_json(),
        "describe": schedule.describe(),
        "speculative_config": schedule.vllm_config(method, draft),
        "serve": f"--k-schedule '{json.dumps(schedule.to_json())}'",
        "batch_size_from": "the level's concurrency (a closed loop at concurrency c keeps at most c requests "
        "in the batch)",
    }


def schedule_from_section(section: Mapping[str, Any]) -> KSchedule | None:
    block = section.get("schedule")
    if not isinstance(block, Mapping):
        return None
    schedule = KSchedule.parse(block["num_speculative_tokens_per_batch_size"])
    return schedule if schedule.max_k > 0 else None


def _drift(base: ConfigRun, end: ConfigRun, cfg: SweepConfig) -> list[dict[str, Any]]:
    out = []
    for label in end.levels:
        if label not in base.levels:
            continue
        entry = _entry(end, label, base.levels[label], cfg)
        s = entry["summary"]
        out.append({
            "level": label,
            "first_over_end": _num(s.get("speedup_measured")),
            "ci": s.get("speedup_measured_ci"),
            "requests": s.get("requests"),
        })  # fmt: skip
    return out


def build_view(cfg: SweepConfig, state: SweepRun) -> SweepView:
    """The ``sweep`` section and the full entries from everything measured so far."""
    base = state.find(BASELINE_NAME)
    end = state.find(BASELINE_NAME + END)
    levels = [p.label for p in cfg.load.phases]
    entries: list[dict[str, Any]] = []
    cells: list[dict[str, Any]] = []
    for run in state.runs:
        if run.run.endswith(END) or run.config.schedule is not None:
            continue
        for label in run.levels:
            first = base.levels.get(label) if base is not None and run is not base else None
            entry = _entry(run, label, first, cfg)
            entries.append(entry)
            end_entry = None
            if end is not None and label in end.levels and not run.config.baseline:
                end_entry = _entry(run, label, end.levels[label], cfg)
            cell = _cell(entry, None if end_entry is None else end_entry["summary"])
            if end_entry is not None:
                against_both(entry, end_entry)
            cell["error"] = _level_error(run, label)
            if cell["error"] is not None:  # nothing measured: no E, whatever a baseline run says
                cell["e"] = cell["e_ci"] = None
            if cfg.slo is not None:
                cell["slo"] = level_slo(cfg.slo, run.levels[label])
            cells.append(cell)
    best = _best([c for c in cells if c["k"] > 0], levels)
    schedule = _schedule(best, cfg.draft, cfg.method)
    validated = next((r.config.schedule for r in state.runs if r.config.schedule is not None), None)
    if schedule is not None and validated is not None:
        # --validate launched the schedule known before the last baseline run; with both runs in E the best
        # k may have moved. Both are kept, and said.
        differs = validated.to_json() != schedule["num_speculative_tokens_per_batch_size"]
        schedule["validated"] = validated.to_json() if differs else None
    section: dict[str, Any] = {
        "levels": levels,
        "configurations": [r.describe() for r in state.runs],
        "failures": _failures(state),
        "requests": _requests(state),
        "cells": cells,
        "best": best,
        "crossover": next((b["level"] for b in best if b["k"] == 0), None),
        "schedule": schedule,
        "drift": _drift(base, end, cfg) if base is not None and end is not None else None,
        "drift_note": "E per cell: geometric mean of E against the first and the last baseline run; "
        "interval: the union of both paired intervals"
        if end is not None
        else "the baseline ran once: drift not measured",
        "validate": _validate(cfg, state, base, end, cells, best),
        "capacity": capacity_section(cfg, state, cells),
    }
    return SweepView(section, entries)


def below_best_static(ci: Sequence[float] | None, static: Mapping[str, Any] | None) -> bool | None:
    """The schedule collapsed at a level (vLLM #49548): its whole E interval lies below the best static k's
    — below that k's interval's lower end, or its E when it has no interval. None without a best static k;
    False without an interval of its own (too few requests to say)."""
    if static is None or static.get("e") is None:
        return None
    floor = static["e_ci"][0] if static.get("e_ci") else static["e"]
    return bool(ci is not None and ci[1] < floor)


def _lerp(a: float, b: float, w: float) -> float:
    return a + (b - a) * w


def interpolated_static(
    concurrency: int, cells: Sequence[Mapping[str, Any]], best: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The best static k at a concurrency between two measured grid levels (a schedule's switch point).

    The bracketing levels are the nearest measured ones below and above (those with a best k). Each static
    k measured at both has its E and interval bounds interpolated linearly in the concurrency; the best is
    the highest E, k = 0 (E = 1, no interval) when none beats it, as at a grid level. An interval missing at
    either end leaves that k's interval missing. None outside the measured levels' span.
    """
    measured = sorted(
        (int(b["concurrency"]), str(b["level"])) for b in best if isinstance(b.get("concurrency"), int)
    )
    lower = max((m for m in measured if m[0] < concurrency), default=None)
    upper = min((m for m in measured if m[0] > concurrency), default=None)
    if lower is None or upper is None:
        return None
    w = (concurrency - lower[0]) / (upper[0] - lower[0])

    def at(level: str) -> dict[int, Mapping[str, Any]]:
        return {int(c["k"]): c for c in cells if c["level"] == level and c["k"] > 0 and _comparable(c)}

    low_cells, high_cells = at(lower[1]), at(upper[1])
    pick: dict[str, Any] = {"k": 0, "e": 1.0, "e_ci": None}
    for k in sorted(low_cells.keys() & high_cells.keys()):
        a, b = low_cells[k], high_cells[k]
        e = _lerp(a["e"], b["e"], w)
        ci = (
            [_lerp(a["e_ci"][0], b["e_ci"][0], w), _lerp(a["e_ci"][1], b["e_ci"][1], w)]
            if a.get("e_ci") and b.get("e_ci")
            else None
        )
        if e > pick["e"]:
            pick = {"k": k, "e": e, "e_ci": ci}
    return {**pick, "between": [lower[1], upper[1]]}


def _validate(
    cfg: SweepConfig,
    state: SweepRun,
    base: ConfigRun | None,
    end: ConfigRun | None,
    cells: Sequence[Mapping[str, Any]],
    best: Sequence[Mapping[str, Any]],
) -> dict[str, Any] | None:
    run = next((r for r in state.runs if r.config.schedule is not None), None)
    if run is None:
        return None
    assert run.config.schedule is not None
    rows = []
    for label in run.levels:
        references = [r for r in (base, end) if r is not None and label in r.levels]
        figures = []
        for ref in references:
            s = _entry(run, label, ref.levels[label], cfg)["summary"]
            figures.append((_num(s.get("speedup_measured")), s.get("speedup_measured_ci")))
        first = figures[0] if figures else (None, None)
        last = figures[1] if len(figures) > 1 else (None, None)
        e, ci = combine_drift(first[0], first[1], last[0], last[1])
        phase = next(p for p in run.phases if p.label == label)
        static = next((b for b in best if b["level"] == label), None)
        interpolated = static is None and phase.concurrency is not None
        if interpolated:  # a switch point between grid levels (or a grid level that measured nothing)
            static = interpolated_static(phase.concurrency or 1, cells, best)
        k_here = run.config.schedule.k_for(phase.concurrency or 1)
        collapse = None if e is None else below_best_static(ci, static)
        rows.append({
            "level": label,
            "k_scheduled": k_here,
            "e": e,
            "e_ci": ci,
            "best_static_k": None if static is None else static["k"],
            "best_static_e": None if static is None else static["e"],
            "best_static_e_ci": None if static is None else static.get("e_ci"),
            "best_static_interpolated": interpolated and static is not None,
            "best_static_between": None if static is None else static.get("between"),
            "below_best_static": collapse,
        })  # fmt: skip
    return {
        "schedule": run.config.schedule.to_json(),
        "status": run.status,
        "error": run.error,
        "levels": rows,
        "collapse": [r["level"] for r in rows if r["below_best_static"]],
    }
