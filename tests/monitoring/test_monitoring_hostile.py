"""Hostile answers from Prometheus and the engines (issue 29): one line naming the problem, no traceback."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.monitoring.promquery import PrometheusError, query_range
from specmeter.server.hosting import ServerThread

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


# ------------------------------------------------------------------ extreme numbers (item 9)


@pytest.mark.parametrize(
    ("series", "message"),
    [
        (
            {"metric": "x", "values": [[60, "1"]]},
            r"data.result\[0\].metric: expected an object of label values",
        ),
        (
            {"metric": {"pod": 3}, "values": []},
            r"data.result\[0\].metric: expected an object of label values",
        ),
        ({"metric": {}, "values": "1"}, r"data.result\[0\].values: expected a list of \[time, value\]"),
        ({"metric": {}, "values": [[60]]}, r"data.result\[0\].values\[0\]: expected \[time, \"value\"\]"),
        ({"metric": {}, "values": [[60, "many"]]}, r"data.result\[0\].values\[0\]: expected"),
        (
            {"metric": {}, "values": [[1e18, "1"]]},
            r"data.result\[0\].values\[0\]: time 1e\+18 is not between",
        ),
        ("x", r"data.result\[0\]: expected an object, got 'x'"),
    ],
)
def test_a_malformed_matrix_is_a_prometheus_error_naming_the_field(series: object, message: str) -> None:
    body = {"status": "success", "data": {"resultType": "matrix", "result": [series]}}
    with pytest.raises(PrometheusError, match=message):
        ask(json.dumps(body))


def scraped_counters(scale: float, accepted: str | None = None) -> Starlette:
    scrapes = [0]

    async def metrics(request: Request) -> Response:
        scrapes[0] += 1
        n, lab = scrapes[0], 'engine="0",model_name="m"'
        return PlainTextResponse(
            f"vllm:spec_decode_num_drafts_total{{{lab}}} {scale * n / 4}\n"
            f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {scale * n}\n"
            f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {accepted or scale * n / 2}\n"
        )

    return Starlette(routes=[Route("/metrics", metrics)])


def test_a_scraped_counter_of_1e307_is_stored_not_an_sqlite_overflow(tmp_path: Any) -> None:
    from specmeter.monitoring.store import HistoryStore

    history = tmp_path / "h.sqlite"
    with ServerThread(scraped_counters(1e307)) as server:
        args = ["monitor", "--scrape", server.url, "--interval", "50ms", "--once", "--history", str(history)]
        result = CliRunner().invoke(app, args)
    assert "Traceback" not in result.output and result.exit_code == 0, result.output
    store = HistoryStore(history)
    (row,) = [w for w in store.windows() if w["acceptance_rate"] is not None]
    store.close()
    assert row["acceptance_rate"] == 0.5 and row["drafted_tokens"] == 1e307  # a REAL: past SQLite's INTEGER


def test_a_scraped_counter_of_inf_is_missing_not_a_traceback(tmp_path: Any) -> None:
    # +Inf − +Inf is NaN: round(NaN) raised ValueError. A counter that is not finite reads as missing.
    with ServerThread(scraped_counters(40, accepted="+Inf")) as server:
        args = ["monitor", "--scrape", server.url, "--interval", "50ms", "--once"]
        result = CliRunner().invoke(app, [*args, "--history", str(tmp_path / "h.sqlite")])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 0 and "α —" in result.output, result.output


def test_a_prometheus_error_text_reaches_the_terminal_escaped(tmp_path: Any) -> None:
    # Issue 29: a server's error text is printed in the error: line; ESC [2J in it cleared the screen.
    async def query(request: Request) -> Response:
        body = {"status": "error", "errorType": "bad_data", "error": "\x1b[2J[red]boom"}
        return Response(json.dumps(body), status_code=400, media_type="application/json")

    with ServerThread(Starlette(routes=[Route("/api/v1/query_range", query)])) as server:
        args = ["monitor", "--prometheus", server.url, "--once", "--history", str(tmp_path / "h.sqlite")]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "\x1b" not in result.output, result.output
    assert result.stderr.strip().endswith("bad_data: \\x1b[2J[red]boom"), result.stderr
