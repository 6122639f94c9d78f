"""monitor --prometheus --server llamacpp: the queries use llama.cpp's ``spec_decode_*`` counters (S, D, A
and per position, hence α, τ and per-position rates), not the fork builds' ``n_drafted_*`` names.

A fake Prometheus answers each counter by its exact name with the values of the recorded llama-server fixture
(tests/fixtures/llamacpp/0c1e570), and records every query asked.
"""

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
from specmeter.monitoring.promquery import PrometheusSource
from specmeter.server.hosting import ServerThread

W = 60.0
FIXTURE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "llamacpp" / "0c1e570" / "expected.json").read_text("utf-8")
)
COUNTERS = {
    "llamacpp:spec_decode_num_drafts_total": FIXTURE["drafts"],  # S
    "llamacpp:spec_decode_num_draft_tokens_total": FIXTURE["draft_tokens"],  # D
    "llamacpp:spec_decode_num_accepted_tokens_total": FIXTURE["accepted"],  # A
    "llamacpp:tokens_predicted_total": FIXTURE["generation_tokens"],
}
PER_POS = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"


def counter_of(query: str) -> str:
    match = re.search(r"increase\(([^{\[]+)", query)
    assert match is not None, query
    return match.group(1)


def fake_prometheus(asked: list[str]) -> Starlette:
    async def query_range_route(request: Request) -> JSONResponse:
        query, start = request.query_params["query"], float(request.query_params["start"])
        asked.append(query)
        name = counter_of(query)
        result = []
        if name in COUNTERS:
            result = [{"metric": {"instance": "cpu-a"}, "values": [[start, str(COUNTERS[name])]]}]
        elif name == PER_POS:
            result = [
                {"metric": {"instance": "cpu-a", "position": str(i)}, "values": [[start, str(v)]]}
                for i, v in enumerate(FIXTURE["accepted_per_position"])
            ]
        return JSONResponse({"status": "success", "data": {"resultType": "matrix", "result": result}})

    return Starlette(routes=[Route("/api/v1/query_range", query_range_route)])


@pytest.fixture(scope="module")
def prom() -> Any:
    asked: list[str] = []
    with ServerThread(fake_prometheus(asked)) as server:
        yield server.url, asked


def test_llamacpp_queries_name_the_spec_decode_counters() -> None:
    queries = PrometheusSource("http://prom", W, "instance", 'job="llama"', kind="llamacpp").queries()
    names = {
        "drafts": "llamacpp:spec_decode_num_drafts_total",
        "draft_tokens": "llamacpp:spec_decode_num_draft_tokens_total",
        "accepted": "llamacpp:spec_decode_num_accepted_tokens_total",
        "generation_tokens": "llamacpp:tokens_predicted_total",
    }
    per_position = queries.pop("per_position")
    assert queries == {
        canon: f'sum by (instance) (increase({name}{{job="llama"}}[60000ms]))'
        for canon, name in names.items()
    }
    assert per_position == f'sum by (instance, position) (increase({PER_POS}{{job="llama"}}[60000ms]))'
    # The fork builds' names are never asked for.
    assert not any("n_drafted" in q for q in queries.values())
    vllm = PrometheusSource("http://prom", W, "instance").queries()
    assert "per_position" in vllm and all(q.count("vllm:") == 1 for q in vllm.values())


def test_llamacpp_windows_have_alpha_tau_and_per_position(prom: Any) -> None:
    url, _ = prom
    source = PrometheusSource(url, W, "instance", kind="llamacpp")

    async def go() -> Any:
        async with httpx.AsyncClient() as client:
            return await source.windows(client, 1000.0, 1000.0)

    (window,) = asyncio.run(go())
    a = window.acceptance
    assert window.target == "instance=cpu-a" and a is not None
    s, d, acc = FIXTURE["drafts"], FIXTURE["draft_tokens"], FIXTURE["accepted"]
    assert (a.steps, a.drafted_tokens, a.accepted_tokens) == (s, d, acc)
    assert a.acceptance_rate == pytest.approx(acc / d)
    assert a.acceptance_length == pytest.approx(1 + acc / s)
    assert a.per_position is not None
    assert [p["cumulative"] for p in a.per_position] == pytest.approx(
        [v / s for v in FIXTURE["accepted_per_position"]]
    )
    assert a.tokens_per_s == pytest.approx(FIXTURE["generation_tokens"] / W)


def test_cli_server_llamacpp_asks_for_llamacpp_names(prom: Any, tmp_path: Path) -> None:
    url, asked = prom
    asked.clear()
    out = tmp_path / "w.json"
    result = CliRunner().invoke(
        app,
        [
            "monitor", "--prometheus", url, "--server", "llamacpp", "--group-by", "instance",
            "--interval", "60s", "--once", "--json", str(out), "--history", str(tmp_path / "h.sqlite"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(map(counter_of, asked)) == sorted([*COUNTERS, PER_POS])
    (window,) = json.loads(out.read_text("utf-8"))["windows"]
    assert window["acceptance_rate"] == pytest.approx(FIXTURE["accepted"] / FIXTURE["draft_tokens"])
    assert window["acceptance_length"] == pytest.approx(1 + FIXTURE["accepted"] / FIXTURE["drafts"])
