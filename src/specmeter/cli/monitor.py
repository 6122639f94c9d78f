"""``specmeter monitor``: watch speculative decoding in production from the engines' /metrics.

Windowed α, τ, per-position rates and throughput per engine, SQLite history, a live terminal view (a
line per window when not on a terminal), alerts to the console, a JSONL file and an optional webhook,
and the derived figures on the monitor's own /metrics. ``--once`` closes one window per target and
exits; ``--duration`` bounds the run; otherwise it runs until Ctrl-C or SIGTERM (the same ending: what
was watched is written). The history goes to ``--history``, by default ``monitor.sqlite`` beside the run
store (``store.paths.default_history_path``), and the monitor says where.
"""

from __future__ import annotations

import asyncio
import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import typer

from specmeter.cli.common import (
    check_outputs,
    check_range,
    console,
    err_console,
    fail,
    parse_option,
    stdout_is_terminal,
)
from specmeter.cli.monitor_outputs import watching
from specmeter.exitcodes import EXIT_FAILED
from specmeter.measuring.config import K_MAX_LIMIT
from specmeter.monitoring import durations
from specmeter.monitoring.adapters import SERVER_CHOICES, kind_from_option

if TYPE_CHECKING:
    from specmeter.monitoring.alerts import AlertRules
    from specmeter.monitoring.exporter import MonitorExporter
    from specmeter.monitoring.monitor import Monitor, MonitorConfig
    from specmeter.monitoring.store import HistoryStore


def parse_seconds(value: str, option: str) -> float:
    """``monitoring.durations.parse_seconds``, its error as one ``error:`` line."""
    return parse_option(lambda text: durations.parse_seconds(text, option), value, ValueError)


