"""Levels, rates, counts and traces bounded by what the client machine can hold (issue 29, item 4).

``load --concurrency 1000000000`` used to build a hundred million connection pools (100% CPU, memory
growing, Ctrl-C ignored, nothing sent); ``--rate 1e-300`` and ``--trace-speed 1e-300`` waited for ever, a
trace line at t = 10⁸ s waited three years, and ``--trace /dev/zero`` was read until memory ran out. Each is
now one ``error:`` line that names the bound (``load.limits``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specmeter.load import limits
from specmeter.load.config import LoadConfig, LoadConfigError, Phase
from specmeter.load.trace import TraceEntry, TraceError, load_trace
from specmeter.sweep.config import SearchSettings

HUGE: list[tuple[dict[str, Any], str]] = [
    ({"phases": (Phase(concurrency=10**9),)}, "--concurrency"),
    ({"phases": (Phase(concurrency=10**7),)}, "--concurrency"),
    ({"phases": (Phase(rate=1e-300),)}, "--rate"),
    ({"phases": (Phase(rate=1e9),)}, "--rate"),
    ({"trace_speed": 1e-300}, "--trace-speed"),
    ({"limit": 10**9}, "--limit"),
    ({"warmup": 10**9}, "--warmup"),
    ({"blocks": 10**9}, "--blocks"),
]


@pytest.mark.parametrize(("fields", "option"), HUGE, ids=[str(f) for f, _ in HUGE])
def test_what_the_machine_cannot_hold_is_refused_naming_the_bound(
    fields: dict[str, Any], option: str
) -> None:
    with pytest.raises(LoadConfigError) as caught:
        LoadConfig(endpoint="http://127.0.0.1:9", prompts=(), **fields)
    message = str(caught.value)
    assert message.startswith(f"{option} must be in [") and "\n" not in message, message


def test_the_concurrency_bound_comes_from_the_open_file_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits.resource, "getrlimit", lambda which: (1024, 1024))
    monkeypatch.setattr(limits, "_available_memory", lambda: 64 << 30)
    bound = limits.stream_bound()
    assert bound.streams == 1024 - limits.FD_RESERVE
    with pytest.raises(LoadConfigError, match=r"in \[1, 960\].*open-file limit 1024"):
        LoadConfig(endpoint="", prompts=(), phases=(Phase(concurrency=961),))
    LoadConfig(endpoint="", prompts=(), phases=(Phase(concurrency=960),))
    # Memory binds too: 2 GiB at 1 MiB a stream.
    monkeypatch.setattr(limits, "_available_memory", lambda: 2 << 30)
    assert limits.stream_bound().streams == 960
    monkeypatch.setattr(limits, "_available_memory", lambda: 512 << 20)
    assert limits.stream_bound().streams == 512 and "available memory" in limits.stream_bound().reason


def test_the_run_raises_its_soft_open_file_limit_for_the_streams() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2000:
        pytest.skip("the hard open-file limit is too low to test raising the soft one")
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    try:
        limits.ensure_open_files(1000)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 1000 + limits.FD_RESERVE
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_search_range_beyond_the_machine_is_refused() -> None:
    with pytest.raises(LoadConfigError, match=r"--search-range must be in \[1, \d+\]"):
        SearchSettings("concurrency", 1.0, 1e9, 0.95, 6)
    with pytest.raises(LoadConfigError, match="--search-range"):
        SearchSettings("rate", 1e-300, 2.0, 0.95, 6)
    assert SearchSettings("rate", 0.5, 4.0, 0.95, 6).high == 4.0


def test_a_trace_replayed_slower_than_a_week_is_refused() -> None:
    trace = [TraceEntry(0.0, 1), TraceEntry(3600.0, 2)]  # an hour
    cfg = LoadConfig(endpoint="", prompts=(), phases=(Phase(trace=True),), trace=trace, trace_speed=0.01)
    assert cfg.trace_speed == 0.01  # 100 hours: fine
    with pytest.raises(LoadConfigError, match=r"--trace-speed 0.001: the trace would take 3.6e\+06 s"):
        LoadConfig(endpoint="", prompts=(), phases=(Phase(trace=True),), trace=trace, trace_speed=0.001)


def test_trace_times_beyond_a_week_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"t": 0}\n{"t": 1e8}\n{"timestamp": 1e12}\n')
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    lines = str(caught.value).splitlines()
    assert [line.split(": field")[0] for line in lines] == [f"{path}:2", f"{path}:3"]
    assert "a week at most" in lines[0] and "604800]" in lines[0] and "604800000]" in lines[1]


def test_a_trace_that_is_not_a_regular_file_is_refused_at_once() -> None:
    with pytest.raises(TraceError, match="/dev/zero: not a regular file"):
        load_trace("/dev/zero")


def test_a_trace_beyond_the_size_bounds_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    long_line = tmp_path / "long.jsonl"
    long_line.write_bytes(
        b'{"t": 0}\n{"t": 1, "pad": "' + b"x" * (limits.MAX_TRACE_LINE_BYTES + 10) + b'"}\n'
    )
    with pytest.raises(TraceError, match=rf"long.jsonl:2: line longer than {limits.MAX_TRACE_LINE_BYTES}"):
        load_trace(long_line)
    big = tmp_path / "big.jsonl"
    big.write_text('{"t": 0}\n' * 50)
    monkeypatch.setattr("specmeter.load.trace.MAX_TRACE_BYTES", 100)
    with pytest.raises(TraceError, match=r"big.jsonl: 450 bytes, more than a trace may hold \(100 bytes\)"):
        load_trace(big)
    monkeypatch.setattr("specmeter.load.trace.MAX_TRACE_LINES", 10)
    monkeypatch.setattr("specmeter.load.trace.MAX_TRACE_BYTES", 10_000)
    with pytest.raises(TraceError, match="more than 10 lines"):
        load_trace(big)


SPECMETER = Path(sys.executable).with_name("specmeter")


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    # A subprocess: before the bound, this command spun for ever and ignored Ctrl-C.
    return subprocess.run([str(SPECMETER), *args], capture_output=True, text=True, timeout=timeout)


def test_a_billion_streams_is_one_error_line_not_a_hang(tmp_path: Path) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "a", "prompt": "hi"}) + "\n")
    base = ["load", "--endpoint", "http://127.0.0.1:9", "--model", "m", "--prompts", str(prompts), "-q"]
    result = _cli(*base, "--concurrency", "1000000000")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: --concurrency must be in [1, ") and "open-file limit" in line, line
