"""``load`` exit codes CI can trust, the 401 hint, and Ctrl-C with requests in flight (issue 12).

Against the fake OpenAI server of serving_fakes (one failure mode at a time) and, for the key lookup,
``serve`` itself with ``--api-key``.
"""

from __future__ import annotations

import asyncio
import csv
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from serving_fakes import Behaviour, fake_openai
from specmeter.cli.app import app
from specmeter.load.client import AUTH_HINT
from specmeter.load.config import LoadConfig, Phase
from specmeter.load.run import execute_load
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine
from specmeter.workloads.loader import Prompt

runner = CliRunner()
PROMPTS = tuple(Prompt(f"p{i}", "general", f"prompt number {i}", None, None, i + 1) for i in range(8))


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps({"id": p.id, "prompt": p.text}) + "\n" for p in PROMPTS))
    return path


@pytest.fixture
def fakes() -> Iterator[tuple[Behaviour, str, Behaviour, str]]:
    good, bad = Behaviour(), Behaviour(mode="status", status=500)
    with ServerThread(fake_openai(good)) as g, ServerThread(fake_openai(bad)) as b:
        yield good, g.url, bad, b.url


def _load(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, ["load", "--warmup", "0", "--no-metrics", "-q", *map(str, args)], env=env)


def _errors(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def test_nothing_measured_exits_1(fakes: tuple[Behaviour, str, Behaviour, str], prompts: Path) -> None:
    url = fakes[3]
    result = _load(
        "--endpoint", url, "--prompts", prompts, "--limit", "3", "--json", prompts.with_name("r.json")
    )
    assert result.exit_code == 1, result.output
    assert _errors(result) == [
        f"error: nothing measured: none of the 3 request(s) to {url} completed (first failure: HTTP 500: "
        "engine exploded)"
    ]
    assert json.loads(prompts.with_name("r.json").read_text())["candidates"][0]["load"]["failed"] == 3


# Every request fails some other way than an HTTP status (issue 12 listed each): still nothing measured.
STREAM_FAILURES = [
    ("close_midway", "closed"),  # the server drops the stream midway
    ("stall", "stalled: no data for 0.3s"),  # the stream goes silent (--stall-timeout)
    ("cut", "without finish_reason or [DONE]"),  # the body ends cleanly, with neither
    ("error_event", "error event in stream: out of memory"),  # an error event inside the stream
]


@pytest.mark.parametrize(("mode", "needle"), STREAM_FAILURES, ids=[m for m, _ in STREAM_FAILURES])
def test_every_stream_failing_exits_1(prompts: Path, mode: str, needle: str) -> None:
    out = prompts.with_name("r.json")
    with ServerThread(fake_openai(Behaviour(mode=mode)), graceful_timeout=2) as server:
        args = ["--endpoint", server.url, "--prompts", prompts, "--limit", "2", "--stall-timeout", "0.3"]
        result = _load(*args, "--json", out)
    assert result.exit_code == 1, result.output
    errors = _errors(result)
    assert len(errors) == 1, result.output
    assert errors[0].startswith(
        f"error: nothing measured: none of the 2 request(s) to {server.url} completed"
    )
    assert needle in errors[0], errors[0]
    level = json.loads(out.read_text())["candidates"][0]["load"]
    assert level["requests_sent"] == 2 and level["completed"] == 0 and level["failed"] == 2


def test_connection_refused_exits_1(prompts: Path) -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    # --model skips the /v1/models lookup (which would end the run with exit 2): every request is refused.
    result = _load("--endpoint", url, "--model", "m", "--prompts", prompts, "--limit", "2")
    assert result.exit_code == 1, result.output
    errors = _errors(result)
    assert len(errors) == 1 and errors[0].startswith(
        f"error: nothing measured: none of the 2 request(s) to {url}"
    )
    assert "connection failed" in errors[0], errors[0]


def test_either_endpoint_measuring_nothing_exits_1(
    fakes: tuple[Behaviour, str, Behaviour, str], prompts: Path
) -> None:
    # Issue 29: a baseline none of whose requests completed (beside a working endpoint) exited 0; so did a
    # speculative endpoint that answered nothing beside a working baseline. No E_meas either way: exit 1.
    _, good, _, bad = fakes
    for spec, base, where in ((good, bad, " at the baseline"), (bad, good, "")):
        result = _load("--endpoint", spec, "--baseline", base, "--prompts", prompts, "--limit", "4")
        assert result.exit_code == 1, result.output
        assert _errors(result) == [
            f"error: nothing measured{where}: none of the 4 request(s) to {bad} completed (first failure: "
            "HTTP 500: engine exploded)"
        ]


def test_max_error_rate(fakes: tuple[Behaviour, str, Behaviour, str], prompts: Path) -> None:
    good = fakes[1]
    flaky = Behaviour(fail_every=2)  # the baseline answers HTTP 500 to every second request: 2 of 8 fail
    with ServerThread(fake_openai(flaky)) as server:
        args = ["--endpoint", good, "--baseline", server.url, "--prompts", prompts, "--limit", "4"]
        assert _load(*args).exit_code == 0  # some requests completed and no threshold was set
        assert _load(*args, "--max-error-rate", "0.3").exit_code == 0
        result = _load(*args, "--max-error-rate", "0.1")
    assert result.exit_code == 1, result.output
    assert _errors(result) == ["error: --max-error-rate 0.1: 2 of 8 requests failed (25.0%: HTTP 500 ×2)"]
    for value in ("1.5", "-0.1", "nan"):
        bad_option = _load(*args, "--max-error-rate", value)
        assert bad_option.exit_code == 2 and "--max-error-rate" in _errors(bad_option)[0]


def test_401_names_the_key_options(tiny: Any, prompts: Path) -> None:
    engine = LocalEngine.load(tiny.target, None, 0, device="cpu")
    with ServerThread(create_app(engine, ServeConfig(api_key="sesame"))) as server:
        lookup = _load("--endpoint", server.url, "--prompts", prompts, "--limit", "2")
        assert lookup.exit_code == 2
        assert _errors(lookup) == [f"error: {server.url}/v1/models answered HTTP 401: {AUTH_HINT}"]
        wrong = _load("--endpoint", server.url, "--prompts", prompts, "--limit", "2", "--api-key", "nope")
        assert "(the key given was refused)" in _errors(wrong)[0]
        each = _load("--endpoint", server.url, "--prompts", prompts, "--limit", "2", "--model", "target")
        assert each.exit_code == 1  # the lookup skipped, every request refused: nothing measured
        assert "HTTP 401: Incorrect API key provided." in _errors(each)[0] and AUTH_HINT in _errors(each)[0]
        fine = _load("--endpoint", server.url, "--prompts", prompts, "--limit", "2", "--max-tokens", "2",
                     env={"SPECMETER_API_KEY": "sesame"})  # fmt: skip
        assert fine.exit_code in (0, 4), fine.output


@pytest.mark.parametrize(("mode", "processes"), [("concurrency", 1), ("rate", 1), ("concurrency", 2)])
def test_ctrl_c_records_requests_in_flight(tmp_path: Path, mode: str, processes: int) -> None:
    # Issue 12: after Ctrl-C the requests in flight vanished, so requests_sent was less than what the server
    # had received. They are recorded as interrupted now, in the JSON, the CSV and the log. Issue 29: with
    # --client-processes 2 the loop's second cancel cut the wait for the workers' interrupted outcomes.
    behaviour = Behaviour(delay=0.05)  # ~0.25 s per request
    phase = Phase(concurrency=4) if mode == "concurrency" else Phase(rate=40.0)
    cfg = LoadConfig(endpoint="", prompts=PROMPTS, phases=[phase], limit=40, warmup=0, warmup_per_level=0,
                     scrape_metrics=False, client_processes=processes)  # fmt: skip
    finished: list[str] = []
    paths = {"json": tmp_path / "r.json", "csv": tmp_path / "r.csv", "log": tmp_path / "r.jsonl"}

    async def go(url: str) -> None:
        task = asyncio.create_task(
            execute_load(
                replace(cfg, endpoint=url), config={}, json_out=paths["json"],
                csv_out=paths["csv"], log_out=paths["log"],
                on_request=lambda p, role, outcome: finished.append(outcome.record.finish_reason),
            )
        )  # fmt: skip
        while finished.count("length") < 3:
            await asyncio.sleep(0.01)
        task.cancel()  # what Ctrl-C does to asyncio.run's main task
        with pytest.raises(asyncio.CancelledError):
            await task

    with ServerThread(fake_openai(behaviour), graceful_timeout=2) as server:
        asyncio.run(go(server.url))
        received = behaviour.requests
    level = json.loads(paths["json"].read_text())["candidates"][0]["load"]
    assert level["requests_sent"] == received == len(finished)
    assert level["errors"].get("interrupted", 0) >= 1 and level["completed"] == finished.count("length")
    with open(paths["csv"], newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == received
    interrupted = [r for r in rows if r["error"].startswith("interrupted: Ctrl-C")]
    assert len(interrupted) == received - level["completed"]
    log = [json.loads(line) for line in paths["log"].read_text().splitlines()]
    assert len(log) == received


SPECMETER = Path(sys.executable).with_name("specmeter")


def test_sigterm_ends_like_ctrl_c(tmp_path: Path, prompts: Path) -> None:
    # Issue 29: SIGTERM killed load (exit 143, no message) and the JSON lacked the level in progress.
    behaviour = Behaviour(delay=0.05)
    out, rows = tmp_path / "r.json", tmp_path / "r.csv"
    with ServerThread(fake_openai(behaviour), graceful_timeout=2) as server:
        cmd = [
            str(SPECMETER), "load", "--endpoint", server.url, "--prompts", str(prompts), "--concurrency", "2",
            "--limit", "200", "--warmup", "0", "--warmup-per-level", "0", "--no-metrics", "-q",
            "--json", str(out), "--csv", str(rows),
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
                if rows.exists() and len(rows.read_text().splitlines()) > 3:
                    break
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        received = behaviour.requests
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("Interrupted"), line
    data = json.loads(out.read_text())
    assert data["complete"] is False
    level = data["candidates"][0]
    assert level["complete"] is False and level["load"]["requests_sent"] == received
    with open(rows, newline="", encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == received
