"""``serve`` with continuous batching: concurrent requests decode together, losslessly, with a k schedule."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from specmeter.engine.schedule import KSchedule
from specmeter.monitoring.adapters import DRAFTS, read_counters
from specmeter.monitoring.promtext import parse_metrics
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine

PROMPTS = [
    "The Supplier shall indemnify",
    "She walked to the station",
    "Either party may terminate this Agreement",
    "Preheat the oven",
    "The committee met on Tuesday",
    "To reset the device",
]


def _gauge(url: str, name: str) -> float:
    samples = parse_metrics(httpx.get(url + "/metrics").text).samples
    return sum(s.value for s in samples if s.name == name)


def _counters(url: str) -> dict[str, float]:
    reading = read_counters(parse_metrics(httpx.get(url + "/metrics").text))
    return {name: sum(series.values()) for name, series in reading.counters.items()}


def _ask(url: str, prompt: str, stream: bool) -> dict[str, Any]:
    body = {"prompt": prompt, "max_tokens": 30, "temperature": 0, "return_token_ids": True}
    if not stream:
        return httpx.post(url + "/v1/completions", json=body, timeout=60).json()  # type: ignore[no-any-return]
    chunks, final = 0, {}
    with httpx.stream("POST", url + "/v1/completions", json={**body, "stream": True}, timeout=60) as r:
        for line in r.iter_lines():
            if line.startswith("data: {"):
                event = json.loads(line[6:])
                if event["choices"] and event["choices"][0]["token_ids"]:
                    chunks += 1
                final = event
    return {"chunks": chunks, "spec": final.get("metrics", {}).get("speculative_decoding")}


def test_concurrent_requests_batch_losslessly_and_follow_the_schedule(tiny: Any) -> None:
    schedule = KSchedule.parse([[1, 1, 4], [2, 16, 0]])  # speculate alone, plain decoding in company
    spec = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu", schedule=schedule)
    base = LocalEngine.load(tiny.target, None, 0, device="cpu")
    with (
        ServerThread(create_app(spec, ServeConfig(max_batch=4))) as s,
        ServerThread(create_app(base, ServeConfig(max_batch=1))) as b,
    ):
        expected = [_ask(b.url, p, stream=False)["choices"][0]["text"] for p in PROMPTS]
        before = _counters(s.url)
        running: list[float] = []
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                running.append(_gauge(s.url, "vllm:num_requests_running"))

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            with ThreadPoolExecutor(len(PROMPTS)) as pool:
                texts = list(pool.map(lambda p: _ask(s.url, p, stream=False), PROMPTS))
                streams = list(pool.map(lambda p: _ask(s.url, p, stream=True), PROMPTS))
        finally:
            stop.set()
            watcher.join()
        after = _counters(s.url)
    # Greedy output is the target's own, whatever the batch and k each step had.
    assert [t["choices"][0]["text"] for t in texts] == expected
    assert max(running) > 1 and max(running) <= 4
    # The counters are the requests' own reports, summed (vLLM counts a draft per request and step).
    reports = [t["metrics"]["speculative_decoding"] for t in texts] + [st["spec"] for st in streams]
    assert after[DRAFTS] - before[DRAFTS] == sum(r["num_spec_steps"] for r in reports)
    assert after["draft_tokens"] - before["draft_tokens"] == sum(r["num_draft_tokens"] for r in reports)
    # Steps taken in company ran at k = 0: they emitted a token but were no speculative step.
    decode_steps = sum(st["chunks"] - 1 for st in streams)
    assert sum(st["spec"]["num_spec_steps"] for st in streams) < decode_steps
