"""``specmeter load`` through the CLI against ``serve`` on the tiny models; mistakes are one-line errors."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner, Result

import specmeter.load.run
from specmeter.cli.app import app
from specmeter.report.html import render_report
from specmeter.report.validate import validate_result
from specmeter.server.app import create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine

runner = CliRunner()


PROMPTS = [
    {"id": "a", "category": "general", "prompt": "The lighthouse keeper had not seen a ship"},
    {"id": "b", "category": "legal", "prompt": "The parties agree that force majeure", "max_tokens": 6},
    {"id": "c", "category": "legal", "messages": [{"role": "user", "content": "Define indemnity."}]},
]


@pytest.fixture(scope="module")
def urls(tiny: Any) -> Iterator[tuple[str, str]]:
    spec = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu")
    base = LocalEngine.load(tiny.target, None, 0, device="cpu")
    with ServerThread(create_app(spec)) as s, ServerThread(create_app(base)) as b:
        yield s.url, b.url


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    return path


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, ["load", *[str(a) for a in args]])


def test_sweep_writes_the_shared_result_files(urls: tuple[str, str], prompts: Path, tmp_path: Path) -> None:
    spec, base = urls
    out = tmp_path / "out"
    result = invoke(
        "--endpoint",
        spec,
        "--baseline",
        base,
        "--prompts",
        prompts,
        "--concurrency",
        "1,2",
        "--max-tokens",
        "8",
        "--warmup",
        "1",
        "--json",
        out / "r.json",
        "--csv",
        out / "r.csv",
        "--log",
        out / "r.jsonl",
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "r.json").read_text())
    assert data["kind"] == "load" and data["complete"] is True
    assert validate_result(data) == []  # report/compare/roi read load results back through this check
    assert data["run"]["config"]["concurrency"] == [1, 2]
    assert [c["concurrency"] for c in data["candidates"]] == [1, 2]
    assert all(c["summary"]["speedup_measured"] is not None for c in data["candidates"])
    assert (out / "r.csv").read_text().count("\n") == 1 + 2 * 2 * 3
    assert len((out / "r.jsonl").read_text().splitlines()) == 2 * 2 * 3
    assert "c=1" in result.output and "E_meas" in result.output and "base" in result.output
    # Each level warmed at its own concurrency, on both servers, said on the console (issue 31).
    assert [c["load"]["warmup_requests"] for c in data["candidates"]] == [1, 2]
    assert [c["baseline"]["load"]["warmup_requests"] for c in data["candidates"]] == [1, 2]
    assert "c=2 spec: warm-up: 2 requests at the level's load" in " ".join(result.output.split())
    # The machine was watched over the levels; the in-process servers are part of the measurement.
    hygiene = data["hygiene"]
    assert hygiene["verdict"] in ("quiet", "busy", "unusable") and hygiene["figures"]["samples"] >= 1
    assert os.getpid() in specmeter.load.run.local_server_pids([spec, base])
    # The concurrency actually held, beside the nominal one: JSON, console, HTML.
    held = [c["effective_concurrency"] for c in data["candidates"]]
    assert all(0.0 < h <= c["concurrency"] + 1e-9 for h, c in zip(held, data["candidates"], strict=True))
    assert "held" in result.output and f"{held[1]:.2f}" in result.output
    assert data["run"]["config"]["chunk_counts"] == "auto" and data["run"]["config"]["request_seeds"] is False
    html = render_report(data)
    assert "Load levels" in html and "held (in flight)" in html and f"{held[1]:.2f}" in html
    assert "c=2 baseline" in html


def test_rate_mode_quiet(urls: tuple[str, str], prompts: Path, tmp_path: Path) -> None:
    result = invoke(
        "--endpoint",
        urls[0],
        "--prompts",
        prompts,
        "--rate",
        "20",
        "--arrival",
        "constant",
        "--limit",
        "4",
        "--max-tokens",
        "4",
        "--warmup",
        "0",
        "-q",
        "--json",
        tmp_path / "r.json",
    )
    assert result.exit_code == 0, result.output
    level = json.loads((tmp_path / "r.json").read_text())["candidates"][0]
    assert level["rate"] == 20.0 and level["load"]["completed"] == 4
    assert result.stdout == ""


def test_option_mistakes(urls: tuple[str, str], prompts: Path, tmp_path: Path) -> None:
    spec = urls[0]
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--concurrency", "2", "--rate", "1"),
        "--concurrency",
        "--rate",
    )
    assert_usage_error(invoke("--endpoint", spec, "--prompts", prompts, "--rate", "fast"), "--rate")
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--warmup-per-level", "-1"), "--warmup-per-level"
    )
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--concurrency", "0"), "--concurrency"
    )
    assert_usage_error(invoke("--endpoint", "localhost:8000", "--prompts", prompts), "--endpoint")
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--extra-body", "{oops"), "--extra-body"
    )
    assert_usage_error(invoke("--endpoint", spec, "--prompts", prompts, "--server", "ollama"), "--server")
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--chunk-counts", "chunks"), "--chunk-counts"
    )
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--client-processes", "0"), "--client-processes"
    )
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--slo", "ttft_p99_ms=fast"), "--slo: ttft_p99_ms="
    )
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--slo", "ttft=5"), "--slo: unknown field"
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    assert_usage_error(invoke("--endpoint", spec, "--prompts", bad), "bad.jsonl:1")
    # Issue 29: an --extra-body nested beyond the parser's depth was a traceback; one no request can carry
    # (a lone surrogate, NaN) failed every request; each is one line now.
    extra = ["--endpoint", spec, "--prompts", prompts, "--extra-body"]
    assert_usage_error(invoke(*extra, "[" * 100_000), "--extra-body: not valid JSON (JSON nested too deeply")
    assert_usage_error(invoke(*extra, '{"a": "\\ud800"}'), "--extra-body: the request holds a lone surrogate")
    assert_usage_error(invoke(*extra, '{"a": NaN}'), "--extra-body: the request body is not JSON")
    # Issue 29: levels, rates, traces beyond what the machine holds (load.limits): one line naming the bound.
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--concurrency", "10000000"),
        "--concurrency",
        "open-file",
    )
    assert_usage_error(invoke("--endpoint", spec, "--prompts", prompts, "--rate", "1e-300"), "--rate")
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--trace", "/dev/zero"),
        "/dev/zero: not a regular file",
    )


def test_unreachable_endpoint(prompts: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert_usage_error(invoke("--endpoint", f"http://127.0.0.1:{port}", "--prompts", prompts), "cannot reach")


def test_ctrl_c_exits_130(urls: tuple[str, str], prompts: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(specmeter.load.run, "execute_load", interrupted)
    result = invoke("--endpoint", urls[0], "--prompts", prompts)
    assert result.exit_code == 130
    assert "nothing was measured" in result.stderr and "on disk" not in result.stderr


def test_ctrl_c_in_a_levels_warm_up_does_not_claim_that_level(
    urls: tuple[str, str], prompts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39: level 1 measured, Ctrl-C during level 2's warm-up (no request of it recorded yet)."""

    async def interrupted(cfg: Any, **kwargs: Any) -> Any:
        first, second = cfg.phases[0], cfg.phases[1]
        kwargs["on_phase"](first)
        kwargs["on_request"](first, "speculative", None)
        kwargs["on_phase"](second)
        raise KeyboardInterrupt

    monkeypatch.setattr(specmeter.load.run, "execute_load", interrupted)
    result = invoke("--endpoint", urls[0], "--prompts", prompts, "--concurrency", "1,2", "--quiet")
    assert result.exit_code == 130
    line = " ".join(result.stderr.split())
    assert "warm-up: nothing of that level was measured" in line, line
    assert "every request sent is on disk" not in line


