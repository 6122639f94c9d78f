"""Cheap readings of what the machine is doing: the raw material of the sampler and of ``doctor``.

Every reader returns plain numbers (or None where the platform does not say) and never raises for a missing
file or a process that vanished: a hygiene probe must not be the reason a measurement fails. psutil does
the portable part (CPU times, load average, frequency, processes); the Linux-only extras read /proc and /sys
directly, each a single small file.

Costs measured on the 2-core development VM (92 processes): ``cpu_times()`` and one process's times
~0.015 ms each, ``cpu_freq()`` ~0.035 ms, a full process scan (``scan_processes``) ~6 ms. The sampler reads
the first three every interval and scans only every few intervals.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = [
    "CpuTimes",
    "ProcessUsage",
    "cpu_pressure_s",
    "descendants",
    "governors",
    "listening_pids",
    "logical_cores",
    "physical_cores",
    "process_cpu_s",
    "read_cpu",
    "read_freq_mhz",
    "read_load1",
    "scan_processes",
    "short_cmdline",
    "tree_of",
]


@dataclass(frozen=True)
class CpuTimes:
    """System-wide CPU seconds summed over all logical CPUs, split the way the verdict needs them.

    ``busy`` is user + nice + system + irq + softirq (guest time is already inside user on Linux); ``steal``
    is time the hypervisor gave this VM's virtual CPUs to someone else; ``total`` is every field but the
    guest ones, so busy / total is the machine's utilisation and steal / total its steal share.
    """

    t: float  # time.monotonic() of the reading
    busy: float
    steal: float
    total: float


def read_cpu() -> CpuTimes:
    ct = psutil.cpu_times()
    get = lambda name: float(getattr(ct, name, 0.0))  # noqa: E731 - fields differ between platforms
    busy = get("user") + get("nice") + get("system") + get("irq") + get("softirq") + get("interrupt")
    steal = get("steal")
    total = busy + steal + get("idle") + get("iowait")
    return CpuTimes(t=time.monotonic(), busy=busy, steal=steal, total=total)


def process_cpu_s(proc: psutil.Process) -> float | None:
    """CPU seconds of a process, its reaped children included; None when it is gone or not ours to read."""
    try:
        t = proc.cpu_times()
    except (psutil.Error, OSError):
        return None
    return float(t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0))


def read_load1() -> float | None:
    try:
        return float(psutil.getloadavg()[0])
    except (OSError, AttributeError):
        return None


def read_freq_mhz() -> tuple[float | None, float | None]:
    """(current, max) CPU frequency in MHz averaged over CPUs; None where the platform hides it (many VMs
    report a fixed /proc/cpuinfo figure and no maximum)."""
    try:
        f = psutil.cpu_freq()
    except (OSError, NotImplementedError, RuntimeError):
        return None, None
    if f is None:
        return None, None
    current = float(f.current) if f.current else None
    return current, (float(f.max) if f.max else None)


def cpu_pressure_s(path: Path = Path("/proc/pressure/cpu")) -> float | None:
    """Linux PSI: total seconds in which at least one runnable task waited for a CPU ("some" line)."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("some "):
            for field in line.split():
                if field.startswith("total="):
                    return int(field[6:]) / 1e6
    return None


def logical_cores() -> int:
    return psutil.cpu_count(logical=True) or os.cpu_count() or 1


def physical_cores() -> int | None:
    try:
        n = psutil.cpu_count(logical=False)
    except (OSError, NotImplementedError):
        return None
    return int(n) if n else None


def governors(root: Path = Path("/sys/devices/system/cpu")) -> dict[str, int]:
    """Frequency governors in use → number of CPUs with it; empty when cpufreq is not exposed (VMs)."""
    out: dict[str, int] = {}
    for p in sorted(root.glob("cpu[0-9]*/cpufreq/scaling_governor")):
        try:
            g = p.read_text().strip()
        except OSError:
            continue
        out[g] = out.get(g, 0) + 1
    return out


@dataclass(frozen=True)
class ProcessUsage:
    pid: int
    ppid: int
    name: str
    cpu_s: float  # user + system since the process started (children not included)
    create_time: float  # epoch seconds


def scan_processes() -> dict[int, ProcessUsage]:
    """Every process we may read, with its CPU seconds so far (one pass over /proc: ~6 ms for 90 PIDs)."""
    out: dict[int, ProcessUsage] = {}
    for p in psutil.process_iter(["ppid", "name", "cpu_times", "create_time"]):
        info = p.info
        times = info.get("cpu_times")
        if times is None:  # AccessDenied leaves None: another user's process on a locked-down host
            continue
        out[p.pid] = ProcessUsage(
            pid=p.pid,
            ppid=int(info.get("ppid") or 0),
            name=str(info.get("name") or "?"),
            cpu_s=float(times.user + times.system),
            create_time=float(info.get("create_time") or 0.0),
        )
    return out


def descendants(root: int, processes: Mapping[int, ProcessUsage]) -> set[int]:
    """PIDs below ``root`` in the parent tree of one scan (``root`` itself not included)."""
    children: dict[int, list[int]] = {}
    for p in processes.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out: set[int] = set()
    todo: list[int] = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid in out or pid == root:
            continue
        out.add(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_of(pids: Iterable[int], processes: Mapping[int, ProcessUsage]) -> set[int]:
    """The given PIDs and all their descendants, as far as the scan sees them."""
    out: set[int] = set()
    for pid in pids:
        out.add(pid)
        out |= descendants(pid, processes)
    return out


def short_cmdline(pid: int, limit: int = 80) -> str | None:
    """A process's command line, cut to ``limit`` characters; None when it is gone or hidden."""
    try:
        cmd = " ".join(psutil.Process(pid).cmdline())
    except (psutil.Error, OSError):
        return None
    return cmd if len(cmd) <= limit else cmd[: limit - 1] + "…"


def listening_pids(port: int) -> set[int]:
    """PIDs with a TCP socket listening on ``port`` on this machine (a local server under ``load``); empty
    when the platform will not tell (macOS without root) or nothing listens."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return set()
    return {
        c.pid
        for c in conns
        if c.pid is not None and c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
    }
