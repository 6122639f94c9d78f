"""`monitor --requests` follows its log until stopped: SIGTERM ends it as Ctrl-C does (``--json`` written,
exit 130), and its history goes to a documented place it names, never the working directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cli_drift import write_log

SPECMETER = Path(sys.executable).with_name("specmeter")


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)], ids=["sigterm", "ctrl-c"]
)
def test_stopping_a_follow_writes_json_and_history_beside_the_store(tmp_path: Path, signum: int) -> None:
    log = write_log(tmp_path / "requests.jsonl", drop=None, n=200)
    out, work, store = tmp_path / "windows.json", tmp_path / "work", tmp_path / "data" / "runs.sqlite"
    work.mkdir()
    env = {**os.environ, "SPECMETER_STORE": str(store)}
    cmd = [str(SPECMETER), "monitor", "--requests", str(log), "--interval", "1h", "--json", str(out), "-q"]
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    history = store.with_name("monitor.sqlite")
    try:
        deadline = time.monotonic() + 60
        while not history.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(1.0)  # the log is read; the monitor now waits for more lines
        assert proc.poll() is None, proc.communicate()  # still following
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert f"history in {history}" in stderr
    assert history.is_file() and list(work.iterdir()) == []  # nothing dropped in the working directory
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["source"] == str(log) and data["bad_lines"] == 0