def monitor(
    scrape: list[str] | None = typer.Option(
        None, "--scrape", help="An engine's /metrics URL; repeat for several."
    ),
    requests: Path | None = typer.Option(
        None,
        "--requests",
        help="Per-request JSONL log (a file, or a directory that grows): windows per domain and tenant.",
    ),
    prometheus: str | None = typer.Option(
        None,
        "--prometheus",
        help="Prometheus (or compatible) base URL: windows from query_range over the spec-decode counters.",
    ),
    group_by: str = typer.Option(
        "model_name",
        "--group-by",
        help="--prometheus: one target per value of this label (pod, instance, …).",
    ),
    match: str | None = typer.Option(
        None, "--match", help="--prometheus: label matchers for every series, e.g. 'job=\"vllm\"'."
    ),
    lookback: str | None = typer.Option(
        None, "--lookback", help="--prometheus: windows to fetch at start (default one --interval)."
    ),
    fields: str | None = typer.Option(
        None,
        "--fields",
        help="--requests: map log fields, e.g. accepted=spec.acc,drafted=spec.drafted,domain=route.",
    ),
    interval: str | None = typer.Option(
        None, help="Window length: 15s, 500ms, 2m, 1h (default 15s when scraping, 5m for --requests)."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="--requests: write every window and alert as JSON when done."
    ),
    alert_alpha: float | None = typer.Option(0.5, "--alert-alpha", help="Alert when α is below this …"),
    alert_windows: int = typer.Option(3, "--alert-windows", help="… for this many consecutive windows."),
    alert_tau_drop: float | None = typer.Option(
        20.0, "--alert-tau-drop", help="Alert when τ falls this many percent below the baseline window."
    ),
    tau_baseline: float | None = typer.Option(
        None, "--tau-baseline", help="Baseline τ (default: the first window that had drafts)."
    ),
    min_drafts: int = typer.Option(1, "--min-drafts", help="Windows with fewer drafts are no evidence."),
    no_alerts: bool = typer.Option(False, "--no-alerts", help="Do not evaluate alert rules."),
    server: str = typer.Option("auto", "--server", help="Server kind: " + ", ".join(SERVER_CHOICES)),
    k: int | None = typer.Option(None, "--k", help="Draft length, where metrics do not reveal it (TGI α)."),
    history: Path | None = typer.Option(
        None,
        "--history",
        help="SQLite history file (default: monitor.sqlite beside the run store: $SPECMETER_STORE's "
        "directory, else the user data dir).",
    ),
    alerts_log: Path | None = typer.Option(None, "--alerts-log", help="Append alerts to this JSONL file."),
    webhook: str | None = typer.Option(None, "--webhook", help="POST every alert as JSON to this URL."),
    export_port: int | None = typer.Option(
        None, "--export-port", help="Serve the derived gauges on this port's /metrics (0 = a free port)."
    ),
    export_host: str = typer.Option("127.0.0.1", "--export-host", help="Address of the exporter."),
    once: bool = typer.Option(False, "--once", help="Close one window per target, print it, exit."),
    duration: str | None = typer.Option(None, help="Stop after this long (e.g. 10m)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live view; alerts still print."),
) -> None:
    """Watch α, τ and per-position acceptance of running engines; alert and export derived metrics."""
    from specmeter.monitoring.alerts import AlertRules

    if (scrape is not None) + (requests is not None) + (prometheus is not None) != 1:
        fail(
            "give --scrape URL (engines' /metrics), --prometheus URL (Prometheus' HTTP API) "
            "or --requests PATH (per-request logs), one of them"
        )
    if fields is not None and requests is None:
        fail("--fields applies to --requests only")
    if json_out is not None and scrape is not None:
        fail("--json applies to --requests and --prometheus")
    if prometheus is None and (match is not None or lookback is not None or group_by != "model_name"):
        fail("--group-by, --match and --lookback apply to --prometheus only")
    default = "5m" if requests is not None else "15s"
    seconds = parse_seconds(interval or default, "--interval")
    limit = parse_seconds(duration, "--duration") if duration is not None else None
    if server not in SERVER_CHOICES:
        fail(f"--server: {server!r} is not one of {', '.join(SERVER_CHOICES)}")
    for name, value in (("--alert-windows", alert_windows), ("--min-drafts", min_drafts)):
        if value is not None and value < 1:
            fail(f"{name} must be >= 1, got {value}")
    check_range("--k", k, low=1, high=K_MAX_LIMIT)
    if alert_alpha is not None and not 0.0 < alert_alpha <= 1.0:
        fail(f"--alert-alpha must be in (0, 1], got {alert_alpha:g}")
    check_range("--tau-baseline", tau_baseline, low=1)  # τ = 1 + A/S is at least 1
    if alert_tau_drop is not None and not 0.0 < alert_tau_drop < 100.0:
        fail(f"--alert-tau-drop must be a percentage in (0, 100), got {alert_tau_drop:g}")
    if prometheus is not None and server not in ("auto", "vllm", "specmeter", "llamacpp"):
        fail(f"--server {server}: --prometheus reads counters, which vllm, specmeter and llamacpp export")
    if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", group_by):
        fail(f"--group-by: {group_by!r} is not a Prometheus label name")
    for url in [*(scrape or []), *([prometheus] if prometheus else []), *([webhook] if webhook else [])]:
        if not url.startswith(("http://", "https://")):
            fail(f"{url!r} is not an http(s) URL")
    if export_port is not None and not 0 <= export_port <= 65535:
        fail(f"--export-port must be between 0 and 65535, got {export_port}")

    announce = history is None  # the default is said on stderr: the user did not name it
    if history is None:
        from specmeter.store.paths import default_history_path

        history = default_history_path()
    rules = AlertRules(
        alpha_threshold=None if no_alerts else alert_alpha,
        alpha_windows=alert_windows,
        tau_drop_pct=None if no_alerts else alert_tau_drop,
        tau_baseline=tau_baseline,
        min_drafts=min_drafts,
    )
    if requests is not None:
        from specmeter.cli.monitor_requests import run_requests

        run_requests(
            requests,
            fields,
            seconds,
            rules,
            history=history,
            announce=announce,
            alerts_log=alerts_log,
            webhook=webhook,
            export=(export_port, export_host),
            json_out=json_out,
            once=once,
            duration=limit,
            quiet=quiet,
        )
        return

    from specmeter.monitoring.exporter import MonitorExporter
    from specmeter.monitoring.monitor import MonitorConfig
    from specmeter.monitoring.promtext import metrics_url

    kind = kind_from_option(server)
    factory: Any = None
    check_outputs({"--history": history, "--alerts-log": alerts_log, "--json": json_out})
    if prometheus is not None:
        from specmeter.monitoring.promquery import PrometheusMonitor, PrometheusSource

        source = PrometheusSource(prometheus.rstrip("/"), seconds, group_by, match or "", kind or "vllm", k)
        back = parse_seconds(lookback, "--lookback") if lookback is not None else seconds
        factory = functools.partial(
            PrometheusMonitor,
            source=source,
            lookback=back,
            on_error=lambda m: err_console.print(f"warning: {m}", markup=False, soft_wrap=True),
        )
    config = MonitorConfig(
        targets=[metrics_url(u) for u in scrape or []],
        interval=seconds,
        kind=cast(Any, kind),
        k=k,
        duration=limit,
        once=once,
    )
    live = stdout_is_terminal() and not quiet and not once
    from specmeter.monitoring.promquery import PrometheusError
    from specmeter.sweep.launch import sigterm_as_interrupt

    exporter = MonitorExporter()
    started: list[Monitor] = []  # the monitor, once running: its windows are written however the watch ends
    with watching(history, exporter, export_port, export_host, announce=announce) as store:
        try:
            with sigterm_as_interrupt():  # SIGTERM (systemd, docker stop) ends the watch as Ctrl-C does
                asyncio.run(
                    _watch(
                        config,
                        rules,
                        store,
                        exporter,
                        alerts_log,
                        webhook,
                        live=live,
                        quiet=quiet,
                        factory=factory,
                        started=started,
                    )
                )
        except PrometheusError as e:
            fail(f"--prometheus: {e}", code=EXIT_FAILED)
        finally:
            if json_out is not None and started:  # Ctrl-C and SIGTERM included, as with --requests
                from specmeter.report.files import write_json_atomic

                windows = [w.as_dict() for t in started[0].trackers.values() for w in t.history]
                write_json_atomic(
                    json_out,
                    {"source": prometheus, "group_by": group_by, "windows": windows},
                    marker="monitor",
                )
    monitor = started[0]
    if prometheus is not None and not monitor.trackers:
        fail(
            f"--prometheus: no {kind or 'vllm'} speculative-decoding series in {prometheus}", code=EXIT_FAILED
        )
    if once and stdout_is_terminal() and not quiet:
        from specmeter.monitoring.view_live import render

        console.print(render(monitor.trackers, rules, rules.alpha_threshold))
    if once:
        # Nothing measured for a target (its scrape failed, or the text was not Prometheus'): a CI check or
        # cron job must see it in the exit code, not only in a line it may never read.
        failed = [t for t in monitor.trackers.values() if not any(w.error is None for w in t.history)]
        if failed:
            error = next((w.error for w in failed[0].history if w.error), "no window")
            more = f" (and {len(failed) - 1} more target(s))" if len(failed) > 1 else ""
            fail(f"--once: no good scrape of {failed[0].target}: {error}{more}", code=EXIT_FAILED)


