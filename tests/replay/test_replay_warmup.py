"""`load`'s warm-up requests are not traffic: `serve --log` records their mark and replay leaves them out.

Without the mark, a replay of `serve`'s log would let the suffix cache see each warm-up answer before its
measured twin (issue 38: suffix α 0.390 → 0.474 on the demo).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.load.config import Endpoint, LoadConfig
from specmeter.load.requests import build_request
from specmeter.metrics.warmup import WARMUP_METADATA
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine
from specmeter.workloads.loader import Message, Prompt

runner = CliRunner()

PROMPTS = (
    {
        "id": "p0",
        "category": "legal",
        "prompt": "The Supplier shall indemnify the Customer against all losses",
    },
    {
        "id": "p1",
        "category": "general",
        "prompt": "The children played in the garden until the sun went down",
    },
    {"id": "p2", "category": "general", "prompt": "She walked to the station, bought a coffee"},
)


def test_warmup_marked_in_every_api_that_takes_metadata() -> None:
    ep = Endpoint("speculative", "http://h:1", None, model="m", kind="vllm")
    prompts = (Prompt("c", "legal", None, (Message("user", "Hi"),), 7, 3),)
    cfg = LoadConfig(endpoint=ep.url, prompts=prompts, extra_body={"metadata": {"tenant": "acme"}})
    warm = build_request(cfg, ep, 0, warmup=True).payload["metadata"]
    assert warm == {"domain": "legal", "tenant": "acme", WARMUP_METADATA: "true"}
    assert WARMUP_METADATA not in build_request(cfg, ep, 0).payload["metadata"]
    plain = LoadConfig(endpoint=ep.url, prompts=prompts, domain_metadata=False)
    assert build_request(plain, ep, 0, warmup=True).payload["metadata"] == {WARMUP_METADATA: "true"}


def test_warmup_requests_are_absent_from_a_replay_of_serves_log(tiny: Any, tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS), "utf-8")
    log = tmp_path / "serve.jsonl"
    engine = LocalEngine.load(tiny.target, None, 0, device="cpu")
    with ServerThread(create_app(engine, ServeConfig(log_path=log, log_output=True, max_batch=1))) as server:
        result = runner.invoke(app, [
            "load", "--endpoint", server.url, "--prompts", str(golden), "--concurrency", "1", "--max-tokens",
            "12", "--temperature", "0", "--warmup", "2", "--warmup-per-level", "0", "--log",
            str(tmp_path / "load.jsonl"), "--json", str(tmp_path / "load.json"), "--quiet",
        ])  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in log.read_text("utf-8").splitlines()]
    assert [x.get("warmup", False) for x in lines] == [True, True, False, False, False]
    out = tmp_path / "replay.json"
    result = runner.invoke(app, [
        "replay", "--from", str(log), "--target", str(tiny.target), "--method", "suffix", "--k", "3",
        "--json", str(out), "--no-store", "--quiet",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    section = json.loads(out.read_text("utf-8"))["replay"]["log"]
    assert section["warmup_marked"] == 2 and section["measured"] == len(PROMPTS)
    assert sorted(json.loads(out.read_text("utf-8"))["candidates"][0]["by_category"]) == ["general", "legal"]