def test_trace_replay_paired_with_breakdowns_by_length_and_temperature(
    urls: tuple[str, str], prompts: Path, tmp_path: Path
) -> None:
    spec, base = urls
    trace = tmp_path / "mooncake.jsonl"
    lines = [
        {"timestamp": 0, "input_length": 12, "output_length": 5, "hash_ids": [0]},
        {"timestamp": 100, "input_length": 3, "output_length": 3, "hash_ids": [1]},
        {"timestamp": 150, "input_length": 9, "output_length": 4, "hash_ids": [0, 2]},
        {"timestamp": 300, "input_length": 9, "output_length": 2, "hash_ids": [0, 3]},
    ]
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "r.json"
    result = invoke(
        "--endpoint", spec, "--baseline", base, "--prompts", prompts, "--trace", trace, "--trace-speed", "2",
        "--temperature", "0,0.7", "--warmup", "0", "--json", out, "--log", tmp_path / "r.jsonl",
    )  # fmt: skip
    assert result.exit_code in (0, 4), result.output
    (level,) = json.loads(out.read_text())["candidates"]
    assert level["trace"] is True and level["load"]["completed"] == 4
    assert level["baseline"]["load"]["completed"] == 4
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    # max_tokens from the trace's output lengths: no request generated more.
    by_run: dict[str, list[int]] = {}
    for row in rows:
        by_run.setdefault(row["run"], []).append(row["output_tokens"])
    assert all(n <= 5 for ns in by_run.values() for n in ns)
    assert set(level["by_temperature"]) == {"T=0", "T=0.7"}
    assert sum(g["requests"] for g in level["by_temperature"].values()) == 4
    assert level["by_input_length"] and all(k.startswith("≤") for k in level["by_input_length"])
    assert "by temperature" in result.stdout and "trace" in result.stdout


