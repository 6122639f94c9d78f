"""Hostile answers from Prometheus and the engines (issue 29): one line naming the problem, no traceback."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.monitoring.promquery import PrometheusError, query_range
from specmeter.serving.server import ServerThread

DEEP = "[" * 100_000


def ask(body: str | bytes, status: int = 200) -> list[dict[str, Any]]:
    """``query_range`` against a Prometheus that answers ``body``."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=body, headers={"content-type": "application/json"})

    async def go() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await query_range(client, "http://prom", "up", 0, 60, 60)

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (DEEP, "without JSON (nested deeper than 200 levels)"),
        ('{"status": "success", "data": ' + DEEP, "without JSON (nested deeper than 200 levels)"),
        ("[1, 2]", "with JSON that is not an object"),
        ('"success"', "with JSON that is not an object"),
    ],
)
def test_a_hostile_prometheus_body_is_a_prometheus_error(body: str, message: str) -> None:
    with pytest.raises(PrometheusError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ask(body)


@pytest.fixture
def hostile_prometheus() -> Iterator[str]:
    async def query(request: Request) -> Response:
        return Response(DEEP, media_type="application/json")

    with ServerThread(Starlette(routes=[Route("/api/v1/query_range", query)])) as server:
        yield server.url


def test_monitor_prometheus_against_a_hostile_answer_is_one_line(
    hostile_prometheus: str, tmp_path: Any
) -> None:
    result = CliRunner().invoke(
        app,
        ["monitor", "--prometheus", hostile_prometheus, "--once", "--history", str(tmp_path / "h.sqlite")],
    )
    assert "Traceback" not in result.output and result.exit_code == 1, result.output
    assert result.stderr.strip().splitlines() == [
        f"error: --prometheus: {hostile_prometheus.rstrip('/')}/api/v1/query_range answered HTTP 200 without "
        "JSON (nested deeper than 200 levels)"
    ]
