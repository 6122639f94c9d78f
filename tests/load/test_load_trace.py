"""Realistic arrivals: gamma burstiness, trace replay (own and Mooncake), schedules shared by endpoints."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import statistics
from pathlib import Path
from typing import Any

import pytest

from specmeter.load import level as loadlevel
from specmeter.load.arrivals import arrival_gaps
from specmeter.load.config import Endpoint, LoadConfig, Phase
from specmeter.load.level import LevelRunner, new_phase
from specmeter.load.trace import TraceError, assign_prompts, load_trace, trace_gaps
from specmeter.workloads.loader import Message, Prompt


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
def test_gamma_gaps_have_the_rate_and_the_burstiness(burstiness: float) -> None:
    rng = random.Random(1)
    gaps = list(itertools.islice(arrival_gaps(2.0, "gamma", rng, burstiness), 40_000))
    mean = statistics.fmean(gaps)
    cv = statistics.pstdev(gaps) / mean
    assert abs(mean - 0.5) < 0.5 * 0.03  # the rate does not depend on B
    assert abs(cv - burstiness**-0.5) < 0.05 * burstiness**-0.5  # CV = 1/√B; B = 1 is Poisson's CV of 1
    with pytest.raises(ValueError, match="burstiness"):
        next(arrival_gaps(1.0, "gamma", rng, 0.0))


def test_both_endpoints_get_the_same_arrival_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[tuple[str, int], list[float]] = {}
    calls: list[str] = []

    async def fake_open_loop(send: Any, work: Any, gaps: Any, deadline: Any, on_outcome: Any) -> None:
        indices = list(work)
        seen[(calls[-1], indices[0])] = list(itertools.islice(gaps, len(indices)))

    async def fake_read(client: Any, ep: Endpoint, readings: Any) -> None:
        calls.append(ep.role)

    monkeypatch.setattr(loadlevel, "open_loop", fake_open_loop)
    monkeypatch.setattr(loadlevel, "read", fake_read)
    prompts = [Prompt(str(i), "c", f"p{i}", None, None, i) for i in range(40)]
    cfg = LoadConfig(
        endpoint="http://x",
        prompts=prompts,
        baseline="http://y",
        arrival="gamma",
        burstiness=0.3,
        warmup_per_level=0,  # the level's blocks alone: a warm-up is sent with even gaps of its own
    )
    endpoints = [Endpoint("speculative", "http://x", None), Endpoint("baseline", "http://y", None)]
    phase = Phase(rate=5.0)
    runner = LevelRunner(cfg, None)  # type: ignore[arg-type]
    asyncio.run(runner.run_phase(new_phase(phase, endpoints), endpoints))
    starts = sorted({start for _, start in seen})
    assert len(starts) == 4  # four alternating blocks
    for start in starts:
        assert seen[("speculative", start)] == seen[("baseline", start)]
    assert seen[("speculative", starts[0])] != seen[("speculative", starts[1])]


def write(tmp_path: Path, *lines: object, name: str = "trace.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), "utf-8"
    )
    return path


def test_mooncake_and_own_trace_formats(tmp_path: Path) -> None:
    mooncake = write(
        tmp_path,
        {"timestamp": 3052, "input_length": 7234, "output_length": 794, "hash_ids": [0, 28, 29]},
        {"timestamp": 1000, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1, 2]},
        {"timestamp": 1000, "input_length": 7319, "output_length": 490, "hash_ids": [0, 14]},
    )
    entries = load_trace(mooncake)
    assert [(e.t, e.input_tokens, e.output_tokens, e.line) for e in entries] == [
        (0.0, 6755, 500, 2), (0.0, 7319, 490, 3), (2.052, 7234, 794, 1),
    ]  # fmt: skip
    own = write(
        tmp_path,
        {"t": 5.5, "output_tokens": 30, "prompt_id": "b", "temperature": 0.7},
        {"t": 5.0},
        name="o.jsonl",
    )
    assert [(e.t, e.prompt_id, e.temperature) for e in load_trace(own)] == [
        (0.0, None, None),
        (0.5, "b", 0.7),
    ]
    bad = write(
        tmp_path,
        {"t": -1},
        {"timestamp": 5, "input_length": 0},
        "nope",
        {"t": 1, "temperature": 3},
        name="b.jsonl",
    )
    with pytest.raises(TraceError) as info:
        load_trace(bad)
    assert str(info.value).splitlines() == [
        f"{bad}:1: field 't': must be a number in [0, 604800] (seconds, a week at most; 't' or Mooncake's "
        "'timestamp')",
        f"{bad}:2: field 'input_length': must be a positive integer",
        f"{bad}:3: invalid JSON (Expecting value)",
        f"{bad}:4: field 'temperature': must be a number in [0, 2]",
    ]


def test_prompts_are_matched_by_length_rotating_ties_and_pinned_by_id(tmp_path: Path) -> None:
    prompts = [
        Prompt("short-a", "c", "x" * 40, None, None, 1),  # ≈10 tokens
        Prompt("short-b", "c", "y" * 40, None, None, 2),
        Prompt("long", "c", None, (Message("user", "z" * 396),), None, 3),  # "user: …\\nassistant:" ≈ 105
    ]
    rows = [{"t": 0, "input_tokens": 12}, {"t": 1, "input_tokens": 9}, {"t": 2, "input_tokens": 500}]
    trace = load_trace(write(tmp_path, *rows, {"t": 3, "prompt_id": "short-b"}, {"t": 4}))
    assigned = assign_prompts(trace, prompts)
    # No length, no id: the golden set in order (line 5 → prompt 5 mod 3).
    assert [prompts[e.prompt_index].id for e in assigned] == [
        "short-a",
        "short-b",
        "long",
        "short-b",
        "short-b",
    ]
    with pytest.raises(TraceError, match="prompt_id 'x' is not in the golden set"):
        assign_prompts(load_trace(write(tmp_path, {"t": 0, "prompt_id": "x"}, name="x.jsonl")), prompts)
    assert trace_gaps(assigned, [0, 1, 2], speed=2.0) == [0.5, 0.5, 0.0]