def test_gamma_arrivals_and_mode_mistakes(urls: tuple[str, str], prompts: Path, tmp_path: Path) -> None:
    spec = urls[0]
    result = invoke(
        "--endpoint", spec, "--prompts", prompts, "--rate", "50", "--arrival", "gamma",
        "--burstiness", "0.25",
        "--limit", "3", "--max-tokens", "3", "--warmup", "0", "-q", "--json", tmp_path / "g.json",
    )  # fmt: skip
    assert result.exit_code in (0, 4), result.output
    data = json.loads((tmp_path / "g.json").read_text())
    assert data["run"]["config"]["burstiness"] == 0.25 and data["candidates"][0]["load"]["completed"] == 3
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"t": 0}\n{"t": -2}\n', encoding="utf-8")
    base = ["--endpoint", spec, "--prompts", prompts]
    assert_usage_error(invoke(*base, "--trace", trace), f"{trace}:2: field 't'")
    assert_usage_error(invoke(*base, "--trace", trace, "--rate", "1"), "--trace")
    assert_usage_error(invoke(*base, "--burstiness", "2"), "--arrival gamma")
    assert_usage_error(
        invoke(*base, "--rate", "1", "--arrival", "gamma", "--burstiness", "0"), "--burstiness"
    )
    assert_usage_error(invoke(*base, "--temperature", "0,hot"), "--temperature")


def test_messages_api_end_to_end(urls: tuple[str, str], prompts: Path, tmp_path: Path) -> None:
    # Anthropic's Messages API against serve's /v1/messages: tokens from the final usage, acceptance from
    # the /metrics counters (the API has no per-request reports); the table says the gaps are approximate.
    spec = urls[0]
    out = tmp_path / "m.json"
    result = invoke(
        "--endpoint", spec, "--prompts", prompts, "--api", "messages", "--max-tokens", "8", "--warmup", "0",
        "--json", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    level = json.loads(out.read_text())["candidates"][0]
    assert level["load"]["completed"] == 3 and level["load"]["token_sources"] == {"usage_distributed": 3}
    assert level["server"]["used"] == "metrics"
    assert "per-token gaps approximate" in " ".join(result.stdout.split())
    assert_usage_error(
        invoke("--endpoint", spec, "--prompts", prompts, "--api", "messages", "--temperature", "1.5"),
        "--temperature",
    )
    assert_usage_error(invoke("--endpoint", spec, "--prompts", prompts, "--api", "anthropic"), "--api")
    # Nothing completed: exit 1 with the first failure's message (the server's own words), no traceback.
    wrong = invoke(
        "--endpoint", spec, "--prompts", prompts, "--api", "messages", "--model", "nope", "--warmup", "0"
    )
    assert wrong.exit_code == 1 and "Traceback" not in wrong.output
    assert f"to {spec} completed (first failure: HTTP 404: model: nope)" in " ".join(wrong.output.split())
    assert "e.g. HTTP 404: model: nope" in " ".join(wrong.output.split())  # the table's note says it too
