"""``specmeter serve`` through the CLI: option mistakes are one-line errors; a good start serves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner, Result

import specmeter.server.hosting
from specmeter.cli.app import app
from specmeter.server.hosting import ServerThread

runner = CliRunner()


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, ["serve", *[str(a) for a in args]])


def test_option_mistakes(tiny: Any, tmp_path: Path) -> None:
    assert_usage_error(invoke("--target", tiny.target, "--draft", tiny.draft, "--k", "-1"), "--k")
    assert_usage_error(invoke("--target", tiny.target, "--max-batch", "0"), "--max-batch")
    assert_usage_error(invoke("--target", tiny.target, "--k-schedule", "[[1,4,2]]"), "needs --draft")
    draft = ("--target", tiny.target, "--draft", tiny.draft)
    assert_usage_error(invoke(*draft, "--k-schedule", "[[2,4,2]]"), "--k-schedule: the first range")
    assert_usage_error(invoke(*draft, "--k-schedule", "[[1,4,2]"), "--k-schedule: not JSON")
    assert_usage_error(invoke(*draft, "--k-schedule", str(tmp_path / "none.json")), "neither a JSON list")
    assert_usage_error(invoke("--target", tiny.target, "--port", "70000"), "--port")
    assert_usage_error(invoke("--target", tiny.target, "--max-body-bytes", "100"), "--max-body-bytes")
    assert_usage_error(invoke("--target", tiny.target, "--implementation", "magic"), "--implementation")
    assert_usage_error(invoke("--target", tmp_path / "nowhere"), "nowhere")
    assert_usage_error(
        invoke("--target", tiny.target, "--draft", tiny.other_tokenizer_draft), "tokenizer differs"
    )


def test_serve_starts_the_engine_behind_the_api(
    tiny: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def fake_foreground(app_: Any, host: str, port: int, *, log_level: str = "info") -> None:
        # Instead of blocking until Ctrl-C: serve in a thread, make one request, stop.
        with ServerThread(app_, host, 0) as server:
            headers = {"Authorization": "Bearer k3y"}
            seen["models"] = httpx.get(server.url + "/v1/models", headers=headers).json()
            seen["completion"] = httpx.post(
                server.url + "/v1/completions",
                headers=headers,
                timeout=30,
                json={"prompt": "Hello", "max_tokens": 5, "temperature": 0},
            ).json()
        seen["host"] = host

    monkeypatch.setattr(specmeter.server.hosting, "run_foreground", fake_foreground)
    log = tmp_path / "serve.jsonl"
    result = invoke(
        "--target",
        tiny.target,
        "--draft",
        tiny.draft,
        "--k",
        "3",
        "--api-key",
        "k3y",
        "--served-model-name",
        "legal-70b",
        "--log",
        log,
        "--device",
        "cpu",
    )
    assert result.exit_code == 0, result.output
    assert seen["host"] == "127.0.0.1"  # loopback unless told otherwise
    assert seen["models"]["data"][0]["id"] == "legal-70b"
    assert seen["completion"]["metrics"]["speculative_decoding"]["num_spec_tokens"] == 3
    assert log.read_text().count("\n") == 1
    assert "legal-70b" in result.stderr and "k=3" in result.stderr


def test_public_bind_without_key_warns(tiny: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(specmeter.server.hosting, "run_foreground", lambda *a, **k: None)
    result = invoke("--target", tiny.target, "--host", "0.0.0.0", "--device", "cpu")
    assert result.exit_code == 0
    assert "exposes the server" in result.stderr


def _serve_and_ask(monkeypatch: pytest.MonkeyPatch, *args: str | Path) -> tuple[Result, dict[str, Any]]:
    seen: dict[str, Any] = {}

    def fake_foreground(app_: Any, host: str, port: int, *, log_level: str = "info") -> None:
        with ServerThread(app_, host, 0) as server:
            body = {"prompt": "Hello", "max_tokens": 6, "temperature": 0}
            seen["completion"] = httpx.post(server.url + "/v1/completions", json=body, timeout=30).json()
            seen["metrics"] = httpx.get(server.url + "/metrics").text
        seen["worker"] = app_.state.server.worker

    monkeypatch.setattr(specmeter.server.hosting, "run_foreground", fake_foreground)
    return invoke(*args, "--device", "cpu"), seen


def test_k0_with_a_draft_is_a_baseline_server(tiny: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    result, seen = _serve_and_ask(monkeypatch, "--target", tiny.target, "--draft", tiny.draft, "--k", "0")
    assert result.exit_code == 0, result.output
    assert "no speculation" in result.stderr
    assert "metrics" not in seen["completion"] and "spec_decode" not in seen["metrics"]
    assert seen["worker"].max_batch == 16  # the CPU default


def test_schedule_and_max_batch(tiny: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schedule = tmp_path / "schedule.json"
    schedule.write_text('{"num_speculative_tokens_per_batch_size": [[1, 2, 5], [3, 8, 0]]}')
    args = ("--target", tiny.target, "--draft", tiny.draft, "--k-schedule", schedule, "--max-batch", "8")
    result, seen = _serve_and_ask(monkeypatch, *args)
    assert result.exit_code == 0, result.output
    assert "B=1–2: k=5" in result.stderr and "batches of up to 8" in result.stderr
    spec = seen["completion"]["metrics"]["speculative_decoding"]
    assert spec["num_spec_tokens"] == 5 and spec["num_draft_tokens"] >= 1  # alone: B = 1, k = 5
    assert 'position="4"' in seen["metrics"] and seen["worker"].max_batch == 8
    # --k caps the schedule, as vLLM's num_speculative_tokens does.
    result, seen = _serve_and_ask(monkeypatch, *args, "--k", "2")
    assert seen["completion"]["metrics"]["speculative_decoding"]["num_spec_tokens"] == 2
