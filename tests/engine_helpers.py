"""Shared by the real-engine tests (tests/real_vllm, tests/real_llamacpp): a server process on a free
loopback port that is always shut down (its whole process group), scrapes parsed by prometheus_client (an
independent reader, not specmeter's), the CLI run as a user runs it, and the bundled models and prompts.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from specmeter.workloads.bundled import bundled_prompts

LEGAL = bundled_prompts("legal")
GENERAL = bundled_prompts("general")
SPECMETER = Path(sys.executable).with_name("specmeter")
FIXTURES = Path(__file__).parent / "fixtures"


def run_cli(
    *args: str | Path | int, env: Mapping[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """Run the specmeter CLI in its own process; fail with its output when it does not exit 0."""
    proc = subprocess.run(
        [str(SPECMETER), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env
    )
    assert proc.returncode == 0, (
        f"specmeter {' '.join(map(str, args))}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc


def prompt_slice(source: Path, path: Path, n: int) -> Path:
    lines = source.read_text(encoding="utf-8").splitlines()[:n]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server_process(
    cmd: Sequence[str],
    url: str,
    log: Path,
    *,
    name: str,
    startup_s: float,
    env: Mapping[str, str] | None = None,
) -> Iterator[subprocess.Popen[Any]]:
    """Start ``cmd`` in its own process group, wait until ``url/health`` answers 200, always stop it."""
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"{name} exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} not healthy after {startup_s}s:\n{log.read_text()[-4000:]}")
            time.sleep(0.5)
        yield proc
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


def metrics_text(url: str) -> str:
    return httpx.get(f"{url}/metrics", timeout=10).text


def scrape(url: str, text: str | None = None) -> dict[str, float]:
    """Every sample of /metrics summed over label sets, by sample name; parsed by prometheus_client."""
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics_text(url) if text is None else text):
        for s in family.samples:
            totals[s.name] = totals.get(s.name, 0.0) + float(s.value)
    return totals


def by_label(url: str, name: str, label: str, text: str | None = None) -> dict[float, float]:
    """One sample name summed per value of one label (``position`` of a vector, ``le`` of a histogram)."""
    out: dict[float, float] = {}
    for family in text_string_to_metric_families(metrics_text(url) if text is None else text):
        for s in family.samples:
            if s.name == name:
                key = float(s.labels[label])
                out[key] = out.get(key, 0.0) + float(s.value)
    return out


def start_monitor(url: str, history: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """``specmeter monitor`` on ``url`` every second, windows into ``history``; stop it with SIGINT.

    SIGINT is reset to its default in the child: a test run started in the background of a
    non-interactive shell (``make … &``) inherits it ignored, and Python keeps an ignored SIGINT ignored,
    so the monitor would never see the Ctrl-C that ``stop`` sends.
    """
    return subprocess.Popen(
        [str(SPECMETER), "monitor", "--scrape", f"{url}/metrics", "--interval", "1s",
         "--history", str(history), "--no-alerts", "--quiet", "--duration", "10m"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True,
        preexec_fn=_default_sigint,
    )  # fmt: skip


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def monitor_windows(history: Path) -> list[dict[str, Any]]:
    """The monitor's stored windows without scrape errors, oldest first."""
    if not history.exists():
        return []
    with sqlite3.connect(history) as db:
        db.row_factory = sqlite3.Row
        try:
            rows = db.execute("SELECT * FROM windows WHERE error IS NULL ORDER BY t_end").fetchall()
        except sqlite3.OperationalError:  # the monitor has not created its tables yet
            return []
    return [dict(r) for r in rows]


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def last_stream_chunk(url: str, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The last data chunk of one streamed request (where per-request reports ride)."""
    last: dict[str, Any] = {}
    with httpx.stream("POST", f"{url}{path}", json={**body, "stream": True}, timeout=120) as response:
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                last = json.loads(line[len("data: ") :])
    return last


def write_fixture(out: Path, metrics: str, response: Mapping[str, Any], expected: Mapping[str, Any]) -> None:
    """One engine fixture folder as tests/monitoring/test_monitoring_fixtures.py reads it.

    Written when the engine version has none yet (a new version gets its own folder, to commit) or when
    SPECMETER_RECORD_FIXTURES=1; otherwise the committed one stays as it is, so a test run leaves the
    work tree clean.
    """
    if (out / "expected.json").exists() and os.environ.get("SPECMETER_RECORD_FIXTURES") != "1":
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.prom").write_text(metrics, encoding="utf-8")
    (out / "response.json").write_text(json.dumps(response, indent=1) + "\n", encoding="utf-8")
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n", encoding="utf-8")
