"""Per-domain windows: sums and identities, intervals that cover, alerts per domain, exporter names."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import numpy as np

from specmeter.monitoring.alerts import AlertRules
from specmeter.monitoring.domain_exporter import DomainExporter
from specmeter.monitoring.domains import DomainWindows, quantile_ci, summarize_requests
from specmeter.monitoring.requestlog import RequestObs
from specmeter.monitoring.requestmonitor import RequestMonitor, RequestMonitorConfig


def obs(
    t: float, domain: str, accepted: int, drafted: int, steps: int | None = None, **kw: object
) -> RequestObs:
    base: dict[str, object] = {
        "tenant": None,
        "tokens": accepted + (steps or 0),
        "latency_s": 1.0,
        "shape": "t",
    }
    base.update(kw)
    return RequestObs(f"f:{t}", t, domain, accepted=accepted, drafted=drafted, steps=steps, **base)  # type: ignore[arg-type]


def test_window_figures_are_ratios_of_sums() -> None:
    rs = [obs(0, "legal", 6, 8, 2, latency_s=0.5), obs(1, "legal", 1, 8, 2, latency_s=1.5)]
    w = summarize_requests(rs, "legal", None, 0.0, 60.0)
    assert w.requests == 2
    assert w.alpha == 7 / 16 and w.tau == 1 + 7 / 4
    assert w.tokens == 11 and w.tokens_per_s == 11 / 2.0
    assert w.alpha_ci is None  # two requests: too few for an interval (docs/metrics.md, "Statistics")
    ten = summarize_requests([*rs * 5], "legal", None, 0.0, 60.0)
    assert ten.alpha_ci is not None and 0.0 <= ten.alpha_ci[0] <= ten.alpha <= ten.alpha_ci[1] <= 1.0  # type: ignore[operator]
    # llama.cpp: no steps, hence no τ, but α.
    w2 = summarize_requests([obs(0, "c", 3, 4), obs(1, "c", 1, 4)], "c", None, 0.0, 60.0)
    assert w2.alpha == 0.5 and w2.tau is None and w2.tau_ci is None


def test_property_rates_in_bounds_and_identities() -> None:
    rng = random.Random(2)
    for _ in range(50):
        rs = []
        for i in range(rng.randint(1, 30)):
            steps = rng.randint(0, 20)
            drafted = steps * rng.randint(1, 5)
            rs.append(obs(i, "d", rng.randint(0, drafted), drafted, steps))
        w = summarize_requests(rs, "d", None, 0.0, 1.0)
        a = w.acceptance
        assert a is not None
        if w.alpha is not None:
            assert 0.0 <= w.alpha <= 1.0
            assert a.accepted_tokens == sum(r.accepted or 0 for r in rs)
        if w.tau is not None:
            assert 1.0 <= w.tau <= 1.0 + max(r.drafted / r.steps for r in rs if r.steps and r.drafted) + 1e-9
            assert abs(w.tau - (1 + a.accepted_tokens / a.steps)) < 1e-12  # type: ignore[operator]


def test_quantile_interval_covers_at_least_95_percent() -> None:
    """Order-statistic intervals for p50 and p90 of exponential latencies: coverage over 1,000 samples."""
    rng = np.random.default_rng(0)
    for q, n in ((0.5, 25), (0.9, 60)):
        truth = -np.log(1 - q)
        hits = 0
        for _ in range(1000):
            ci = quantile_ci(list(rng.exponential(size=n)), q)
            assert ci is not None
            hits += ci[0] <= truth <= ci[1]
        assert 0.93 <= hits / 1000 <= 0.995, (q, n, hits)
    assert quantile_ci([1.0] * 50, 0.99) is None  # too few requests for a 95 % interval of p99


def test_windows_group_by_domain_and_tenant_and_drop_late_requests() -> None:
    windows = DomainWindows(60.0)
    windows.add(
        [obs(5, "legal", 1, 4, 1), obs(10, "legal", 2, 4, 1, tenant="acme"), obs(70, "general", 3, 4, 1)], 0
    )
    first = windows.close(until=65.0)
    assert [(w.key, w.t_start, w.t_end, w.requests) for w in first] == [
        ("acme/legal", 0.0, 60.0, 1),
        ("legal", 0.0, 60.0, 1),
    ]
    windows.add([obs(30, "legal", 1, 4, 1)], 0)  # its window was published already
    assert windows.late == 1
    assert [w.key for w in windows.close()] == ["general"]


def _monitor_log(path: Path, drop: bool) -> None:
    """Ten 1-minute windows of two domains; legal's acceptance collapses after minute 5 when ``drop``."""
    rng = random.Random(4)
    lines = []
    for minute in range(10):
        for i in range(20):
            for domain in ("legal", "general"):
                p = 0.25 if drop and domain == "legal" and minute >= 5 else 0.8
                steps = 10
                accepted = sum(1 for _ in range(steps * 4) if rng.random() < p)
                t = 1796040000 + minute * 60 + i
                row = {"time": t, "domain": domain, "accepted_tokens": accepted, "drafted_tokens": 40}
                row |= {"steps": steps, "output_tokens": accepted + steps, "latency_ms": 900}
                lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_monitor_alerts_on_the_domain_that_dropped_only(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    _monitor_log(log, drop=True)
    exporter = DomainExporter()
    monitor = RequestMonitor(RequestMonitorConfig(log, 60.0, once=True), AlertRules(), exporter=exporter)
    asyncio.run(monitor.run())
    assert len(monitor.published) == 20
    firing = {(e.target, e.rule) for e in monitor.events if e.state == "firing"}
    assert firing == {("legal", "alpha_low"), ("legal", "tau_drop")}
    text = exporter.text()
    assert 'specmeter_acceptance_rate{domain="legal",tenant=""}' in text
    assert 'specmeter_alert_active{domain="legal",rule="alpha_low",tenant=""} 1.0' in text
    assert 'specmeter_request_latency_seconds{domain="general",quantile="0.5",tenant=""} 0.9' in text
    # Without the drop nothing fires.
    _monitor_log(log, drop=False)
    calm = RequestMonitor(RequestMonitorConfig(log, 60.0, once=True), AlertRules())
    asyncio.run(calm.run())
    assert calm.events == []
