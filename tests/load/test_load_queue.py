"""``load`` records the server's own queue (running / waiting requests) per level, beside the client's
effective concurrency: sampled from /metrics while the level runs (``load.readings.sampling_queue``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.console import Console

from serving_fakes import Behaviour, vllm_metrics
from specmeter.load.config import Endpoint, LoadConfig
from specmeter.load.readings import ServerReadings
from specmeter.load.run import execute_load
from specmeter.load.view import queue_line, render_load
from specmeter.workloads.loader import Prompt

PROMPTS = tuple(Prompt(str(i), "general", f"prompt {i}", None, None, i) for i in range(4))
QUEUE = (
    'vllm:num_requests_running{engine="0",model_name="m"} 3\n'
    'vllm:num_requests_waiting{engine="0",model_name="m"} 1\n'
)


def _load(cfg: LoadConfig, tmp: Path) -> dict[str, Any]:
    return asyncio.run(execute_load(cfg, config={"endpoint": cfg.endpoint}, json_out=tmp / "r.json"))


def test_level_records_the_servers_running_and_waiting(fake: tuple[Behaviour, str], tmp_path: Path) -> None:
    behaviour, url = fake
    behaviour.metrics = vllm_metrics(10, 40, 20, [8, 6, 4, 2], 50) + QUEUE
    behaviour.delay = 0.05  # each request streams for ~0.25 s: the level outlasts a sample interval
    cfg = LoadConfig(endpoint=url, prompts=PROMPTS, limit=4, warmup=0)
    result = _load(cfg, tmp_path)
    level = result["candidates"][0]
    queue = level["load"]["server_queue"]
    assert queue["samples"] >= 1 and queue["failed_samples"] == 0
    assert queue["running"] == {"mean": 3.0, "max": 3.0}
    assert queue["waiting"] == {"mean": 1.0, "max": 1.0}
    assert queue["metrics"]["running"] == "vllm:num_requests_running"
    assert queue["metrics"]["waiting"] == "vllm:num_requests_waiting"
    console = Console(width=200, record=True)
    render_load(result, console)
    assert "server queue over" in console.export_text()


def test_no_queue_without_metrics(fake: tuple[Behaviour, str], tmp_path: Path) -> None:
    _, url = fake
    cfg = LoadConfig(endpoint=url, prompts=PROMPTS, limit=2, warmup=0, scrape_metrics=False)
    assert _load(cfg, tmp_path)["candidates"][0]["load"]["server_queue"] is None


def test_queue_summary_mean_max_and_missing_gauges() -> None:
    ep = Endpoint("speculative", "http://h:1", "http://h:1/metrics", kind="sglang")
    readings = ServerReadings(queue=[{"running": 2.0, "waiting": 0.0}, {"running": 6.0, "waiting": 3.0}])
    summary = readings.queue_summary(ep)
    assert summary is not None
    assert summary["running"] == {"mean": 4.0, "max": 6.0} and summary["waiting"] == {"mean": 1.5, "max": 3.0}
    assert summary["metrics"]["waiting"] == "sglang:num_queue_reqs"
    line = queue_line({"server_queue": summary, "effective_concurrency": 3.5})
    assert line == (
        "server queue over 2 samples (every 0.5 s): running 4.0 mean / 6 max, waiting 1.5 mean / 3 max"
        " · client held 3.50"
    )
    empty = ServerReadings(queue=[{}, {}]).queue_summary(ep)
    assert empty is not None and empty["running"] is None and "sglang:num_running_reqs" in empty["note"]
    assert ServerReadings().queue_summary(ep) is None  # nothing sampled
    unknown = Endpoint("speculative", "http://h:1", "http://h:1/metrics", kind="unknown")
    assert ServerReadings(queue=[{}]).queue_summary(unknown) is None  # a kind without queue gauges
