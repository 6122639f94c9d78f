"""monitor --prometheus against a fake Prometheus HTTP API: the queries asked, windows built, errors named."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.monitoring.alerts import AlertRules
from specmeter.monitoring.exporter import MonitorExporter
from specmeter.monitoring.monitor import MonitorConfig
from specmeter.monitoring.promquery import PrometheusError, PrometheusMonitor, PrometheusSource, query_range
from specmeter.server.hosting import ServerThread

W = 60.0
# Per pod and window (ending at 1000 + i·W): S, D, A and accepted at positions 0..2 (k = 3).
TRAFFIC = {
    "gpu-a": [(10, 30, 24, (9, 8, 7)), (10, 30, 12, (6, 4, 2))],
    "gpu-b": [(20, 60, 30, (14, 10, 6)), (0, 0, 0, (0, 0, 0))],
}


def fake_prometheus(asked: list[dict[str, str]]) -> Starlette:
    async def query_range_route(request: Request) -> JSONResponse:
        params = dict(request.query_params)
        asked.append(params)
        query, start, step = params["query"], float(params["start"]), float(params["step"])
        if "broken" in query:
            return JSONResponse({"status": "error", "errorType": "bad_data", "error": "parse error"}, 400)
        group = re.search(r"sum by \((\w+)", query).group(1)  # type: ignore[union-attr]
        result: list[dict[str, Any]] = []
        for pod, windows in TRAFFIC.items():

            def values(pick: Any, windows: Any = windows) -> list[list[Any]]:
                return [[start + i * step, str(pick(w))] for i, w in enumerate(windows)]

            metric = {group: pod}
            if "per_pos" in query:
                for pos in range(3):
                    result.append(
                        {
                            "metric": {**metric, "position": str(pos)},
                            "values": values(lambda w, p=pos: w[3][p]),
                        }
                    )
            elif "num_drafts" in query:
                result.append({"metric": metric, "values": values(lambda w: w[0])})
            elif "num_draft_tokens" in query:
                result.append({"metric": metric, "values": values(lambda w: w[1])})
            elif "num_accepted_tokens_total" in query:
                result.append({"metric": metric, "values": values(lambda w: w[2])})
            elif "generation_tokens" in query:
                result.append({"metric": metric, "values": values(lambda w: w[2] + w[0] + 5)})
        return JSONResponse({"status": "success", "data": {"resultType": "matrix", "result": result}})

    return Starlette(routes=[Route("/api/v1/query_range", query_range_route)])


@pytest.fixture(scope="module")
def prom() -> Any:
    asked: list[dict[str, str]] = []
    with ServerThread(fake_prometheus(asked)) as server:
        yield server.url, asked


def test_queries_and_windows(prom: Any) -> None:
    url, asked = prom
    source = PrometheusSource(url, W, "pod", 'job="vllm"')
    assert (
        source.queries()["drafts"]
        == 'sum by (pod) (increase(vllm:spec_decode_num_drafts_total{job="vllm"}[60000ms]))'
    )

    async def go() -> Any:
        async with httpx.AsyncClient() as client:
            return await source.windows(client, 1000.0, 1060.0)

    windows = asyncio.run(go())
    assert [(w.target, w.t_start, w.t_end) for w in windows] == [
        ("pod=gpu-a", 940.0, 1000.0), ("pod=gpu-b", 940.0, 1000.0),
        ("pod=gpu-a", 1000.0, 1060.0), ("pod=gpu-b", 1000.0, 1060.0),
    ]  # fmt: skip
    a0 = windows[0].acceptance
    assert a0 is not None and a0.acceptance_rate == 24 / 30 and a0.acceptance_length == 1 + 24 / 10
    assert [row["cumulative"] for row in a0.per_position or []] == [0.9, 0.8, 0.7]
    assert a0.tokens_per_s == (24 + 10 + 5) / W and a0.beta is not None
    assert windows[3].acceptance is not None and windows[3].acceptance.acceptance_rate is None  # no drafts
    assert {p["step"] for p in asked} == {"60"}


def test_monitor_loop_publishes_to_exporter_and_alerts(prom: Any) -> None:
    url, _ = prom
    exporter = MonitorExporter()
    monitor = PrometheusMonitor(
        MonitorConfig([], W, once=True),
        AlertRules(alpha_threshold=0.5, alpha_windows=1),
        exporter=exporter,
        source=PrometheusSource(url, W, "pod"),
        lookback=2 * W,
        clock=lambda: 1060.0,
    )
    asyncio.run(monitor.run())
    assert set(monitor.trackers) == {"pod=gpu-a", "pod=gpu-b"}
    assert 'specmeter_acceptance_rate{target="pod=gpu-a"} 0.4' in exporter.text()  # 12 / 30, the later window
    assert monitor.rules.active("pod=gpu-a") == {"alpha_low", "tau_drop"}


def test_errors_are_one_line(prom: Any) -> None:
    url, _ = prom

    async def go(base: str, query: str) -> Any:
        async with httpx.AsyncClient() as client:
            return await query_range(client, base, query, 0, 60, 60)

    with pytest.raises(PrometheusError, match="bad_data: parse error"):
        asyncio.run(go(url, "broken{"))
    with pytest.raises(PrometheusError, match="cannot reach"):
        asyncio.run(go("http://127.0.0.1:9", "x"))


def test_cli_prometheus_once_json(prom: Any, tmp_path: Path) -> None:
    url, _ = prom
    out = tmp_path / "w.json"
    args = ["monitor", "--prometheus", url, "--group-by", "pod", "--interval", "60s", "--lookback", "2m"]
    result = CliRunner().invoke(
        app, [*args, "--once", "--json", str(out), "--history", str(tmp_path / "h.sqlite")]
    )
    assert result.exit_code == 0, result.output
    windows = json.loads(out.read_text("utf-8"))["windows"]
    assert len(windows) == 4 and {w["target"] for w in windows} == {"pod=gpu-a", "pod=gpu-b"}
    bad = CliRunner().invoke(
        app, ["monitor", "--prometheus", "http://127.0.0.1:9", "--once", "--history", str(tmp_path / "x")]
    )
    assert bad.exit_code == 1 and "cannot reach" in bad.stderr
