"""The console view of a ``load`` result: one row per load level and endpoint, then what to make of it.

The question a load test answers is where speculation stops paying as load grows, so the table is ordered
by level with the speculative and baseline endpoints side by side, E_meas per level, and the verdict names
the first level at which E_meas drops below 1. Works from the result dict only (a saved JSON renders the
same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from specmeter.report.fmt import DASH, as_float, dig, fmt_int, fmt_num, fmt_speedup, with_ci
from specmeter.report.view import framed_by_hygiene

__all__ = [
    "conclusion",
    "queue_line",
    "render_load",
    "slo_line",
    "slow_start_line",
    "stop_paying_level",
    "warmup_line",
]


def _level(entry: Mapping[str, Any]) -> str:
    if entry.get("concurrency") is not None:
        return f"c={entry['concurrency']}"
    if entry.get("rate") is not None:
        return f"{entry['rate']:g} req/s"
    if entry.get("trace"):
        return "trace"
    return DASH


def stop_paying_level(result: Mapping[str, Any]) -> str | None:
    """The first load level whose measured speedup is below 1, or None."""
    for entry in result.get("candidates") or []:
        e = as_float(dig(entry, "summary", "speedup_measured"))
        if e is not None and e < 1.0:
            return _level(entry)
    return None


def _unsure(entry: Mapping[str, Any]) -> str | None:
    """Why a level whose E_meas is at least 1 does not show that speculation pays there, or None: its
    interval reaches below 1.0, or it is in the danger zone (α < 0.5 among the reasons)."""
    summary = entry.get("summary")
    why = []
    ci = dig(summary, "speedup_measured_ci")
    low = as_float(ci[0]) if isinstance(ci, (list, tuple)) and len(ci) == 2 else None
    if low is not None and low < 1.0:
        why.append(f"E_meas {with_ci(fmt_speedup(dig(summary, 'speedup_measured')), ci)} includes 1.0")
    if dig(summary, "danger_zone") is True:
        why.append("danger zone: " + " ".join(str(r) for r in dig(summary, "danger_reasons") or []))
    return "; ".join(why) or None


def conclusion(result: Mapping[str, Any]) -> tuple[str, str] | None:
    """The closing sentence and its style: speculation does not pay at any level, stops paying at the
    first level whose E_meas is below 1, pays off at every level — only when every level's interval lies
    above 1.0 and none is in the danger zone —, or is at least 1 everywhere without showing it pays at the
    levels named (the danger flags and the intervals printed above are part of the verdict). None without
    a measured E_meas."""
    entries = [
        (c, e)
        for c in result.get("candidates") or []
        if (e := as_float(dig(c, "summary", "speedup_measured"))) is not None
    ]
    if not entries:
        return None
    if all(e < 1.0 for _, e in entries):
        return "Speculation does not pay at any measured load level (E_meas < 1.0).", "bold red"
    stop = stop_paying_level(result)
    if stop is not None:
        return f"Speculation stops paying at {stop}: the first level where E_meas < 1.0.", "bold red"
    unsure = [(_level(c), why) for c, _ in entries if (why := _unsure(c)) is not None]
    if not unsure:
        return "Speculation pays off at every measured load level.", "bold green"
    levels = "; ".join(f"{level} ({why})" for level, why in unsure)
    return (
        f"E_meas is at least 1.0 at every measured load level, but speculation is not shown to pay off at "
        f"{levels}.",
        "bold yellow",
    )


def _ms(value: Any) -> str:
    x = as_float(value)
    if x is None:
        return DASH
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def _pair(dist: Any) -> str:
    return f"{_ms(dig(dist, 'p50'))}/{_ms(dig(dist, 'p99'))}"


def _estimated(entry: Any) -> list[str]:
    """Summary keys the server's figures only estimate (TGI exports no drafted-token count)."""
    server = dig(entry, "server") or {}
    block = {"metrics": server.get("metrics"), "per_request": server.get("per_request")}.get(
        server.get("used") or ""
    )
    return list(dig(block, "estimated") or [])


def _row(
    table: Table, level: str, role: str, summary: Any, load: Any, speculative: bool, approx: bool = False
) -> None:
    ok, failed = dig(load, "completed"), dig(load, "failed")
    requests = f"{ok if ok is not None else DASH}" + (f"+{failed}✗" if failed else "")
    tps = as_float(dig(load, "output_tokens_per_s"))
    held = as_float(dig(load, "effective_concurrency"))
    e_meas = Text(fmt_speedup(dig(summary, "speedup_measured")) if speculative else DASH)
    if speculative and dig(summary, "danger_zone") is True:
        e_meas.append(" !", style="bold red")
        e_meas.stylize("bold red")
    table.add_row(
        level,
        role,
        DASH if held is None else f"{held:.2f}",
        requests,
        _pair(dig(summary, "ttft_ms")),
        _ms(dig(summary, "tpot_ms", "p50")),
        _pair(dig(summary, "gap_ms")),
        DASH if tps is None else f"{tps:.0f}",
        (("≈" if approx else "") + fmt_num(dig(summary, "acceptance_rate"), 3)) if speculative else DASH,
        fmt_num(dig(summary, "acceptance_length")) if speculative else DASH,
        e_meas,
    )


