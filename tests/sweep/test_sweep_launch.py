"""sweep.launch: templates filled per argument, servers in their own process group, health waits that end,
and stops that leave nothing running (children included)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from specmeter.engine.schedule import KSchedule
from specmeter.sweep.launch import (
    LaunchError,
    LaunchValues,
    ServerProcess,
    check_template,
    free_port,
    render_template,
)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_placeholders_fill_each_argument_and_json_stays_one_argument() -> None:
    template = "vllm serve m --port {port} --speculative-config '{spec}' --x k{k}-{draft}"
    argv = render_template(template, LaunchValues(8123, 3, "/d r/aft"))
    assert argv[:4] == ["vllm", "serve", "m", "--port"]
    assert argv[4] == "8123"
    spec = json.loads(argv[6])
    assert spec == {"method": "draft_model", "model": "/d r/aft", "num_speculative_tokens": 3}
    assert argv[8] == "k3-/d r/aft"
    schedule = KSchedule.parse([[1, 4, 4], [5, 64, 0]])
    argv = render_template(
        "s --port {port} --k {k} --k-schedule {schedule} --c {spec}", LaunchValues(1, 0, None, schedule)
    )
    assert argv[4] == "4"  # a schedule's k is its largest
    assert json.loads(argv[6]) == [[1, 4, 4], [5, 64, 0]]
    assert json.loads(argv[8])["num_speculative_tokens_per_batch_size"] == [[1, 4, 4], [5, 64, 0]]


def test_spec_carries_a_method_spec_as_vllms_config_for_that_method() -> None:
    template = "vllm serve m --port {port} --speculative-config {spec}"
    argv = render_template(template, LaunchValues(1, 3, "ngram:min=2,max=4"))
    assert json.loads(argv[-1]) == {
        "method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "prompt_lookup_max": 4,
    }  # fmt: skip
    suffix = json.loads(render_template(template, LaunchValues(1, 8, "suffix:depth=32"))[-1])
    assert suffix["method"] == "suffix" and suffix["suffix_decoding_max_tree_depth"] == 32
    assert suffix["num_speculative_tokens"] == 8 and "model" not in suffix
    schedule = KSchedule.parse([[1, 4, 5], [5, 64, 2]])
    scheduled = json.loads(render_template(template, LaunchValues(1, 0, "ngram", schedule))[-1])
    assert scheduled["num_speculative_tokens"] == 5 and scheduled["prompt_lookup_min"] == 5
    assert scheduled["num_speculative_tokens_per_batch_size"] == [[1, 4, 5], [5, 64, 2]]
    # A method vLLM has no config for is one line naming it.
    with pytest.raises(LaunchError, match=r"^\{spec\}: ngram-simple: no vLLM speculative_config"):
        render_template(template, LaunchValues(1, 3, "ngram-simple"))
    # A model directory is a draft model, as before.
    assert json.loads(render_template(template, LaunchValues(1, 3, "/models/ngram"))[-1])["model"] == (
        "/models/ngram"
    )


def test_template_mistakes_are_one_line() -> None:
    with pytest.raises(LaunchError, match=r"unknown placeholder \{kk\}"):
        check_template("serve --port {port} --k {kk}", "--launch")
    with pytest.raises(LaunchError, match=r"needs \{port\}"):
        check_template("serve --k {k}", "--launch")
    with pytest.raises(LaunchError, match="cannot split"):
        render_template("serve 'unclosed {port}", LaunchValues(1, 0))


def _server(tmp_path: Path, code: str, name: str = "k=2") -> ServerProcess:
    port = free_port()
    return ServerProcess(
        name, [sys.executable, "-c", code, str(port)], f"http://127.0.0.1:{port}", tmp_path / "s.log"
    )


def test_a_server_that_exits_before_health_names_its_last_line(tmp_path: Path) -> None:
    server = _server(tmp_path, "import sys; print('boot'); print('CUDA out of memory'); sys.exit(7)")
    server.start()
    with pytest.raises(LaunchError) as info:
        asyncio.run(server.wait_healthy(30))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("k=2: the server exited with code 7 before it was healthy")
    assert "CUDA out of memory" in message and str(server.log) in message
    server.stop()
    assert gone(server.pid or 0)


def test_the_reason_is_named_not_the_footer_after_it(tmp_path: Path) -> None:
    # vLLM 0.32 refusing a configuration: pydantic prints the reason, then a footer line after it.
    code = (
        "import sys\n"
        "print('Traceback (most recent call last):')\n"
        "print('  File \"/x/vllm/config/vllm.py\", line 1660, in __post_init__')\n"
        "print('pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig')\n"
        "print('  Value error, --per-request-spec-decode-metrics requires speculative decoding')\n"
        "print('    For further information visit https://errors.pydantic.dev/2.14/v/value_error')\n"
        "sys.exit(1)\n"
    )
    server = _server(tmp_path, code, name="k=0")
    server.start()
    with pytest.raises(LaunchError) as info:
        asyncio.run(server.wait_healthy(30))
    message = str(info.value)
    assert "requires speculative decoding" in message, message
    assert "errors.pydantic.dev" not in message
    server.stop()


def test_a_command_that_does_not_exist(tmp_path: Path) -> None:
    server = ServerProcess("k=4", ["/nonexistent/vllm", "serve"], "http://127.0.0.1:9", tmp_path / "x.log")
    with pytest.raises(LaunchError, match="k=4: cannot start '/nonexistent/vllm'"):
        server.start()
    assert server.stop() is None


@pytest.mark.slow  # over 3 s: make test-slow (the default suite stays under 3 minutes)
def test_health_that_never_passes_times_out_and_stop_kills_the_group(tmp_path: Path) -> None:
    # Listens, answers 503; has a child that ignores SIGTERM: the stop must reach it too (SIGKILL).
    code = (
        "import http.server, subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import os, signal, sys, time; "
        "signal.signal(signal.SIGTERM, "
        'signal.SIG_IGN); open(sys.argv[1], "w").write(str(os.getpid())); time.sleep(300)\', '
        f"{str(tmp_path / 'child.pid')!r}])\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(503); self.end_headers()\n"
        "    def log_message(self, *a): pass\n"
        "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n"
    )
    server = _server(tmp_path, code)
    server.start()
    t0 = time.monotonic()
    with pytest.raises(LaunchError) as info:
        asyncio.run(server.wait_healthy(2.0))
    assert time.monotonic() - t0 < 30
    assert "k=2: not healthy after 2s" in str(info.value) and "HTTP 503" in str(info.value)
    deadline = time.monotonic() + 20
    while not (tmp_path / "child.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int((tmp_path / "child.pid").read_text())
    server.stop(grace_s=1.0)
    assert gone(server.pid or 0)
    deadline = time.monotonic() + 10
    while not gone(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gone(child), "the server's child outlived the stop"


def test_a_server_stops_when_specmeter_is_killed(tmp_path: Path) -> None:
    # Issue 29: after SIGKILL to sweep (no atexit, no finally) the server it launched stayed up, in its own
    # session where no terminal signal reaches it. The guard process (sweep.launch) stops it now.
    launcher = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from specmeter.sweep.launch import ServerProcess\n"
        "code = 'import time; time.sleep(300)'\n"
        f"log = Path({str(tmp_path / 's.log')!r})\n"
        "server = ServerProcess('k=2', [sys.executable, '-c', code], 'http://127.0.0.1:9', log)\n"
        "server.start()\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(300)\n"
    )  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", launcher], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pid = int(proc.stdout.readline())
        assert not gone(pid)
        proc.kill()  # SIGKILL: nothing of specmeter runs after it
        proc.wait()
        deadline = time.monotonic() + 20
        while not gone(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert gone(pid), "the server outlived the specmeter that launched it"
    finally:
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(psutil.NoSuchProcess, NameError):
            psutil.Process(pid).kill()


STUB = Path(__file__).parent / "sweep_stub.py"


def _stub(tmp_path: Path, *extra: str, k: int = 4) -> ServerProcess:
    port = free_port()
    argv = [sys.executable, str(STUB), "--port", str(port), "--k", str(k), "--pids", str(tmp_path), *extra]
    return ServerProcess(f"k={k}", argv, f"http://127.0.0.1:{port}", tmp_path / f"{port}.log")


def _wait_gone(pids: list[int], seconds: float = 15.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while any(not gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [p for p in pids if not gone(p)]


def test_a_launch_that_daemonizes_is_adopted_and_stopped(tmp_path: Path) -> None:
    # Issue 29.5: the command double-forks and exits 0 at once; its server, in a session of its own, used to
    # be "a server that exited before it was healthy" and was left running.
    server = _stub(tmp_path, "--daemonize")
    server.start()
    try:
        asyncio.run(server.wait_healthy(60))
        daemon = int(next(tmp_path.glob("daemon-*")).read_text())
        assert daemon in server.detached and server.alive()
    finally:
        server.stop(grace_s=5.0)
    assert _wait_gone([daemon]) == []
    assert not server.alive()


def test_a_command_that_exits_0_leaving_nothing_is_still_a_server_that_exited(tmp_path: Path) -> None:
    server = _server(tmp_path, "print('usage: serve [--port N]')")
    server.start()
    with pytest.raises(LaunchError, match="exited with code 0 before it was healthy"):
        asyncio.run(server.wait_healthy(30))
    server.stop()


SWEEP = """
import asyncio, sys
from pathlib import Path
from specmeter.sweep.launch import ServerProcess
server = ServerProcess("k=0", sys.argv[3:], sys.argv[1], Path(sys.argv[2]) / "s.log")
server.start()
asyncio.run(server.wait_healthy(60))
print(server.pid, flush=True)
input()
"""


@pytest.mark.parametrize("daemonize", [False, True], ids=["foreground", "daemonized"])
def test_servers_die_with_a_sweep_that_is_killed(tmp_path: Path, daemonize: bool) -> None:
    # Issue 29.5: SIGKILL leaves no atexit; the guard sees its pipe close and stops the server's group (here
    # the stub and its child) or the daemon it was told about.
    port = free_port()
    argv = [sys.executable, str(STUB), "--port", str(port), "--k", "0", "--pids", str(tmp_path)]
    argv += ["--daemonize"] if daemonize else []
    sweep = subprocess.Popen(
        [sys.executable, "-c", SWEEP, f"http://127.0.0.1:{port}", str(tmp_path), *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sweep.stdout is not None
        leader = int(sweep.stdout.readline())
        pids = [int(f.read_text()) for f in tmp_path.glob("*-*") if f.name.startswith(("child-", "daemon-"))]
        # The stub's child (k = 0 starts one), and the stub itself: the daemon, or the launch's leader.
        pids += [] if daemonize else [leader]
        assert len(pids) == 2 and not any(gone(p) for p in pids)
    finally:
        sweep.kill()
        sweep.wait()
    assert _wait_gone(pids) == [], "a launched server outlived the sweep that was killed"
