"""``load --client-processes N``: streams read by worker processes, outcomes merged, nothing left running."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from serving_fakes import Behaviour, fake_openai
from specmeter.load.client import StreamRequest
from specmeter.load.config import LoadConfig, Phase
from specmeter.load.run import execute_load
from specmeter.load.workers import WorkerStreams
from specmeter.server.hosting import ServerThread
from specmeter.workloads.loader import Prompt

PROMPTS = tuple(Prompt(f"p{i}", "general", f"prompt number {i}", None, None, i + 1) for i in range(6))


@pytest.mark.parametrize("phase", [Phase(concurrency=3), Phase(rate=60.0)], ids=["closed", "open"])
def test_worker_processes_give_the_same_records(tmp_path: Path, phase: Phase) -> None:
    behaviour = Behaviour(delay=0.005)
    with ServerThread(fake_openai(behaviour), graceful_timeout=2) as server:
        cfg = LoadConfig(endpoint=server.url, prompts=PROMPTS, phases=[phase], limit=12, warmup=1,
                         scrape_metrics=False, client_processes=2)  # fmt: skip
        result = asyncio.run(
            execute_load(cfg, config={}, json_out=tmp_path / "r.json", log_out=tmp_path / "r.jsonl")
        )
    level = result["candidates"][0]
    # Warm-ups included (once per server, and the level's own): every request reached the server once.
    assert behaviour.requests == 13 + level["load"]["warmup_requests"]
    assert level["load"]["warmup_requests"] >= 1 and level["load"]["warmup_failed"] == 0
    assert level["load"]["completed"] == 12 and level["load"]["failed"] == 0
    # Tokens per chunk and totals come back from the workers exactly as in-process.
    assert level["summary"]["emitted_tokens"] == 12 * sum(behaviour.chunks)
    assert level["load"]["token_sources"] == {"token_ids": 12}
    ids = sorted(json.loads(line)["id"] for line in (tmp_path / "r.jsonl").read_text().splitlines())
    assert ids == sorted(f"p{i % 6}" for i in range(12))
    # Stamps were taken in the workers on the machine-wide monotonic clock: spans are sane, in flight is held.
    held = level["effective_concurrency"]
    assert 0.0 < held <= (phase.concurrency or 12) + 1e-9
    assert level["summary"]["ttft_ms"]["p50"] > 0 and level["load"]["client_cpu"] >= 0


def test_cancel_reaches_the_worker_and_nothing_outlives_close() -> None:
    behaviour = Behaviour(delay=0.2)  # ~1 s per request

    async def go(url: str) -> tuple[list[str], list[bool]]:
        streams = WorkerStreams(2, stall_timeout=10.0)
        await streams.start()
        interrupted: list[str] = []
        request = StreamRequest(
            "x", "c", url + "/v1/completions", {"model": "m", "prompt": "hi", "stream": True}
        )
        task = asyncio.create_task(streams.send(request, 1, lambda o: interrupted.append(o.error or "")))
        while behaviour.requests < 1:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        procs = list(streams._procs)
        await streams.aclose()
        return interrupted, [p.is_alive() for p in procs]

    with ServerThread(fake_openai(behaviour), graceful_timeout=2) as server:
        interrupted, alive = asyncio.run(go(server.url))
    assert interrupted and interrupted[0].startswith("interrupted: Ctrl-C")
    assert alive == [False, False]