def queue_line(load: Any) -> str | None:
    """``server queue over 37 samples (every 0.25 s): running 3.8 mean / 4 max, waiting 0.2 / 2`` from a
    role's ``load.server_queue`` (loadreadings), beside the client's held concurrency; None without one."""
    block = dig(load, "server_queue")
    if not isinstance(block, Mapping):
        return None
    if block.get("note"):
        return f"server queue: {block['note']}"
    parts = []
    for key in ("running", "waiting"):
        stats = block.get(key)
        if isinstance(stats, Mapping):
            parts.append(f"{key} {fmt_num(stats.get('mean'), 1)} mean / {fmt_num(stats.get('max'), 0)} max")
    if not parts:
        return None
    interval = as_float(block.get("interval_s"))
    every = f" (every {interval:g} s)" if interval is not None else ""
    held = as_float(dig(load, "effective_concurrency"))
    line = f"server queue over {block.get('samples', 0)} samples{every}: " + ", ".join(parts)
    return line + (f" · client held {held:.2f}" if held is not None else "")


def warmup_line(load: Any) -> str | None:
    """``warm-up: 8 requests at the level's load (1.2 s, not counted)`` from a role's ``load`` block; None
    when the level had no warm-up of its own."""
    n = dig(load, "warmup_requests")
    if not isinstance(n, int) or n <= 0:
        return None
    failed = dig(load, "warmup_failed") or 0
    seconds = as_float(dig(load, "warmup_s"))
    took = f"{seconds:.1f} s, " if seconds is not None else ""
    return f"warm-up: {n} request{'s' if n != 1 else ''} at the level's load ({took}not counted" + (
        f"; {failed} failed)" if failed else ")"
    )


def slow_start_line(load: Any) -> str | None:
    """``slow start: the first 6 requests took 1.62× [1.31, 2.05] the time per token of the rest`` for a
    flagged role (``metrics.slow_start``); None otherwise."""
    block = dig(load, "slow_start")
    if not isinstance(block, Mapping) or not block.get("flagged"):
        return None
    ci = block.get("ci") or [None, None]
    return (
        f"slow start: the first {block.get('first')} requests took {fmt_num(block.get('ratio'))}× "
        f"[{fmt_num(ci[0])}, {fmt_num(ci[1])}] the time per token of the rest — a cold start inside the "
        "level (more warm-up: --warmup-per-level)"
    )


def slo_line(block: Mapping[str, Any]) -> str:
    """``SLO met by 37/40 = 92% [80%, 97%] · goodput 1.9 req/s, 120 tok/s · missed: tpot_p99_ms ×3``."""
    att = block.get("attainment") or {}
    good = block.get("goodput") or {}
    share = as_float(att.get("share"))
    ci = att.get("ci")
    line = f"SLO met by {att.get('met', 0)}/{att.get('judged', 0)}"
    if share is not None:
        line += f" = {share:.0%}"
        if isinstance(ci, list) and len(ci) == 2:
            line += f" [{ci[0]:.0%}, {ci[1]:.0%}]"
    rps, tps = as_float(good.get("requests_per_s")), as_float(good.get("tokens_per_s"))
    if rps is not None and tps is not None:
        line += f" · goodput {rps:.3g} req/s, {tps:.3g} tok/s"
    missed = {k: v for k, v in (block.get("violations") or {}).items() if v}
    if missed:
        line += " · missed: " + ", ".join(f"{k} ×{v}" for k, v in missed.items())
    return line


def _render_groups(entry: Mapping[str, Any], key: str, title: str, console: Console) -> None:
    """A level broken down by input length or temperature, when it holds more than one group."""
    groups = entry.get(key) or {}
    if len(groups) < 2:
        return
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for h in ("group", "requests", "α", "τ", "E_meas"):
        table.add_column(h, justify="left" if h == "group" else "right", no_wrap=True)
    for group, summary in groups.items():
        table.add_row(
            group,
            str(dig(summary, "requests") or DASH),
            with_ci(fmt_num(dig(summary, "acceptance_rate"), 3), dig(summary, "acceptance_rate_ci")),
            fmt_num(dig(summary, "acceptance_length")),
            with_ci(fmt_speedup(dig(summary, "speedup_measured")), dig(summary, "speedup_measured_ci")),
        )
    console.print(table)


