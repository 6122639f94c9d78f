"""``load`` end to end: sweeps with an interleaved baseline, server-side acceptance, failures, Ctrl-C."""

from __future__ import annotations

import asyncio
import csv
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from serving_fakes import Behaviour, fake_openai, vllm_metrics
from specmeter.load.config import LoadConfig, LoadError, Phase
from specmeter.load.readings import endpoints_for, resolve
from specmeter.load.run import execute_load
from specmeter.server.app import create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine
from specmeter.workloads.loader import Message, Prompt

PROMPTS = (
    Prompt("a", "general", "The lighthouse keeper had not seen a ship", None, None, 1),
    Prompt("b", "legal", "The parties agree that force majeure", None, None, 2),
    Prompt("c", "general", None, (Message("user", "Tell me about buttons."),), None, 3),
    Prompt("d", "legal", "This agreement shall be governed by", None, 12, 4),
)


@pytest.fixture(scope="module")
def tiny_servers(tiny: Any) -> Iterator[tuple[str, str]]:
    spec = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu")
    base = LocalEngine.load(tiny.target, None, 0, device="cpu")
    with ServerThread(create_app(spec)) as s, ServerThread(create_app(base)) as b:
        yield s.url, b.url


def _load(cfg: LoadConfig, tmp: Path) -> dict[str, Any]:
    return asyncio.run(
        execute_load(
            cfg,
            config={"endpoint": cfg.endpoint},
            json_out=tmp / "r.json",
            csv_out=tmp / "r.csv",
            log_out=tmp / "r.jsonl",
        )
    )


