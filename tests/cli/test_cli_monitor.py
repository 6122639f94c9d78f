"""``specmeter monitor`` through the CLI against a fake engine: one window, history, alerts; option errors."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import assert_usage_error
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from typer.testing import CliRunner, Result

from specmeter.cli.app import app
from specmeter.server.hosting import ServerThread

runner = CliRunner()


@pytest.fixture
def engine_url() -> Iterator[str]:
    scrapes = [0]

    async def metrics(request: Request) -> Response:
        scrapes[0] += 1
        n = scrapes[0]  # every scrape: 10 more steps, 40 drafted, 12 accepted (α = 0.3)
        lab = 'engine="0",model_name="m"'
        return PlainTextResponse(
            f"vllm:spec_decode_num_drafts_total{{{lab}}} {10 * n}\n"
            f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {40 * n}\n"
            f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {12 * n}\n"
        )

    with ServerThread(Starlette(routes=[Route("/metrics", metrics)])) as server:
        yield server.url


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, ["monitor", *[str(a) for a in args]])


def test_once_writes_history_and_alerts(engine_url: str, tmp_path: Path) -> None:
    history, alerts = tmp_path / "h.sqlite", tmp_path / "alerts.jsonl"
    result = invoke(
        "--scrape",
        engine_url,
        "--interval",
        "50ms",
        "--once",
        "--history",
        history,
        "--alerts-log",
        alerts,
        "--alert-windows",
        "1",
    )
    assert result.exit_code == 0, result.output
    assert "α 0.300" in result.stdout and "τ 2.200" in result.stdout  # one line per window off-terminal
    with sqlite3.connect(history) as db:
        rows = db.execute("SELECT target, acceptance_rate, acceptance_length FROM windows").fetchall()
    assert rows == [(engine_url + "/metrics", pytest.approx(0.3), pytest.approx(2.2))]
    events = [json.loads(line) for line in alerts.read_text().splitlines()]
    assert [(e["rule"], e["state"]) for e in events] == [("alpha_low", "firing")]
    assert "ALERT alpha_low" in result.stderr


def test_option_mistakes(engine_url: str, tmp_path: Path) -> None:
    assert_usage_error(invoke("--scrape", engine_url, "--interval", "fast"), "--interval")
    assert_usage_error(invoke("--scrape", engine_url, "--interval", "0s"), "--interval")
    assert_usage_error(invoke("--scrape", "localhost:9/metrics"), "http")
    assert_usage_error(invoke("--scrape", engine_url, "--alert-alpha", "2"), "--alert-alpha")
    assert_usage_error(invoke("--scrape", engine_url, "--alert-tau-drop", "150"), "--alert-tau-drop")
    assert_usage_error(invoke("--scrape", engine_url, "--server", "ollama"), "--server")


@pytest.fixture
def broken_url() -> Iterator[str]:
    async def metrics(request: Request) -> Response:
        return PlainTextResponse("<html>this is not Prometheus text {{{</html>\n")

    with ServerThread(Starlette(routes=[Route("/metrics", metrics)])) as server:
        yield server.url


def test_once_without_a_good_scrape_exits_1(broken_url: str, engine_url: str, tmp_path: Path) -> None:
    # Issue 12: --once exited 0 when its only scrape failed or the text was malformed.
    refused = "http://127.0.0.1:9"
    for urls, needle in (
        ([refused], "cannot connect"),
        ([broken_url], "malformed Prometheus text"),
        ([engine_url, refused], f"no good scrape of {refused}/metrics"),  # one engine of two is enough
    ):
        args = [a for u in urls for a in ("--scrape", u)]
        result = invoke(*args, "--interval", "50ms", "--once", "--history", tmp_path / "h.sqlite")
        assert result.exit_code == 1, result.output
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and "--once: no good scrape" in errors[0] and needle in errors[0], errors
        assert "Traceback" not in result.output