@framed_by_hygiene
def render_load(result: Mapping[str, Any], console: Console) -> None:
    """The levels' table, framed by the machine's warning when it was busy (``report.view``)."""
    config = dig(result, "run", "config") or {}
    title = f"specmeter load · {config.get('endpoint', DASH)}"
    if config.get("baseline"):
        title += f" vs baseline {config['baseline']}"
    table = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        padding=(0, 0, 0, 1),
        caption="held: requests in flight, time-weighted (the level is the nominal load) · TTFT and chunk "
        "gap: p50/p99 ms · TPOT: p50 ms · tok/s: output tokens per wall-clock second",
        caption_justify="left",
    )
    headers = ("level", "run", "held", "ok", "TTFT", "TPOT", "gap", "tok/s", "α", "τ", "E_meas")
    for h in headers:
        table.add_column(h, justify="left" if h in ("level", "run") else "right", no_wrap=True)
    notes: list[str] = []
    for entry in result.get("candidates") or []:
        level = _level(entry)
        summary = entry.get("summary")
        estimated = _estimated(entry)
        _row(table, level, "spec", summary, entry.get("load"), True, "acceptance_rate" in estimated)
        baseline = entry.get("baseline")
        if isinstance(baseline, Mapping):
            _row(table, "", "base", baseline.get("summary"), baseline.get("load"), False)
        e_meas = dig(summary, "speedup_measured")
        if e_meas is not None:
            line = f"{level}: E_meas {with_ci(fmt_speedup(e_meas), dig(summary, 'speedup_measured_ci'))}"
            decode = dig(summary, "speedup_measured_decode")
            notes.append(line + (f", decode-only {fmt_speedup(decode)}" if decode is not None else ""))
        reasons = dig(summary, "danger_reasons") or []
        if reasons:
            notes.append(f"{level}: DANGER ZONE — " + " ".join(str(r) for r in reasons))
        server = entry.get("server") or {}
        used = server.get("used")
        source = {
            "per_request_steps": "per-request server reports (every step rebuilt exactly)",
            "per_request": "per-request server reports",
            "metrics": "/metrics counter deltas",
        }.get(used or "")
        notes.append(
            f"{level}: acceptance from {source}"
            if source
            else f"{level}: no acceptance figures from the server"
        )
        spread = server.get("per_request_alpha")
        if spread:
            notes.append(
                f"{level}: α per request, as the engine reported it: p10 {fmt_num(spread.get('p10'), 3)}, "
                f"median {fmt_num(spread.get('p50'), 3)}, p90 {fmt_num(spread.get('p90'), 3)} over "
                f"{fmt_int(spread.get('requests'))} requests"
            )
        notes += [f"{level}: {n}" for n in server.get("notes") or []]
        if estimated:
            notes.append(
                f"{level}: ≈ estimated assuming every draft had k tokens (the server exports no "
                "drafted-token count): " + ", ".join(estimated)
            )
        block = server.get("metrics") if used == "metrics" else server.get("per_request")
        notes += [f"{level}: {n}" for n in dig(block, "notes") or []]
        sources = dig(entry, "load", "token_sources") or {}
        if "usage_distributed" in sources or "none" in sources:
            notes.append(
                f"{level}: the server reported no per-chunk token counts for some requests; their tokens "
                "were spread over the chunks from the final usage (per-token gaps approximate)"
            )
        for run, load in (("spec", entry.get("load")), ("base", dig(entry, "baseline", "load"))):
            said = (queue_line(load), warmup_line(load), slow_start_line(load), dig(load, "client_warning"))
            notes += [f"{level} {run}: {note}" for note in said if note is not None]
        for run, block in (
            ("spec", dig(entry, "load", "slo")),
            ("base", dig(entry, "baseline", "load", "slo")),
        ):
            if isinstance(block, Mapping):
                notes.append(f"{level} {run}: {slo_line(block)}")
        errors = dig(entry, "load", "errors") or {}
        if errors:
            notes.append(f"{level}: errors " + ", ".join(f"{k} ×{v}" for k, v in errors.items()))
            failures = dig(entry, "load", "failures") or []
            first = {str(f.get("error")).split(":")[0]: f.get("error") for f in reversed(failures)}
            notes += [f"{level}: e.g. {first[kind]}" for kind in errors if first.get(kind)]
    console.print(table)
    for entry in result.get("candidates") or []:
        for key, title in (
            ("by_input_length", "input length (prompt tokens)"),
            ("by_temperature", "temperature"),
        ):
            _render_groups(entry, key, f"{_level(entry)} by {title}", console)
    from_metrics = [
        c for c in result.get("candidates") or [] if dig(c, "server", "used") in ("metrics", None)
    ]
    kind = next((dig(c, "server", "kind") for c in from_metrics), None)
    missing = next((dig(c, "server", "unavailable") for c in from_metrics), None)
    if kind and missing:
        notes.append(f"from /metrics alone, a {kind} server cannot provide: " + "; ".join(missing))
    for note in dict.fromkeys(notes):
        console.print(Text(note, style="dim"))
    if result.get("complete") is False:
        console.print(
            Text("Interrupted: partial results, every finished request is on disk.", style="bold yellow")
        )
    verdict = conclusion(result)
    if verdict is not None:
        console.print(Text(*verdict))
