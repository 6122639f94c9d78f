"""Shared by the real Ray tests: a Ray head on loopback (``ray start --head --block`` in a session of its
own), always stopped: every process of it, found by the temp dir only it uses (never ``ray stop``, which
stops every Ray of the user); and ``specmeter`` run as a separate driver process.

Sizes fit a 2-core machine: 2 CPUs, a 200 MB object store, no dashboard, usage stats off.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from engine_helpers import free_port

ROOT = Path(__file__).resolve().parents[2]

try:
    import ray  # noqa: F401
except ImportError:
    if os.environ.get("SPECMETER_REQUIRE_REAL"):
        # make test-ray sets SPECMETER_REQUIRE_REAL: there a missing Ray fails, never skips green.
        raise RuntimeError("Ray is not installed (make ray-env: pip install -e '.[ray]')") from None
    pytest.skip("Ray is not installed (make ray-env)", allow_module_level=True)

OBJECT_STORE_BYTES = 200 * 1024 * 1024
STARTUP_S = 120.0


def env() -> dict[str, str]:
    """The environment of the head (its workers inherit it) and of the driver: this checkout's specmeter
    first on the path, so a worker runs the code under test; no usage stats, no token authentication."""
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), out.get("PYTHONPATH", "")) if p)
    out["RAY_USAGE_STATS_ENABLED"] = "0"
    # Without it Ray 2.60 turns token authentication on for a `ray.init(address="local")` cluster and writes
    # ~/.ray/auth_token, after which every `ray start` head wants the token, which a driver given an explicit
    # address does not send: a test cluster on loopback runs without, and nothing is written under ~.
    out["RAY_AUTH_MODE"] = "disabled"
    out.pop("RAY_ADDRESS", None)
    return out


def ray_cli(*args: str) -> list[str]:
    """The ``ray`` command of this interpreter's Ray (its console script may not be on PATH)."""
    return [sys.executable, "-c", "from ray.scripts.scripts import main; main()", *args]


def specmeter(*args: str) -> list[str]:
    return [sys.executable, "-c", "from specmeter.cli.app import main; main()", *args]


@dataclass(frozen=True)
class Head:
    address: str  # 127.0.0.1:PORT, what --ray takes
    temp: Path  # Ray's temp dir for this head alone


def ray_processes(temp: Path) -> list[psutil.Process]:
    """Every live process whose command line names this Ray's temp dir (Ray passes it to each one)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(temp) in part for part in p.info["cmdline"] or ()):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def outlived(temp: Path, wait_s: float = 15.0) -> list[str]:
    """The processes of the Ray in ``temp`` still running ``wait_s`` after its driver ended, killed (a
    ``local`` Ray is its driver's to stop: there should be none)."""
    _, alive = psutil.wait_procs(ray_processes(temp), timeout=wait_s)
    names = []
    for p in alive:
        with suppress(psutil.NoSuchProcess):
            names.append(" ".join(p.cmdline()[:2]))
            p.kill()
    return names


def _stop(proc: subprocess.Popen[bytes], temp: Path) -> list[str]:
    """Stop the head and everything it started; what was still alive after (should be nothing).

    SIGTERM to ``ray start --block`` alone makes it stop its processes (2 s here); whatever of the family
    (its descendants, workers included, taken before, and every process naming the temp dir) outlives
    that is killed."""
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    family += [p for p in ray_processes(temp) if p not in family]
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
    _, alive = psutil.wait_procs(family, timeout=5)
    alive += [p for p in ray_processes(temp) if p not in alive]
    for p in alive:
        with suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(alive, timeout=10)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    left = [
        p for p in [*family, *ray_processes(temp)] if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    ]
    return [" ".join(p.cmdline()[:2]) for p in left]


@contextmanager
def short_temp_dir() -> Iterator[Path]:
    """A temp dir for Ray under /tmp, removed after: short, as Ray's socket paths under it must fit 107
    bytes (pytest's tmp_path is too long)."""
    temp = Path(tempfile.mkdtemp(prefix="rayt", dir="/tmp"))
    try:
        yield temp
    finally:
        shutil.rmtree(temp, ignore_errors=True)


@contextmanager
def ray_head() -> Iterator[Head]:
    """A Ray head on 127.0.0.1 (free ports), 2 CPUs; yields once it runs, always stopped."""
    with short_temp_dir() as temp, _head(temp) as head:
        yield head


@contextmanager
def _head(temp: Path) -> Iterator[Head]:
    port = free_port()
    log = temp / "head.log"
    cmd = ray_cli(
        "start", "--head", "--block", "--port", str(port), "--node-ip-address", "127.0.0.1",
        "--num-cpus", "2", "--num-gpus", "0", "--object-store-memory", str(OBJECT_STORE_BYTES),
        "--include-dashboard=false", "--disable-usage-stats", "--temp-dir", str(temp),
        "--dashboard-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port()),
    )  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env(), start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP_S
        while "Ray runtime started" not in log.read_text(errors="replace"):
            if proc.poll() is not None:
                raise AssertionError(f"ray start exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"ray start not up after {STARTUP_S} s:\n{log.read_text()[-4000:]}")
            time.sleep(0.5)
        yield Head(f"127.0.0.1:{port}", temp)
    finally:
        left = _stop(proc, temp)
        assert not left, f"Ray processes left running: {left}"


def run_specmeter(
    *args: str, timeout: float = 300, extra_env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``specmeter ARGS`` as its own process (the Ray driver), this checkout's code."""
    return subprocess.run(
        specmeter(*args), env={**env(), **(extra_env or {})}, capture_output=True, text=True, timeout=timeout,
        cwd=cwd,
    )  # fmt: skip
