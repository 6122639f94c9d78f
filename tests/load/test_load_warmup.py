"""Each level warmed at its own load (issue 31): ``LoadConfig.level_warmup`` sizes it, ``LevelRunner`` sends
it at the level's concurrency just before the level, and none of it is ever counted — not in the records,
the CSV/JSONL rows, the summaries or the level's request counts; the result says how many ran and for how
long (``warmup_requests``, ``warmup_s``)."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from serving_fakes import Behaviour, fake_openai
from specmeter.load.config import WARMUP_UNKNOWN_LATENCY, LoadConfig, LoadConfigError, Phase
from specmeter.load.run import execute_load
from specmeter.load.trace import TraceEntry
from specmeter.server.hosting import ServerThread
from specmeter.workloads.loader import Prompt

PROMPTS = tuple(Prompt(f"p{i}", "general", f"Prompt number {i} says", None, None, i) for i in range(6))


def _cfg(**fields: Any) -> LoadConfig:
    return LoadConfig(endpoint="http://127.0.0.1:9", prompts=PROMPTS, **fields)


def test_the_default_fills_each_level_once() -> None:
    c8 = Phase(concurrency=8)
    assert _cfg().level_warmup(c8) == 6  # one per stream, but never more than the level sends (6 prompts)
    assert _cfg(limit=24).level_warmup(c8) == 8
    assert _cfg(duration=10.0).level_warmup(c8) == 8
    # A rate level: rate × the endpoint's latest latency (Little's law: the requests in flight once steady).
    assert _cfg(limit=24).level_warmup(Phase(rate=4.0), latency_s=1.3) == 6
    assert _cfg(limit=24).level_warmup(Phase(rate=0.1), latency_s=1.3) == 1
    assert _cfg(limit=24).level_warmup(Phase(rate=4.0)) == WARMUP_UNKNOWN_LATENCY  # no latency seen yet
    assert _cfg(duration=1.0).level_warmup(Phase(rate=4.0), latency_s=3.0) == 4  # the level sends 4
    # A trace: its mean rate (4 requests over 1.5 s = 2/s, replayed twice as fast), × the latency.
    trace = [TraceEntry(t, line) for line, t in enumerate((0.0, 0.5, 1.0, 1.5))]
    assert _cfg(trace=trace, trace_speed=2.0).level_warmup(Phase(trace=True), latency_s=1.0) == 4
    assert _cfg(trace=trace).level_warmup(Phase(trace=True), latency_s=0.25) == 1


def test_warmup_per_level_is_taken_as_given_and_checked() -> None:
    assert _cfg(warmup_per_level=0).level_warmup(Phase(concurrency=8)) == 0
    assert _cfg(warmup_per_level=10).level_warmup(Phase(rate=2.0), latency_s=1.0) == 10
    with pytest.raises(LoadConfigError, match="--warmup-per-level"):
        _cfg(warmup_per_level=-1)


def _run(cfg: LoadConfig, tmp: Path) -> dict[str, Any]:
    out = {"json_out": tmp / "r.json", "csv_out": tmp / "r.csv", "log_out": tmp / "r.jsonl"}
    return asyncio.run(execute_load(cfg, config={}, hygiene=False, **out))


def test_each_level_is_warmed_at_its_concurrency_and_never_counted(tmp_path: Path) -> None:
    spec_b, base_b = Behaviour(delay=0.03), Behaviour(delay=0.03)  # 4 chunks: requests sent together overlap
    with ServerThread(fake_openai(spec_b)) as spec, ServerThread(fake_openai(base_b)) as base:
        cfg = LoadConfig(
            endpoint=spec.url, baseline=base.url, prompts=PROMPTS, limit=3, warmup=0, blocks=1,
            phases=[Phase(concurrency=1), Phase(concurrency=3)], scrape_metrics=False,
        )  # fmt: skip
        result = _run(cfg, tmp_path)
    c1, c3 = result["candidates"]
    for behaviour in (spec_b, base_b):
        # Per server: c=1's warm-up (1), its 3 requests, c=3's warm-up (3 at once), its 3 requests.
        assert len(behaviour.arrivals) == behaviour.requests == 1 + 3 + 3 + 3
        assert behaviour.arrivals[0] == 1
        assert max(behaviour.arrivals[4:7]) == 3  # the c=3 warm-up: three requests in flight together
    for level, n in ((c1, 1), (c3, 3)):
        for load in (level["load"], level["baseline"]["load"]):
            assert (load["warmup_requests"], load["warmup_failed"]) == (n, 0) and load["warmup_s"] > 0
            assert load["requests_sent"] == load["completed"] == 3
        assert level["summary"]["requests"] == level["baseline"]["summary"]["requests"] == 3
    rows = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(rows) == 12  # 2 levels × 2 servers × 3 requests: no warm-up request among them
    with open(tmp_path / "r.csv", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == 12
    assert json.loads((tmp_path / "r.json").read_text()) == result


def test_warmup_per_level_zero_sends_none_and_n_sends_n_at_the_levels_concurrency(tmp_path: Path) -> None:
    for n in (0, 5):
        behaviour = Behaviour(delay=0.03)
        with ServerThread(fake_openai(behaviour)) as server:
            cfg = LoadConfig(endpoint=server.url, prompts=PROMPTS, limit=3, warmup=0, warmup_per_level=n,
                             phases=[Phase(concurrency=2)], scrape_metrics=False)  # fmt: skip
            level = _run(cfg, tmp_path / str(n))["candidates"][0]
        assert level["load"]["warmup_requests"] == n and level["load"]["requests_sent"] == 3
        assert behaviour.requests == n + 3
        if n:
            assert max(behaviour.arrivals[:n]) == 2  # five requests through the level's two streams
            assert level["load"]["warmup_s"] > 0
        else:
            assert level["load"]["warmup_s"] == 0.0


def test_a_rate_levels_warmup_is_sent_at_the_rate_and_sized_by_the_latency(tmp_path: Path) -> None:
    behaviour = Behaviour()
    with ServerThread(fake_openai(behaviour)) as server:
        cfg = LoadConfig(endpoint=server.url, prompts=PROMPTS, limit=6, warmup=0, arrival="constant",
                         phases=[Phase(rate=50.0), Phase(rate=100.0)], scrape_metrics=False)  # fmt: skip
        first, second = _run(cfg, tmp_path)["candidates"]
    # No latency known before the first level: the fixed default; after it, ⌈rate × its median latency⌉.
    assert first["load"]["warmup_requests"] == WARMUP_UNKNOWN_LATENCY
    assert 1 <= second["load"]["warmup_requests"] <= 6
    assert behaviour.requests == 12 + first["load"]["warmup_requests"] + second["load"]["warmup_requests"]
    assert first["load"]["requests_sent"] == second["load"]["requests_sent"] == 6


def test_the_console_says_how_a_level_was_warmed_and_flags_a_slow_start() -> None:
    from rich.console import Console

    from specmeter.load.view import slow_start_line, warmup_line
    from specmeter.sweep.view import render_sweep

    assert warmup_line({"warmup_requests": 0}) is None
    assert warmup_line({"warmup_requests": 1, "warmup_s": 0.3}) == (
        "warm-up: 1 request at the level's load (0.3 s, not counted)"
    )
    assert warmup_line({"warmup_requests": 8, "warmup_s": 1.2, "warmup_failed": 2}).endswith("; 2 failed)")
    flagged = {"first": 6, "ratio": 1.62, "ci": [1.31, 2.05], "flagged": True}
    assert slow_start_line({"slow_start": flagged | {"flagged": False}}) is None
    line = slow_start_line({"slow_start": flagged})
    assert line is not None and line.startswith("slow start: the first 6 requests took 1.62× [1.31, 2.05]")
    cell = {"run": "k=0", "level": "c=8", "k": 0, "slow_start": flagged}
    console = Console(record=True, width=200)
    render_sweep({"sweep": {"cells": [cell], "levels": ["c=8"]}}, console)
    assert "k=0 at c=8: slow start: the first 6 requests took 1.62×" in console.export_text()
