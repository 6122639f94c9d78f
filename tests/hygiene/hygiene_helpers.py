"""Hygiene test helpers: a bounded CPU hog (stopped by PID), one process's share of a sampler's "other" CPU,
and a stand-in for the pynvml module."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import SimpleNamespace
from typing import Any

import psutil


@contextmanager
def cpu_hog(seconds: float = 60.0, count: int = 1) -> Iterator[int]:
    """``count`` separate processes spinning on a core each until ``seconds`` pass or the block ends (then
    SIGKILL by PID). Yields the first one's PID once all are actually burning CPU."""
    code = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.DEVNULL) for _ in range(count)]
    try:
        deadline = time.monotonic() + 10
        for proc in procs:
            p = psutil.Process(proc.pid)
            while p.cpu_times().user < 0.05 and time.monotonic() < deadline:  # interpreter start-up done
                time.sleep(0.02)
        yield procs[0].pid
    finally:
        for proc in procs:
            with suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        for proc in procs:
            proc.wait(timeout=10)


def other_cores_of(sampler: Any, pid: int) -> float | None:
    """Mean cores process ``pid`` used in a stopped ``MachineSampler``'s window, as "other" CPU (None: never
    seen using CPU, or counted as the measurement's own). Reads the sampler's per-process tally, which the
    figures only show for the top five."""
    wall = sampler.stop()["duration_s"]  # stop() is idempotent: the figures of the closed window
    used = [cpu for (p, _), cpu in sampler._other_by_proc.items() if p == pid]
    return sum(used) / wall if used and wall > 0 else None


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


class FakeNvml:
    """The pynvml calls the probe makes; device 0 runs us and a stranger, device 1 idles hot."""

    def __init__(self, own_pid: int, *, fail_init: bool = False) -> None:
        self.own_pid = own_pid
        self.fail_init = fail_init
        self.shutdowns = 0

    def nvmlInit(self) -> None:
        if self.fail_init:
            raise RuntimeError("Driver Not Loaded")

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA H200" if h == 0 else b"NVIDIA L4"

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(gpu=90 if h == 0 else 0, memory=10)

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> int:
        return 1980 if h == 0 else 600

    def nvmlDeviceGetMaxClockInfo(self, h: int, clock: int) -> int:
        return 1980 if h == 0 else 2040

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        raise RuntimeError("Not Supported")  # a figure a device does not give is None, not an error

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return 0x1 if h == 0 else 0x40 | 0x4  # idle is not a slowdown; thermal + power cap are

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        if h == 1:
            return []
        return [SimpleNamespace(pid=self.own_pid, usedGpuMemory=2**30),
                SimpleNamespace(pid=999_999, usedGpuMemory=None)]  # fmt: skip
