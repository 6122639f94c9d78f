"""``monitor --requests``' own /metrics: the last closed window of every (domain, tenant) as gauges.

The names are the scrape monitor's (``monitoring.exporter``) with ``domain`` and ``tenant`` labels instead
of ``target`` (``tenant`` is empty when the log has none), so one dashboard and one set of alert rules
read both: ``specmeter_acceptance_rate{domain="legal"}``. A figure that does not apply in a window is
removed rather than exported as NaN.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest, start_http_server

from specmeter.monitoring.alerts import AlertEvent
from specmeter.monitoring.domains import DomainWindow

__all__ = ["DOMAIN_METRICS", "DomainExporter"]

DOMAIN_METRICS: tuple[str, ...] = (
    "specmeter_acceptance_rate",
    "specmeter_acceptance_length",
    "specmeter_generation_tokens_per_second",
    "specmeter_request_latency_seconds",
    "specmeter_window_requests",
    "specmeter_window_end_timestamp_seconds",
    "specmeter_alert_active",
    "specmeter_alerts_total",
    "specmeter_log_bad_lines_total",
)

_LABELS = ["domain", "tenant"]


class DomainExporter:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.alpha = Gauge(
            "specmeter_acceptance_rate",
            "Draft acceptance rate α = ΣA/ΣD over the last window.",
            _LABELS,
            registry=r,
        )
        self.tau = Gauge(
            "specmeter_acceptance_length",
            "Mean acceptance length τ = 1 + ΣA/ΣS over the last window.",
            _LABELS,
            registry=r,
        )
        self.tokens = Gauge(
            "specmeter_generation_tokens_per_second",
            "Σ output tokens / Σ latency of the last window's requests (single-stream throughput).",
            _LABELS,
            registry=r,
        )
        self.latency = Gauge(
            "specmeter_request_latency_seconds",
            "Request latency quantile over the last window.",
            [*_LABELS, "quantile"],
            registry=r,
        )
        self.requests = Gauge(
            "specmeter_window_requests", "Requests in the last window.", _LABELS, registry=r
        )
        self.window_end = Gauge(
            "specmeter_window_end_timestamp_seconds",
            "End of the last window (Unix time).",
            _LABELS,
            registry=r,
        )
        self.alert_active = Gauge(
            "specmeter_alert_active",
            "1 while the alert rule fires for the domain.",
            [*_LABELS, "rule"],
            registry=r,
        )
        self.alerts = Counter(
            "specmeter_alerts", "Alert transitions to firing.", [*_LABELS, "rule"], registry=r
        )
        self.bad_lines = Counter("specmeter_log_bad_lines", "Log lines that could not be read.", registry=r)
        self._server: Any = None

    @staticmethod
    def _set(gauge: Gauge, labels: Sequence[str], value: float | None) -> None:
        if value is None:
            with contextlib.suppress(KeyError):
                gauge.remove(*labels)
        else:
            gauge.labels(*labels).set(value)

    def observe(self, w: DomainWindow) -> None:
        labels = [w.domain, w.tenant or ""]
        self._set(self.alpha, labels, w.alpha)
        self._set(self.tau, labels, w.tau)
        self._set(self.tokens, labels, w.tokens_per_s)
        for name, row in (w.latency or {}).items():
            self._set(self.latency, [*labels, str(int(name[1:]) / 100)], row["value"])
        self.requests.labels(*labels).set(w.requests)
        self.window_end.labels(*labels).set(w.t_end)

    def observe_alert(self, e: AlertEvent, domain: str, tenant: str | None) -> None:
        labels = [domain, tenant or "", e.rule]
        self.alert_active.labels(*labels).set(1.0 if e.state == "firing" else 0.0)
        if e.state == "firing":
            self.alerts.labels(*labels).inc()

    def text(self) -> str:
        return generate_latest(self.registry).decode("utf-8")

    def serve(self, port: int, host: str = "127.0.0.1") -> int:
        self._server, _ = start_http_server(port, addr=host, registry=self.registry)
        return int(self._server.server_address[1])

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
