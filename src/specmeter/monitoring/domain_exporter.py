"""``monitor --requests``' own /metrics: the last closed window of every (domain, tenant) as gauges.

The names are the scrape monitor's (``monitoring.exporter``) with ``domain`` and ``tenant`` labels instead
of ``target`` (``tenant`` is empty when the log has none), so one dashboard and one set of alert rules
read both: ``specmeter_acceptance_rate{domain="legal"}``. A figure that does not apply in a window is
removed rather than exported as NaN.
"""

from __future__ import annotations

from prometheus_client import Counter

from specmeter.monitoring.alerts import AlertEvent
from specmeter.monitoring.domains import DomainWindow
from specmeter.monitoring.exporter import WINDOW_METRICS, GaugeExporter

__all__ = ["DOMAIN_METRICS", "DomainExporter"]

DOMAIN_METRICS: tuple[str, ...] = (
    *WINDOW_METRICS,
    "specmeter_generation_tokens_per_second",
    "specmeter_request_latency_seconds",
    "specmeter_window_requests",
    "specmeter_log_bad_lines_total",
)


class DomainExporter(GaugeExporter):
    def __init__(self) -> None:
        super().__init__(["domain", "tenant"], "domain")
        gauge = self._gauge
        self.tokens = gauge(
            "specmeter_generation_tokens_per_second",
            "Σ output tokens / Σ latency of the last window's requests (single-stream throughput).",
        )
        self.latency = gauge(
            "specmeter_request_latency_seconds", "Request latency quantile over the last window.", "quantile"
        )
        self.requests = gauge("specmeter_window_requests", "Requests in the last window.")
        self.bad_lines = Counter(
            "specmeter_log_bad_lines", "Log lines that could not be read.", registry=self.registry
        )

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
