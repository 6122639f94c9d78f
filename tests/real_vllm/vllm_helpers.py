"""Shared by the real-vLLM tests: the CLI as a user runs it, the bundled models, a vLLM server, scrapes.

Every command runs in its own process, as a user would run it: vLLM's engine starts worker processes and
keeps process-wide state (its Prometheus registry), which must not leak between tests.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from specmeter.engine.bundled import bundled_model
from specmeter.workloads.bundled import bundled_prompts

TARGET = bundled_model("target")
DRAFT = bundled_model("draft-legal")
LEGAL = bundled_prompts("legal")
SPECMETER = Path(sys.executable).with_name("specmeter")
# float32 matches the native engine's CPU default, so greedy outputs can be compared token for token;
# eager mode skips torch.compile, which costs minutes per engine on a CPU and changes nothing measured here.
ENGINE = ["--dtype", "float32", "--enforce-eager", "--gpu-memory-utilization", "0.3"]


def env() -> dict[str, str]:
    return {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1"}


def specmeter(*args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the CLI; fail with its output when it does not exit 0."""
    proc = subprocess.run(
        [str(SPECMETER), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env()
    )
    assert proc.returncode == 0, (
        f"specmeter {' '.join(map(str, args))}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc


def legal_slice(path: Path, n: int) -> Path:
    lines = LEGAL.read_text(encoding="utf-8").splitlines()[:n]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def vllm_server(log: Path, k: int = 3, startup_s: float = 420) -> Iterator[str]:
    """A real vLLM OpenAI server on 127.0.0.1 with the bundled target and legal draft; always shut down."""
    port = free_port()
    spec = json.dumps({"method": "draft_model", "model": str(DRAFT), "num_speculative_tokens": k})
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(TARGET),
        "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512", "--speculative-config", spec,
        *ENGINE,
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env(), start_new_session=True)
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"vLLM server exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"vLLM server not healthy after {startup_s}s:\n{log.read_text()[-4000:]}"
                )
            time.sleep(1)
        yield url
    finally:
        stop(proc, signal.SIGTERM)


def stop(proc: subprocess.Popen[Any], sig: int) -> int:
    """Signal a process group, wait for it, kill it if it lingers; returns the exit code."""
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    return int(proc.returncode)


def scrape(url: str) -> dict[str, float]:
    """Every sample of /metrics summed over label sets, by sample name; parsed by prometheus_client."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            totals[s.name] = totals.get(s.name, 0.0) + float(s.value)
    return totals


def by_label(url: str, name: str, label: str) -> dict[float, float]:
    """One sample name summed per value of one label (``position`` of a vector, ``le`` of a histogram)."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    out: dict[float, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                key = float(s.labels[label])
                out[key] = out.get(key, 0.0) + float(s.value)
    return out
