"""The monitor's own /metrics: derived acceptance gauges per scraped target, alert state, scrape health.

Prometheus can compute α and τ from vLLM's counters itself (see assets/prometheus/rules.yml); these
gauges exist for the engines that cannot be queried that way (SGLang gauges, TGI's histogram, llama.cpp)
and so that one dashboard shows every engine under one set of names. A figure that does not apply in a
window is removed from the exposition rather than exported as NaN. TGI exports no drafted-token count: its
α and β assume every draft had k tokens, and ``specmeter_drafted_estimated`` says so (1) beside them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest, start_http_server

from specmeter.monitoring.alerts import AlertEvent
from specmeter.monitoring.windows import Window

__all__ = ["EXPORTED_METRICS", "WINDOW_METRICS", "GaugeExporter", "MonitorExporter"]

# Sample names as they appear in the exposition (what PromQL sees); tests check the assets against these.
# Both exporters (this one and ``domain_exporter``) export the first five, from ``GaugeExporter``.
WINDOW_METRICS: tuple[str, ...] = (
    "specmeter_acceptance_rate",
    "specmeter_acceptance_length",
    "specmeter_window_end_timestamp_seconds",
    "specmeter_alert_active",
    "specmeter_alerts_total",
)
EXPORTED_METRICS: tuple[str, ...] = (
    *WINDOW_METRICS,
    "specmeter_beta",
    "specmeter_drafted_estimated",
    "specmeter_per_position_acceptance",
    "specmeter_generation_tokens_per_second",
    "specmeter_drafts_per_second",
    "specmeter_scrape_errors_total",
    "specmeter_counter_resets_total",
)


class GaugeExporter:
    """What both monitor exporters share: one registry whose gauges and counters carry the same labels, a
    figure that does not apply removed rather than exported as NaN, and the /metrics server."""

    def __init__(self, labels: Sequence[str], subject: str) -> None:
        """``labels`` name what a window is of (``subject``: a scraped target, a domain); the figures every
        window has, and the alerts, are the same metrics for both."""
        self.registry = CollectorRegistry()
        self._labels = list(labels)
        self._server: Any = None
        self._thread: Any = None
        gauge = self._gauge
        self.alpha = gauge("specmeter_acceptance_rate", "Draft acceptance rate α = A/D over the last window.")
        self.tau = gauge(
            "specmeter_acceptance_length", "Mean acceptance length τ = 1 + A/S over the last window."
        )
        self.window_end = gauge(
            "specmeter_window_end_timestamp_seconds", "End of the last window (Unix time)."
        )
        self.alert_active = gauge(
            "specmeter_alert_active", f"1 while the alert rule fires for the {subject}.", "rule"
        )
        self.alerts = self._counter("specmeter_alerts", "Alert transitions to firing.", "rule")

    def _gauge(self, name: str, documentation: str, *more_labels: str) -> Gauge:
        return Gauge(name, documentation, [*self._labels, *more_labels], registry=self.registry)

    def _counter(self, name: str, documentation: str, *more_labels: str) -> Counter:
        return Counter(name, documentation, [*self._labels, *more_labels], registry=self.registry)

    @staticmethod
    def _set(gauge: Gauge, labels: Iterable[str], value: float | None) -> None:
        labels = tuple(labels)
        if value is None:
            with contextlib.suppress(KeyError):
                gauge.remove(*labels)
        else:
            gauge.labels(*labels).set(value)

    def text(self) -> str:
        return generate_latest(self.registry).decode("utf-8")

    def serve(self, port: int, host: str = "127.0.0.1") -> int:
        """Start the HTTP exporter in a background thread; returns the bound port (0 picks a free one)."""
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        return int(self._server.server_address[1])

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class MonitorExporter(GaugeExporter):
    def __init__(self) -> None:
        super().__init__(["target"], "target")
        gauge, counter = self._gauge, self._counter
        self.beta = gauge(
            "specmeter_beta",
            "Per-token acceptance probability β = A/(A+R), where R is known: every draft had k tokens "
            "(D = S·k), or D was estimated as S·k (TGI: specmeter_drafted_estimated is 1).",
        )
        self.estimated = gauge(
            "specmeter_drafted_estimated",
            "1 when the target exports no drafted-token count (TGI) and D, α and β are estimated assuming "
            "every draft had k tokens; 0 when D was measured.",
        )
        self.position = gauge(
            "specmeter_per_position_acceptance",
            "Steps that accepted draft position `position` (1-based) and all before it, over all drafts: the "
            "per-draft rate (docs/metrics.md), P_i when every draft had k tokens.",
            "position",
        )
        self.tokens = gauge(
            "specmeter_generation_tokens_per_second", "Generated tokens per second over the last window."
        )
        self.drafts = gauge(
            "specmeter_drafts_per_second", "Speculative steps per second over the last window."
        )
        self.scrape_errors = counter("specmeter_scrape_errors", "Failed scrapes of the target.")
        self.resets = counter(
            "specmeter_counter_resets", "Windows in which a counter reset (engine restart) was seen."
        )
        self._positions: dict[str, int] = {}

    def observe_window(self, w: Window) -> None:
        target = w.target
        if w.error is not None:
            self.scrape_errors.labels(target).inc()
            return
        a = w.acceptance
        self.window_end.labels(target).set(w.t_end)
        self._set(self.alpha, [target], None if a is None else a.acceptance_rate)
        self._set(self.tau, [target], None if a is None else a.acceptance_length)
        self._set(self.beta, [target], None if a is None else a.beta)
        estimated = None if a is None or a.acceptance_rate is None else float("drafted_tokens" in a.estimated)
        self._set(self.estimated, [target], estimated)
        self._set(self.tokens, [target], None if a is None else a.tokens_per_s)
        self._set(self.drafts, [target], None if a is None else a.drafts_per_s)
        rows = (a.per_position if a is not None else None) or []
        for i in range(max(len(rows), self._positions.get(target, 0))):
            value = rows[i]["cumulative"] if i < len(rows) else None
            self._set(self.position, [target, str(i + 1)], value)
        self._positions[target] = len(rows)
        if a is not None and a.resets:
            self.resets.labels(target).inc()

    def observe_alert(self, e: AlertEvent) -> None:
        self.alert_active.labels(e.target, e.rule).set(1.0 if e.state == "firing" else 0.0)
        if e.state == "firing":
            self.alerts.labels(e.target, e.rule).inc()
