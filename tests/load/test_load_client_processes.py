"""``--client-processes auto`` (the default): processes from the busiest level's streams and the cores; the
result says how many read the streams, how busy the busiest was, and warns when the client was the
bottleneck."""

from __future__ import annotations

import random

import pytest

from specmeter.load.config import (
    CLIENT_BUSY,
    MAX_CLIENT_PROCESSES,
    STREAMS_PER_CLIENT_PROCESS,
    Endpoint,
    LoadConfig,
    LoadConfigError,
    Phase,
)
from specmeter.load.level import RoleResult
from specmeter.load.result import _load_block


def _cfg(*phases: Phase, **fields: object) -> LoadConfig:
    return LoadConfig(endpoint="http://127.0.0.1:9", prompts=(), phases=phases, **fields)  # type: ignore[arg-type]


def test_auto_is_the_default_and_numbers_pass_as_given() -> None:
    assert LoadConfig.client_processes == "auto"
    assert _cfg(Phase(concurrency=1), limit=1).client_processes == "auto"
    assert _cfg(Phase(concurrency=1), limit=1, client_processes="3").client_processes == 3  # CLI text
    assert _cfg(Phase(concurrency=1), limit=1, client_processes=" AUTO ").client_processes == "auto"
    assert _cfg(Phase(concurrency=500), limit=500, client_processes=3).client_process_count(64) == 3


@pytest.mark.parametrize("bad", [0, MAX_CLIENT_PROCESSES + 1, "two", "", True, 2.5])
def test_a_bad_value_is_one_line_naming_the_option(bad: object) -> None:
    with pytest.raises(LoadConfigError) as caught:
        _cfg(Phase(concurrency=1), limit=1, client_processes=bad)
    assert "--client-processes" in str(caught.value) and "\n" not in str(caught.value)


def test_auto_grows_with_the_streams_and_never_passes_the_cores() -> None:
    rng = random.Random(7)
    for _ in range(300):
        concurrency, limit, cores = rng.randint(1, 1000), rng.randint(1, 10_000), rng.randint(1, 256)
        _check_auto(concurrency, limit, cores)
    for concurrency in (1, 16, 32, 33, 64, 256):  # the benchmark's levels, and the edges
        for cores in (1, 2, 16):
            _check_auto(concurrency, 10_000, cores)


def _check_auto(concurrency: int, limit: int, cores: int) -> None:
    cfg = _cfg(Phase(concurrency=1), Phase(concurrency=concurrency), limit=limit)
    n = cfg.client_process_count(cores)
    streams = min(concurrency, limit)
    assert 1 <= n <= min(cores, MAX_CLIENT_PROCESSES)
    assert cfg.peak_streams() == streams
    # Enough processes for the streams unless the cores run out; none more than needed.
    assert n * STREAMS_PER_CLIENT_PROCESS >= streams or n == min(cores, MAX_CLIENT_PROCESSES)
    assert (n - 1) * STREAMS_PER_CLIENT_PROCESS < streams
    # More streams never take fewer processes.
    more = _cfg(Phase(concurrency=concurrency + 1), limit=limit + 1)
    assert more.client_process_count(cores) >= n


def test_auto_counts_an_open_loop_level_by_its_requests() -> None:
    small = _cfg(Phase(rate=5.0), limit=8)
    assert small.peak_streams() == 8 and small.client_process_count(16) == 1  # stays in-process
    timed = _cfg(Phase(rate=100.0), duration=10.0)
    assert timed.peak_streams() == 1000 and timed.client_process_count(4) == 4


def _role(busy: list[float], processes: int) -> RoleResult:
    role = RoleResult(Endpoint("speculative", "http://x", None), wall_s=10.0, client_cpu_s=sum(busy))
    role.client_cpu_by_process = busy
    role.client_processes = processes
    return role


def test_the_result_says_how_many_processes_ran_and_how_busy_the_busiest_was() -> None:
    block = _load_block(_role([1.0, 4.0, 3.0], 2))
    assert block["client_processes"] == 2
    assert block["client_busiest_cpu"] == pytest.approx(0.4)
    assert block["client_cpu"] == pytest.approx(0.8)
    assert block["client_warning"] is None


def test_a_client_near_a_full_core_is_warned_about_with_its_size() -> None:
    busy = 10.0 * CLIENT_BUSY + 0.2
    block = _load_block(_role([busy], 1))
    warning = block["client_warning"]
    assert warning is not None and "bottleneck" in warning and f"{busy / 10:.0%}" in warning
    assert _load_block(_role([10.0 * CLIENT_BUSY - 0.5], 1))["client_warning"] is None
