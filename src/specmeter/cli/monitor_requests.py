"""``specmeter monitor --requests PATH``: per-domain windows from per-request logs.

The loop itself is ``monitoring.requestmonitor``.

Kept apart from ``cli/monitor.py`` (which parses the options shared by every mode) so that each mode's
wiring reads on its own.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from specmeter.cli.common import (
    check_outputs,
    console,
    err_console,
    fail,
    stdout_is_terminal,
)
from specmeter.cli.monitor_outputs import watching
from specmeter.monitoring.alerts import AlertRules

if TYPE_CHECKING:
    from specmeter.monitoring.requestmonitor import RequestMonitor

__all__ = ["run_requests"]

MAX_SHOWN_PROBLEMS = 50
TABLE_ROWS = 40  # --once prints every window up to this many; beyond, the latest per domain


def run_requests(
    path: Path,
    fields_text: str | None,
    window: float,
    rules: AlertRules,
    *,
    history: Path,
    announce: bool = False,
    alerts_log: Path | None,
    webhook: str | None,
    export: tuple[int | None, str],
    json_out: Path | None,
    once: bool,
    duration: float | None,
    quiet: bool,
) -> None:
    from specmeter.monitoring.domain_exporter import DomainExporter
    from specmeter.monitoring.requestlog import FieldMapError, parse_fields
    from specmeter.monitoring.requestmonitor import RequestMonitor, RequestMonitorConfig

    try:
        fields = parse_fields(fields_text)
    except FieldMapError as e:
        fail(str(e))
    check_outputs({}, {"--requests": path})  # a name too long for the file system: one line, not errno 36
    if not path.exists():
        fail(f"--requests: {path} does not exist")
    inputs = [p for p in (path.rglob("*") if path.is_dir() else [path]) if p.is_file()]
    check_outputs(
        {"--history": history, "--alerts-log": alerts_log, "--json": json_out}, {"--requests": inputs}
    )
    shown = 0

    def problem(line: str) -> None:
        nonlocal shown
        shown += 1
        if shown <= MAX_SHOWN_PROBLEMS:
            err_console.print(f"{line}: skipped", markup=False, highlight=False, emoji=False, soft_wrap=True)

    config = RequestMonitorConfig(path, window, fields, once=once, duration=duration, grace=min(window, 5.0))
    exporter = DomainExporter()
    with watching(history, exporter, *export, announce=announce) as store:
        monitor = RequestMonitor(config, rules, store=store, exporter=exporter, on_problem=problem)
        if not once and not quiet:
            from specmeter.monitoring.view_domains import domain_line

            monitor.on_window = lambda w: console.print(
                domain_line(w), markup=False, highlight=False, soft_wrap=True
            )
        from specmeter.sweep.launch import sigterm_as_interrupt

        try:
            with sigterm_as_interrupt():  # SIGTERM ends the watch as Ctrl-C does: --json written below
                asyncio.run(_watch(monitor, alerts_log, webhook))
        finally:
            if json_out is not None:
                _write_json(json_out, monitor)
    if monitor.problems > MAX_SHOWN_PROBLEMS:
        err_console.print(f"... and {monitor.problems - MAX_SHOWN_PROBLEMS} more lines skipped")
    if monitor.problems:
        err_console.print(f"{monitor.problems} log line(s) skipped")
    if monitor.windows.late:
        err_console.print(
            f"{monitor.windows.late} request(s) arrived after their window was closed (not counted)"
        )
    if not monitor.published:
        why = f": every line was skipped ({monitor.tail.reasons_text()})" if monitor.tail.reasons else ""
        fail(f"--requests: no usable request in {path}{why}", code=1)
    if once and not quiet:
        _render_once(monitor, rules)


async def _watch(monitor: RequestMonitor, alerts_log: Path | None, webhook: str | None) -> None:
    from specmeter.monitoring.alerts import alert_sinks

    def say(line: str) -> None:
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)

    async with alert_sinks(say, alerts_log, webhook) as (_, sinks):
        monitor.sinks = sinks
        await monitor.run()


def _render_once(monitor: RequestMonitor, rules: AlertRules) -> None:
    from specmeter.monitoring.view_domains import domain_line, domain_table

    windows = monitor.published
    if len(windows) <= TABLE_ROWS or not stdout_is_terminal():
        for w in windows:
            console.print(domain_line(w), markup=False, highlight=False, soft_wrap=True)
    if stdout_is_terminal():
        active = {w.key: rules.active(w.key) for w in windows}
        console.print(domain_table(windows, rules.alpha_threshold, active))


def _write_json(path: Path, monitor: RequestMonitor) -> None:
    from specmeter.report.files import write_json_atomic

    write_json_atomic(
        path,
        {
            "source": str(monitor.config.path),
            "window_seconds": monitor.config.window,
            "windows": [w.as_dict() for w in monitor.published],
            "alerts": [e.as_dict() for e in monitor.events],
            "bad_lines": monitor.problems,
            "late_requests": monitor.windows.late,
        },
        marker="monitor",
    )