async def _watch(
    config: MonitorConfig,
    rules: AlertRules,
    store: HistoryStore,
    exporter: MonitorExporter,
    alerts_log: Path | None,
    webhook: str | None,
    *,
    live: bool,
    quiet: bool,
    factory: Any = None,
    started: list[Monitor] | None = None,
) -> Monitor:
    from rich.live import Live

    from specmeter.monitoring.alerts import alert_sinks
    from specmeter.monitoring.monitor import Monitor
    from specmeter.monitoring.view_live import render, window_line

    def say(line: str) -> None:
        err_console.print(line, markup=False, highlight=False, soft_wrap=True)

    async with alert_sinks(say, alerts_log, webhook) as (client, sinks):
        monitor = (factory or Monitor)(config, rules, sinks, store, exporter)
        if started is not None:
            started.append(monitor)
        if live:
            with Live(render(monitor.trackers, rules, rules.alpha_threshold), console=console) as view:
                monitor.on_window = lambda w, t: view.update(
                    render(monitor.trackers, rules, rules.alpha_threshold)
                )
                await monitor.run(client)
        else:
            if not quiet and not stdout_is_terminal():
                monitor.on_window = lambda w, t: console.print(
                    window_line(w), markup=False, highlight=False, soft_wrap=True
                )
            await monitor.run(client)
        return monitor
