"""Shared by the real-vLLM tests: the CLI as a user runs it, the bundled models, a vLLM server, scrapes.

Every command runs in its own process, as a user would run it: vLLM's engine starts worker processes and
keeps process-wide state (its Prometheus registry), which must not leak between tests. The generic parts
(server processes, scrapes) are shared with the llama.cpp tests in tests/engine_helpers.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine_helpers import (
    LEGAL,
    SPECMETER,
    by_label,
    free_port,
    prompt_slice,
    read_json,
    run_cli,
    scrape,
    server_process,
    stop,
)
from specmeter.bundled.models import bundled_model

__all__ = [
    "DRAFT",
    "ENGINE",
    "LEGAL",
    "SPECMETER",
    "TARGET",
    "by_label",
    "env",
    "legal_slice",
    "read_json",
    "scrape",
    "specmeter",
    "stop",
    "vllm_server",
]

TARGET = bundled_model("target")
DRAFT = bundled_model("draft-legal")
# float32 matches the native engine's CPU default, so greedy outputs can be compared token for token;
# eager mode skips torch.compile, which costs minutes per engine on a CPU and changes nothing measured here.
ENGINE = ["--dtype", "float32", "--enforce-eager", "--gpu-memory-utilization", "0.3"]


def env() -> dict[str, str]:
    return {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1"}


def specmeter(*args: str | Path | int, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run the CLI; fail with its output when it does not exit 0."""
    return run_cli(*args, env=env(), timeout=timeout)


def legal_slice(path: Path, n: int) -> Path:
    return prompt_slice(LEGAL, path, n)


@contextmanager
def vllm_server(
    log: Path,
    k: int = 3,
    startup_s: float = 420,
    extra: tuple[str, ...] = (),
    speculative: dict[str, object] | None = None,
    environ: dict[str, str] | None = None,
) -> Iterator[str]:
    """A real vLLM OpenAI server on 127.0.0.1 with the bundled target and legal draft; always shut down.

    Per-request speculative metrics are on at their ``detailed`` level (vLLM 0.32), so every response
    carries its own steps (``metrics.speculative_decoding``). ``extra`` adds server arguments (e.g.
    ``--chat-template FILE``); ``speculative`` replaces the speculative config (another method), ``environ``
    adds environment variables (``VLLM_LOGGING_LEVEL``).
    """
    port = free_port()
    default = {"method": "draft_model", "model": str(DRAFT), "num_speculative_tokens": k}
    spec = json.dumps(speculative or default)
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(TARGET),
        "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512", "--speculative-config", spec,
        "--per-request-spec-decode-metrics", "detailed", *ENGINE, *extra,
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    environment = {**env(), **(environ or {})}
    with server_process(cmd, url, log, name="vLLM server", startup_s=startup_s, env=environment):
        yield url
