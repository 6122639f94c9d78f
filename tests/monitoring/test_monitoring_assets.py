"""The shipped Prometheus rules and Grafana dashboard: they parse, and every metric they query exists."""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any

import pytest
import yaml

from specmeter.monitoring.acceptance import ServerAcceptance
from specmeter.monitoring.alerts import AlertEvent
from specmeter.monitoring.domain_exporter import DOMAIN_METRICS, DomainExporter
from specmeter.monitoring.domains import summarize_requests
from specmeter.monitoring.exporter import MonitorExporter
from specmeter.monitoring.promtext import parse_metrics
from specmeter.monitoring.requestlog import RequestObs
from specmeter.monitoring.windows import Window
from specmeter.server.prom import SERVE_METRICS, ServerMetrics

ASSETS = resources.files("specmeter") / "assets"
KEYWORDS = {
    "sum",
    "avg",
    "min",
    "max",
    "count",
    "rate",
    "irate",
    "increase",
    "histogram_quantile",
    "clamp_min",
    "by",
    "on",
    "without",
    "ignoring",
    "group_left",
    "group_right",
    "offset",
    "and",
    "or",
    "unless",
    "bool",
}


def metric_names(expr: str) -> set[str]:
    """Metric names referenced by a PromQL expression (strings, matchers, ranges, label lists stripped)."""
    expr = re.sub(r"label_values\(\s*([a-zA-Z_:][\w:]*)[^)]*\)", r"\1", expr)
    expr = re.sub(r'"[^"]*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    expr = re.sub(r"\boffset\s+\d+[smhdwy]\b", " ", expr)
    expr = re.sub(r"(?<![\w:])\d+(\.\d+)?([eE][-+]?\d+)?", " ", expr)
    return {t for t in re.findall(r"[a-zA-Z_:][\w:]*", expr) if t not in KEYWORDS}


def exported_names() -> set[str]:
    """Sample names actually exposed by `serve` (k = 4) and by the monitor's exporter."""
    serve = {s.name for s in parse_metrics(ServerMetrics("m", 4).text().decode()).samples}
    exporter = MonitorExporter()
    acc = ServerAcceptance(
        "vllm",
        "counters",
        steps=10,
        acceptance_rate=0.5,
        acceptance_length=2.0,
        beta=0.6,
        per_position=[{"cumulative": 0.5}],
        tokens_per_s=1.0,
        drafts_per_s=1.0,
        resets=("drafts",),
    )
    exporter.observe_window(Window("t", "vllm", 0.0, 1.0, acc))
    exporter.observe_window(Window("t", "vllm", 1.0, 2.0, None, "down"))
    exporter.observe_alert(AlertEvent("now", "t", "alpha_low", "firing", 0.3, 0.5, "low"))
    monitor = {s.name for s in parse_metrics(exporter.text()).samples}
    domains = DomainExporter()  # monitor --requests: the per-domain gauges
    domains.observe(
        summarize_requests(
            [
                RequestObs("f:1", 0.0, "legal", None, 3, 4, 1, 4, 0.5, "t"),
                RequestObs("f:2", 1.0, "legal", None, 1, 4, 1, 2, 1.0, "t"),
            ],
            "legal",
            None,
            0.0,
            60.0,
        )
    )
    domains.observe_alert(AlertEvent("now", "legal", "alpha_low", "firing", 0.3, 0.5, "low"), "legal", None)
    domains.bad_lines.inc()
    return serve | monitor | {s.name for s in parse_metrics(domains.text()).samples}


@pytest.fixture(scope="module")
def rules() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ASSETS / "prometheus" / "rules.yml").read_text(encoding="utf-8"))
    return data


def test_metric_name_extraction() -> None:
    expr = 'sum by (model_name) (rate(vllm:a_total{x="y"}[5m])) / on (m) group_left b:c:d offset 1d > 0.5'
    assert metric_names(expr) == {"vllm:a_total", "b:c:d"}


def test_serve_exports_every_family_it_declares() -> None:
    names = exported_names()
    for family in SERVE_METRICS:
        assert family in names or family + "_bucket" in names, family


def test_rules_structure(rules: dict[str, Any]) -> None:
    groups = rules["groups"]
    assert {g["name"] for g in groups} == {
        "specmeter-speculative-decoding-recording",
        "specmeter-speculative-decoding-alerts",
    }
    for group in groups:
        assert group["rules"]
        for rule in group["rules"]:
            assert ("record" in rule) != ("alert" in rule), rule
            assert isinstance(rule["expr"], str) and rule["expr"].strip()
            if "record" in rule:
                assert re.fullmatch(r"[a-z_]+:[a-z_]+:[a-z0-9_]+", rule["record"]), rule["record"]
            else:
                assert rule["labels"]["severity"] in ("info", "warning", "critical")
                assert rule["annotations"]["summary"]
                assert re.fullmatch(r"\d+[smh]", str(rule.get("for", "0s")))
    alerts = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    assert "< 0.5" in alerts["SpecDecodeAcceptanceLow"]["expr"]  # the field report's danger zone


def test_every_promql_metric_exists(rules: dict[str, Any]) -> None:
    known = exported_names() | {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}
    used = {name for g in rules["groups"] for r in g["rules"] for name in metric_names(r["expr"])}
    assert "vllm:spec_decode_num_accepted_tokens_per_pos_total" in used
    assert used <= known, used - known


def test_dashboard_is_valid_and_queries_existing_metrics() -> None:
    dashboard = json.loads((ASSETS / "grafana" / "specmeter.json").read_text(encoding="utf-8"))
    panels = dashboard["panels"]
    assert dashboard["title"] and dashboard["uid"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    graphs = [p for p in panels if p["type"] != "row"]
    assert len(graphs) >= 8
    exprs = [t["expr"] for p in graphs for t in p["targets"]]
    assert all(p["targets"] and p["gridPos"]["w"] > 0 for p in graphs)
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    used = {name for e in exprs for name in metric_names(e)}
    assert used <= exported_names(), used - exported_names()
    titles = " ".join(p["title"] for p in graphs)
    assert "α" in titles and "τ" in titles and "Per-position" in titles
    assert "α per domain" in titles and any('domain=~"$domain"' in e for e in exprs)


def test_domain_exporter_exports_every_name_it_declares() -> None:
    names = exported_names()
    assert set(DOMAIN_METRICS) <= names | {n for n in names if n.endswith("_total")}, (
        set(DOMAIN_METRICS) - names
    )
