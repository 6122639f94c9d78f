"""Every server kind's adapter on what that engine really exports (tests/fixtures/README.md).

Each fixture folder holds a /metrics scrape, maybe a response with the per-request report, and the raw
values in them (``expected.json``). The adapter must detect the kind, read S, D, A and the per-position
counts, and the acceptance functions must turn them into α = A/D, τ = 1 + A/S and per-position = count_i/S —
the same formulas as everywhere in specmeter. vLLM and llama.cpp fixtures were recorded from the real
servers (make test-vllm, make test-llamacpp); the others were written from the engines' source.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from specmeter.load.config import LoadConfig
from specmeter.load.readings import endpoints_for, resolve
from specmeter.monitoring.acceptance import acceptance_from_delta, acceptance_from_requests, steps_from_report
from specmeter.monitoring.adapters import (
    KINDS,
    Reading,
    counter_delta,
    detect_kind,
    read_counters,
    request_report,
)
from specmeter.monitoring.promtext import parse_metrics
from specmeter.workloads.loader import Prompt

FIXTURES = Path(__file__).parents[1] / "fixtures"
CASES = sorted(p.parent for p in FIXTURES.glob("*/*/expected.json"))


def _expected(case: Path) -> dict[str, Any]:
    return json.loads((case / "expected.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _id(case: Path) -> str:
    return f"{case.parent.name}/{case.name}"


def test_every_engine_has_a_fixture() -> None:
    kinds = {_expected(case)["kind"] for case in CASES}
    assert kinds == set(KINDS) - {"unknown"}, kinds
    assert all(_expected(case)["source"] for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_adapter_reads_the_engines_metrics(case: Path) -> None:
    expected = _expected(case)
    snapshot = parse_metrics((case / "metrics.prom").read_text(encoding="utf-8"))
    assert detect_kind(snapshot) == expected["kind"]
    reading = read_counters(snapshot)
    assert reading.kind == expected["kind"] and reading.has_spec
    # From an empty reading every series counts from zero: the delta is the scrape's totals.
    delta = counter_delta(Reading(kind=reading.kind, counters={}), reading)
    acc = acceptance_from_delta(reading.kind, delta, reading.gauges)
    s, d, a = expected["drafts"], expected["draft_tokens"], expected["accepted"]
    per_pos = expected["accepted_per_position"]
    assert acc.generation_tokens == expected["generation_tokens"]
    assert reading.positions == len(per_pos)
    if a is None:  # gauges only (SGLang)
        assert acc.source == "gauges" and acc.steps is None and acc.accepted_tokens is None
        assert acc.acceptance_rate == expected.get("alpha_gauge")
        assert acc.acceptance_length == expected["tau_gauge"]
        return
    assert acc.source == "counters"
    assert (acc.steps, acc.accepted_tokens) == (s, a)
    if d is None:  # TGI: D is not exported, estimated as S·k when the buckets reveal k
        assert acc.drafted_estimated == bool(per_pos)
        assert acc.drafted_tokens == (s * len(per_pos) if per_pos else None)
        d = acc.drafted_tokens
    else:
        assert acc.drafted_tokens == d and not acc.drafted_estimated
    assert acc.acceptance_rate == (pytest.approx(a / d) if d else None)
    if s is not None:
        assert acc.acceptance_length == pytest.approx(1 + a / s)
        assert [p["cumulative"] for p in acc.per_position or []] == pytest.approx([n / s for n in per_pos])
    else:  # no steps: τ only as the engine's own gauge, no per-position
        assert acc.acceptance_length is None and acc.per_position is None
        assert reading.gauges.get("tau_gauge") == expected["tau_gauge"]


@pytest.mark.parametrize("case", [c for c in CASES if (c / "response.json").exists()], ids=_id)
def test_per_request_report_is_read(case: Path) -> None:
    expected = _expected(case)["request"]
    body = json.loads((case / "response.json").read_text(encoding="utf-8"))
    report = request_report(body)
    assert report is not None
    acc = acceptance_from_requests([report])
    assert acc is not None and acc.kind == _expected(case)["kind"]
    assert (acc.drafted_tokens, acc.accepted_tokens, acc.steps) == (
        expected["drafted"],
        expected["accepted"],
        expected["steps"],
    )
    assert acc.acceptance_rate == pytest.approx(expected["accepted"] / expected["drafted"])
    if expected["steps"] is not None:
        assert acc.acceptance_length == pytest.approx(1 + expected["accepted"] / expected["steps"])
    steps = steps_from_report(report)
    assert (steps is not None) == expected.get("exact_steps", False)
    if steps is not None:
        assert len(steps) == expected["steps"]
        assert sum(st.accepted for st in steps) == expected["accepted"]
        assert sum(st.drafted for st in steps) == expected["drafted"]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_load_server_auto_detects_the_kind(case: Path) -> None:
    text = (case / "metrics.prom").read_text(encoding="utf-8")

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/metrics"
        return httpx.Response(200, text=text, headers={"content-type": "text/plain"})

    async def prepare() -> tuple[str, str | None]:
        # What `load --server auto` does before measuring: resolve each endpoint's kind from its /metrics.
        prompt = Prompt(id="p", category="c", text="x", messages=None, max_tokens=None, line=1)
        cfg = LoadConfig(endpoint="http://engine.test", prompts=[prompt], model="m")
        (ep,) = endpoints_for(cfg)
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            await resolve(client, ep, cfg)
        return ep.kind, ep.metrics_note

    kind, note = asyncio.run(prepare())
    assert kind == _expected(case)["kind"] and note is None
