"""Shared by the real llama.cpp tests: where ``make llamacpp-env`` put llama-server and the GGUF models, and
a llama-server on a free loopback port, always shut down.

The launch line is the one to reuse elsewhere (``specmeter sweep --launch``: :func:`server_command`):

    llama-server -m target.gguf --spec-type draft-simple -md draft-legal.gguf --spec-draft-n-max K
                 --spec-draft-n-min 0 --spec-draft-p-min 0 --parallel N --metrics
                 --host 127.0.0.1 --port P -t 1 -tb 1 -td 1 -tbd 1 -c CTX

Omitting ``--spec-type``/``-md`` serves without speculation (``--spec-draft-n-max 0`` with the draft
loaded aborts this build once two requests decode together: docs/monitoring.md). ``--parallel N``
gives N slots (N requests decode together); ``-c`` is the context of all slots together, so each slot gets
CTX / N. ``--metrics`` turns /metrics on (off by default). p-min 0 and n-min 0 make llama.cpp draft as the
native engine does: always up to k tokens, never fewer than the tokens left allow (n-min 0 keeps short
drafts, p-min 0 never stops a draft for low draft confidence).
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine_helpers import free_port, server_process

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(
    os.environ.get(
        "LLAMACPP_SERVER", ROOT / ".llamacpp/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-server"
    )
)
MODELS = Path(os.environ.get("LLAMACPP_MODELS", ROOT / ".llamacpp/models"))
PIP_PIN = "llama-cpp-python 0.3.36"  # the sdist whose vendored llama.cpp make llamacpp-env builds

if not (SERVER.is_file() and (MODELS / "target.gguf").is_file()):
    if os.environ.get("SPECMETER_REQUIRE_REAL"):
        # make test-llamacpp sets SPECMETER_REQUIRE_REAL: there a missing build fails, never skips green.
        raise RuntimeError(f"{SERVER} or {MODELS / 'target.gguf'} is missing (make llamacpp-env)")
    pytest.skip("llama-server or the GGUF models are missing (make llamacpp-env)", allow_module_level=True)


def gguf(name: str) -> Path:
    return MODELS / f"{name}.gguf"


def server_version() -> str:
    """llama.cpp's own version line, e.g. ``0.5.0-dev (build 1, commit 0c1e570)``."""
    out = subprocess.run([str(SERVER), "--version"], capture_output=True, text=True, timeout=30)
    match = re.search(r"version: (.+)", out.stdout + out.stderr)
    return match.group(1).strip() if match else "unknown"


def version_tag() -> str:
    """A file-name-safe tag of the build: ``0c1e570`` (the commit), else the version line."""
    version = server_version()
    match = re.search(r"commit ([0-9a-f]+)", version)
    return match.group(1) if match else re.sub(r"[^A-Za-z0-9.]+", "-", version)


def server_command(
    port: int | str,
    *,
    draft: str | None = "draft-legal",
    k: int | str = 4,
    parallel: int = 2,
    ctx: int = 4096,
    host: str = "127.0.0.1",
) -> list[str]:
    """The launch line above as arguments; ``port``, ``k`` and ``host`` may be placeholders (``"{port}"``)."""
    cmd = [
        str(SERVER), "-m", str(gguf("target")), "--host", host, "--port", str(port),
        "--parallel", str(parallel), "-c", str(ctx), "--metrics", "--no-webui", "--alias", "bundled-target",
        "-t", "1", "-tb", "1",
    ]  # fmt: skip
    if draft is not None:
        cmd += [
            "--spec-type", "draft-simple", "-md", str(gguf(draft)), "--spec-draft-n-max", str(k),
            "--spec-draft-n-min", "0", "--spec-draft-p-min", "0", "-td", "1", "-tbd", "1",
        ]  # fmt: skip
    return cmd


@contextmanager
def llama_server(
    log: Path, *, draft: str | None = "draft-legal", k: int = 4, parallel: int = 2, ctx: int = 4096
) -> Iterator[str]:
    """llama-server with the bundled target (and a draft) on 127.0.0.1, one thread per role; its base URL."""
    port = free_port()
    cmd = server_command(port, draft=draft, k=k, parallel=parallel, ctx=ctx)
    url = f"http://127.0.0.1:{port}"
    with server_process(cmd, url, log, name="llama-server", startup_s=120):
        yield url