def test_sweep_with_baseline_on_serve(tiny_servers: tuple[str, str], tmp_path: Path) -> None:
    spec_url, base_url = tiny_servers
    cfg = LoadConfig(
        endpoint=spec_url,
        baseline=base_url + "/v1",
        prompts=PROMPTS,
        max_tokens=16,
        warmup=1,
        phases=[Phase(concurrency=1), Phase(concurrency=2)],
        blocks=2,
    )
    result = _load(cfg, tmp_path)
    assert result["kind"] == "load" and result["complete"] is True
    assert json.loads((tmp_path / "r.json").read_text()) == result
    levels = result["candidates"]
    assert [c["concurrency"] for c in levels] == [1, 2]
    for level in levels:
        s = level["summary"]
        assert s["requests"] == 4 and level["load"]["failed"] == 0
        assert level["k"] == 4
        # serve reports every step per request, so acceptance is exact, per category too; four requests
        # are too few for an interval (docs/metrics.md, "Statistics": from 10 requests up).
        assert level["server"]["used"] == "per_request_steps"
        assert 0.0 <= s["acceptance_rate"] <= 1.0 and s["acceptance_rate_ci"] is None
        # α per request as the engine reported it: its distribution over the level's requests.
        spread = level["server"]["per_request_alpha"]
        assert spread["requests"] == 4 and 0.0 <= spread["p10"] <= spread["p50"] <= spread["p90"] <= 1.0
        assert s["acceptance_length"] == pytest.approx(1 + s["accepted_tokens"] / s["steps"])
        assert set(level["by_category"]) == {"general", "legal"}
        assert level["by_category"]["legal"]["acceptance_rate"] is not None
        # The /metrics counter deltas of the level tell the same story as the per-request reports.
        counters = level["server"]["metrics"]
        assert counters["drafted_tokens"] == s["drafted_tokens"]
        assert counters["accepted_tokens"] == s["accepted_tokens"]
        assert s["speedup_measured"] is not None and s["speedup_measured_ci"] is None
        assert level["baseline"]["summary"]["requests"] == 4
        # serve is detected as vLLM-compatible: one cheap per-chunk count (continuous usage), no ids, no seed.
        assert level["load"]["token_sources"] == {"usage": 4}
        held = level["effective_concurrency"]
        assert held == level["load"]["effective_concurrency"]
        # In flight never exceeds the nominal level, and a closed loop keeps most of it busy.
        assert 0.5 * level["concurrency"] <= held <= level["concurrency"] + 1e-9
        assert 0.0 < level["baseline"]["load"]["effective_concurrency"] <= level["concurrency"] + 1e-9
        assert s["weight_bytes"] is None  # a remote endpoint's memory is unknown, not zero
    rows = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(rows) == 16  # 2 levels × 2 endpoints × 4 requests, warm-up excluded
    with open(tmp_path / "r.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert {r["run"] for r in table} == {"speculative@c=1", "baseline@c=1", "speculative@c=2", "baseline@c=2"}
    spec_rows = [r for r in table if r["run"].startswith("speculative")]
    assert all(int(r["drafted_tokens"]) >= int(r["accepted_tokens"]) for r in spec_rows)


def test_rate_mode_and_final_usage_servers(fake: tuple[Behaviour, str], tmp_path: Path) -> None:
    behaviour, url = fake
    behaviour.mode = "final_usage_only"
    cfg = LoadConfig(
        endpoint=url,
        prompts=PROMPTS,
        phases=[Phase(rate=50.0)],
        arrival="constant",
        limit=6,
        warmup=0,
        warmup_per_level=0,
        scrape_metrics=False,
    )
    result = _load(cfg, tmp_path)
    level = result["candidates"][0]
    assert level["rate"] == 50.0 and level["concurrency"] is None
    assert level["load"]["completed"] == 6
    assert level["load"]["token_sources"] == {"usage_distributed": 6}
    assert level["summary"]["emitted_tokens"] == 6 * sum(behaviour.chunks)
    assert behaviour.requests == 6


def test_metrics_without_spec_counters(fake: tuple[Behaviour, str], tmp_path: Path) -> None:
    behaviour, url = fake
    behaviour.metrics = 'vllm:generation_tokens_total{engine="0",model_name="m"} 5\n'
    cfg = LoadConfig(endpoint=url, prompts=PROMPTS, limit=2, warmup=0)
    level = _load(cfg, tmp_path)["candidates"][0]
    assert level["load"]["completed"] == 2
    assert level["summary"]["acceptance_rate"] is None
    assert level["server"]["used"] is None
    assert any("no speculative-decoding metrics" in n for n in level["server"]["notes"])


def test_counter_reset_between_scrapes(fake: tuple[Behaviour, str], tmp_path: Path) -> None:
    behaviour, url = fake
    behaviour.metrics_seq = [
        vllm_metrics(1000, 4000, 3000, [900, 800, 700, 600], 5000),  # prepare
        vllm_metrics(1000, 4000, 3000, [900, 800, 700, 600], 5000),  # before the block
        vllm_metrics(10, 40, 20, [8, 6, 4, 2], 50),  # after: the server restarted in between
    ]
    cfg = LoadConfig(endpoint=url, prompts=PROMPTS, limit=2, warmup=0)
    level = _load(cfg, tmp_path)["candidates"][0]
    counters = level["server"]["metrics"]
    assert counters["resets"]  # noticed, and the post-restart values taken as the increase
    assert (counters["steps"], counters["drafted_tokens"], counters["accepted_tokens"]) == (10, 40, 20)
    assert level["summary"]["acceptance_rate"] == pytest.approx(0.5)
    assert level["summary"]["per_position"][0]["cumulative"] == pytest.approx(0.8)
    assert level["summary"]["beta"] == pytest.approx(20 / (20 + 10 - 2))  # full drafts: R = S − accepted at k


def test_http_errors_are_counted_not_fatal(fake: tuple[Behaviour, str], tmp_path: Path) -> None:
    behaviour, url = fake
    behaviour.mode, behaviour.status = "status", 429
    level = _load(LoadConfig(endpoint=url, prompts=PROMPTS, limit=3, warmup=0), tmp_path)["candidates"][0]
    assert level["load"]["failed"] == 3 and level["load"]["errors"] == {"HTTP 429": 3}
    assert level["load"]["failures"][0]["status"] == 429
    assert level["summary"]["requests"] == 0
    # The per-request rows say so too, not only the load section.
    with open(tmp_path / "r.csv", newline="") as fh:
        errors = [row["error"] for row in csv.DictReader(fh) if row["run"].startswith("speculative")]
    assert len(errors) == 3 and all(e.startswith("HTTP 429") for e in errors)


def test_unreachable_endpoint_stops_before_measuring() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def go() -> None:
        cfg = LoadConfig(endpoint=f"http://127.0.0.1:{port}", prompts=PROMPTS)
        async with httpx.AsyncClient() as client:
            await resolve(client, endpoints_for(cfg)[0], cfg)

    with pytest.raises(LoadError, match="cannot reach"):
        asyncio.run(go())


def test_interrupt_keeps_finished_requests_on_disk(fake: tuple[Behaviour, str], tmp_path: Path) -> None:
    behaviour, url = fake
    behaviour.delay = 0.02  # ~0.1 s per request
    cfg = LoadConfig(endpoint=url, prompts=PROMPTS, limit=40, warmup=0, scrape_metrics=False)
    finished: list[Any] = []

    async def go() -> None:
        task = asyncio.create_task(
            execute_load(
                cfg,
                config={},
                json_out=tmp_path / "r.json",
                log_out=tmp_path / "r.jsonl",
                on_request=lambda phase, role, outcome: finished.append(outcome),
            )
        )
        while sum(o.ok for o in finished) < 3:
            await asyncio.sleep(0.01)
        task.cancel()  # what Ctrl-C does to asyncio.run's main task
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    rows = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(rows) == len(finished) >= 3
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["complete"] is False
    level = saved["candidates"][0]
    assert level["complete"] is False
    # Requests in flight at the interruption are recorded too (interrupted); the summary has the finished.
    assert level["summary"]["requests"] == sum(o.ok for o in finished) < 40


def test_duration_mode_alternates_endpoints(tmp_path: Path) -> None:
    spec_b, base_b = Behaviour(), Behaviour()
    with ServerThread(fake_openai(spec_b)) as spec, ServerThread(fake_openai(base_b)) as base:
        cfg = LoadConfig(endpoint=spec.url, baseline=base.url, prompts=PROMPTS, duration=0.4, warmup=0,
                         phases=[Phase(concurrency=2)], scrape_metrics=False)  # fmt: skip
        level = _load(cfg, tmp_path)["candidates"][0]
    assert level["load"]["completed"] > 0 and level["baseline"]["load"]["completed"] > 0
    assert spec_b.requests == level["load"]["requests_sent"] + level["load"]["warmup_requests"]
    assert level["load"]["warmup_requests"] == 2  # the level's own warm-up: one per stream
    # Both sides ran the same cyclic workload, so requests pair by prompt and E_meas exists.
    assert level["summary"]["speedup_measured"] is not None


def test_slo_per_level_with_baseline_on_serve(tiny_servers: tuple[str, str], tmp_path: Path) -> None:
    """--slo judges each role's requests of each level: a generous SLO is met by every request, an
    impossible one by none, and the goodput identities hold against the level's own figures."""
    from specmeter.metrics.slo import SLO

    spec, base = tiny_servers
    results = {}
    for name, slo in (
        ("loose", SLO(ttft_p99_ms=60_000, tpot_p99_ms=60_000)),
        ("tight", SLO(tpot_p99_ms=1e-6)),
    ):
        cfg = LoadConfig(
            endpoint=spec, baseline=base, prompts=PROMPTS, limit=4, max_tokens=8, warmup=0, slo=slo, k=4
        )
        results[name] = _load(cfg, tmp_path / name)["candidates"][0]
    for role in (results["loose"]["load"], results["loose"]["baseline"]["load"]):
        block = role["slo"]
        assert block["slo"] == {"ttft_p99_ms": 60_000.0, "tpot_p99_ms": 60_000.0}
        assert block["attainment"]["judged"] == role["requests_sent"] == 4
        assert block["attainment"]["met"] == role["completed"] == 4
        assert block["goodput"]["requests_per_s"] == pytest.approx(role["requests_per_s"])
        assert block["goodput"]["tokens_per_s"] == pytest.approx(role["output_tokens_per_s"])
    tight = results["tight"]["load"]["slo"]
    assert tight["attainment"]["met"] == 0 and tight["attainment"]["share"] == 0.0
    assert tight["violations"]["tpot_p99_ms"] == 4
    assert tight["goodput"]["requests_per_s"] == 0.0
    from specmeter.load.view import slo_line

    assert slo_line(tight).startswith("SLO met by 0/4 = 0% [0%, ")


def test_slo_counts_failed_requests_as_misses(fake: tuple[Behaviour, str], tmp_path: Path) -> None:
    from specmeter.metrics.slo import SLO

    behaviour, url = fake
    behaviour.mode, behaviour.status = "status", 429
    cfg = LoadConfig(endpoint=url, prompts=PROMPTS, limit=3, warmup=0, slo=SLO(ttft_p99_ms=60_000))
    block = _load(cfg, tmp_path)["candidates"][0]["load"]["slo"]
    assert block["attainment"]["judged"] == 3 and block["attainment"]["met"] == 0
    assert block["violations"] == {"ttft_p99_ms": 0, "failed": 3}
