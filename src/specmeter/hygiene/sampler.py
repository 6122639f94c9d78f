"""A low-rate sampler of what the machine does besides the measurement, run beside every measuring command.

The question it answers: while specmeter timed the baseline and the drafts, how much CPU did *other*
processes take? It is answered from two system-wide counters read every ``interval_s`` (0.5 s):

    other CPU = Δ(machine busy CPU seconds) − Δ(CPU seconds of the measurement's own processes)

``busy`` is /proc/stat's user + nice + system + irq + softirq over all CPUs (``probes.read_cpu``); the
measurement's processes are this process (its reaped children included), the children it starts after the
window opened (a vLLM engine core, a compile worker) and any PIDs the caller adds (a local server under
``load``). Processes that already existed when the window opened (the first scan saw them) are never
"own", even if they are our children: that is how a deliberate hog started beside a run is seen as the other
process it is. A tracked process that is reaped by another tracked one (our child, by us) leaves the count
what it was counted so far, since its parent's reaped-children counters now hold all of it. Totals
are exact over the window whatever the interval (the last reading is taken at ``stop()``); the interval only
sets the time resolution of the timeline. Every ``scan_every`` samples a scan of all processes finds new
children and attributes other CPU to named processes (the "top processes" of the verdict).

Also recorded: steal time (a VM's virtual CPU given to another guest), the 1-minute load average, the CPU
frequency where the platform shows it, Linux's CPU pressure (PSI: time some task waited for a CPU, ours
included) and, where NVML answers, the accelerators (``hygiene.gpu``).

Cost, measured with ``time.thread_time`` in the sampler's own thread and reported in every result
(``sampler``): one sample reads a few small /proc files (~0.2 ms with the frequency and load); a scan ~6 ms
per 100 processes, one at the start and one at the end of the window plus one every 5 s — or rarer, so that
scans stay under 0.5 % of a core on hosts with thousands of processes. Over a run of a minute that is
about 0.1 % of one core (12 ms of fixed cost dominate runs of a few seconds), and the thread sleeps
between readings, so it never holds a core for more than a few milliseconds at a time.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import psutil

from specmeter.hygiene import probes
from specmeter.hygiene.gpu import DeviceReading, NvmlProbe, open_nvml, summarize_gpu

__all__ = ["DEFAULT_INTERVAL_S", "MachineSampler"]

DEFAULT_INTERVAL_S = 0.5
DEFAULT_SCAN_EVERY = 10  # a process scan every 5 s at the default interval ...
SCAN_BUDGET = 0.005  # ... or rarer, so that scans never take more than 0.5 % of one core (large hosts)
TOP_PROCESSES = 5
TOP_MIN_CORES = 0.02  # processes below this average are not listed
BUSY_INTERVAL_CORES = 0.5  # an interval counts as "busy" when others used at least half a core in it


@dataclass(frozen=True)
class _Interval:
    t0: float  # seconds since the window opened
    t1: float
    busy: float  # machine busy CPU seconds in the interval
    steal: float
    total: float
    own: float  # the measurement's CPU seconds in the interval
    load1: float | None
    freq_mhz: float | None

    @property
    def other_cores(self) -> float:
        dt = self.t1 - self.t0
        return max(0.0, self.busy - self.own) / dt if dt > 0 else 0.0

    @property
    def own_cores(self) -> float:
        dt = self.t1 - self.t0
        return self.own / dt if dt > 0 else 0.0


class MachineSampler:
    """Open a window with :meth:`start`, close it with :meth:`stop`, which returns the window's figures.

    ``threads`` is how many CPU threads the measurement itself runs (torch's intra-op threads); the verdict
    uses it to tell "others used the cores we left free" from "others competed for ours". ``nvml`` replaces
    the ``pynvml`` module (tests); ``gpu=False`` skips NVML entirely.
    """

    def __init__(
        self,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        scan_every: int = DEFAULT_SCAN_EVERY,
        threads: int | None = None,
        extra_pids: tuple[int, ...] = (),
        gpu: bool = True,
        nvml: Any | None = None,
    ) -> None:
        if interval_s <= 0 or scan_every < 1:
            raise ValueError("interval_s must be > 0 and scan_every >= 1")
        self.interval_s = interval_s
        self.scan_every = scan_every
        self.threads = threads
        self._pid = os.getpid()
        self._extra = set(extra_pids)
        self._want_gpu = gpu
        self._nvml_module = nvml
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._figures: dict[str, Any] | None = None

    # ------------------------------------------------------------------------------------- lifecycle

    def start(self) -> MachineSampler:
        if self._thread is not None:
            raise RuntimeError("sampler already started")
        cost0 = time.thread_time()
        self._t0 = time.monotonic()
        self._own: dict[int, psutil.Process] = {}
        self._own_last: dict[int, float] = {}
        self._own_parent: dict[int, int] = {}  # tracked pid → its parent when first seen
        self._own_total = 0.0
        self._pending_own = 0.0  # own CPU found by a scan, added to the next interval
        self._seen: dict[tuple[int, float], float] = {}  # (pid, create_time) → CPU s at the last scan
        self._before: dict[int, float] = {}  # pid → create_time in the first scan: what predates the window
        self._other_by_proc: dict[tuple[int, float], float] = {}
        self._names: dict[int, str] = {}
        self._intervals: list[_Interval] = []
        self._gpu_readings: list[list[DeviceReading]] = []
        self._own_gpu_pids: set[int] = set()
        self._scans = 0
        self._samples = 0
        self._cost_s = 0.0
        self._gpu: NvmlProbe | None = None
        self._gpu_reason: str | None = "not sampled (--no-gpu)"
        if self._want_gpu:
            self._gpu, self._gpu_reason = open_nvml(self._nvml_module)
        self._track(self._pid, created_in_window=False)
        self._scan(first=True)
        self._cpu0 = self._last_cpu = probes.read_cpu()
        self._t0 = self._cpu0.t  # the window: from this reading to the last one in stop()
        self._psi0 = probes.cpu_pressure_s()
        self._load_start = probes.read_load1()
        self._freq_max = probes.read_freq_mhz()[1]
        self._cost_s += time.thread_time() - cost0
        self._thread = threading.Thread(target=self._run, name="specmeter-hygiene", daemon=True)
        self._thread.start()
        return self

    def add_pids(self, pids: tuple[int, ...] | list[int]) -> None:
        """Count these processes (and their children) as part of the measurement from now on."""
        with self._lock:
            self._extra.update(pids)

    def stop(self) -> dict[str, Any]:
        """Close the window: one last reading, and the figures (``figures()``). Idempotent."""
        if self._figures is not None:
            return self._figures
        if self._thread is None:
            raise RuntimeError("sampler not started")
        self._stop.set()
        self._thread.join()
        cost0 = time.thread_time()
        with self._lock:
            self._scan()
            self._sample()
        psi1 = probes.cpu_pressure_s()
        self._cost_s += time.thread_time() - cost0
        if self._gpu is not None:
            self._gpu.close()
        self._figures = self._summarize(psi1)
        return self._figures

    def __enter__(self) -> MachineSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        next_scan = time.monotonic() + self.scan_every * self.interval_s
        while not self._stop.wait(self.interval_s):
            cost0 = time.thread_time()
            with self._lock:
                if time.monotonic() >= next_scan:
                    self._scan()
                    scan_cost = time.thread_time() - cost0
                    next_scan = time.monotonic() + max(
                        self.scan_every * self.interval_s, scan_cost / SCAN_BUDGET
                    )
                self._sample()
            self._cost_s += time.thread_time() - cost0

    # ------------------------------------------------------------------------------------- readings

    def _track(self, pid: int, *, ppid: int | None = None, created_in_window: bool) -> None:
        try:
            proc = psutil.Process(pid)
        except psutil.Error:
            return
        cpu = probes.process_cpu_s(proc)
        if cpu is None:
            return
        self._own[pid] = proc
        self._own_last[pid] = cpu
        if ppid is not None:
            self._own_parent[pid] = ppid
        if created_in_window:  # everything it ever ran, it ran for the measurement
            self._pending_own += cpu

    def _born_in_window(self, p: probes.ProcessUsage) -> bool:
        """Whether a process appeared after the first scan, i.e. inside the window.

        Decided by membership in the first scan, never by comparing ``create_time`` with the clock: on Linux
        psutil's ``create_time`` is /proc/stat's ``btime`` (whole seconds, truncated) plus the start tick, so
        it reads up to a second *early*, and a child started in the window's first second looked older than
        the window: it was then "another process" and its CPU went to the top processes (a CI failure). A
        PID seen in the first scan is a new process only if its ``create_time`` moved by more than the
        ``btime`` step of a clock change (1 s): the PID was reused.
        """
        before = self._before.get(p.pid)
        return before is None or p.create_time > before + 1.5

    def _scan(self, *, first: bool = False) -> None:
        procs = probes.scan_processes()
        self._scans += 1
        if first:
            self._before = {p.pid: p.create_time for p in procs.values()}
        # Children that existed before the window opened are not the measurement (a hog started beside it).
        new_children = {p.pid for p in procs.values() if p.ppid == self._pid and self._born_in_window(p)}
        own = {self._pid} | probes.tree_of(new_children, procs) | probes.tree_of(self._extra, procs)
        # Parents before children (a parent is always older), so that _sample reads children first.
        for pid in sorted(own - set(self._own), key=lambda q: procs[q].create_time if q in procs else 0.0):
            info = procs.get(pid)
            in_window = info is not None and not first and self._born_in_window(info)
            self._track(pid, ppid=info.ppid if info is not None else None, created_in_window=in_window)
        for p in procs.values():
            key = (p.pid, p.create_time)
            prev = self._seen.get(key)
            self._seen[key] = p.cpu_s
            # Own by this scan even when it is already gone again (exited before _track could read it).
            if p.pid in own or p.pid in self._own:
                continue
            self._names[p.pid] = p.name
            if prev is not None:
                delta = p.cpu_s - prev
            elif not first and self._born_in_window(p):
                delta = p.cpu_s  # born inside the window: all of it is inside
            else:
                continue
            if delta > 0:
                self._other_by_proc[key] = self._other_by_proc.get(key, 0.0) + delta

    def _sample(self) -> None:
        cpu = probes.read_cpu()
        own = self._pending_own
        self._pending_own = 0.0
        tracked = set(self._own)
        # Newest first: a child read before its parent, so a child found gone (reaped) is already inside the
        # parent's reaped-children counters when the parent is read.
        for pid in reversed(list(self._own)):
            proc = self._own[pid]
            now = probes.process_cpu_s(proc)
            if now is None:  # gone
                del self._own[pid]
                last = self._own_last.pop(pid)
                if self._own_parent.pop(pid, None) in tracked:
                    # Reaped by a process we read: everything it ran now also sits in that parent's
                    # reaped-children counters, which count it again; take back what it was counted so far.
                    own -= last
                continue
            own += max(0.0, now - self._own_last[pid])
            self._own_last[pid] = now
        if own < 0:  # the parent's counters grew before the child vanished (read in between): next interval
            self._pending_own, own = own, 0.0
        self._own_total += own
        prev = self._last_cpu
        self._last_cpu = cpu
        self._intervals.append(
            _Interval(
                t0=prev.t - self._t0,
                t1=cpu.t - self._t0,
                busy=cpu.busy - prev.busy,
                steal=cpu.steal - prev.steal,
                total=cpu.total - prev.total,
                own=own,
                load1=probes.read_load1(),
                freq_mhz=probes.read_freq_mhz()[0],
            )
        )
        if self._gpu is not None:
            self._gpu_readings.append(self._gpu.read())
            self._own_gpu_pids |= set(self._own)
        self._samples += 1

    # ------------------------------------------------------------------------------------- figures

    def _summarize(self, psi1: float | None) -> dict[str, Any]:
        cpu1 = self._last_cpu
        wall = cpu1.t - self._cpu0.t
        cores = probes.logical_cores()
        busy = cpu1.busy - self._cpu0.busy
        total = cpu1.total - self._cpu0.total
        steal = cpu1.steal - self._cpu0.steal
        other_s = max(0.0, busy - self._own_total)
        ok = wall > 0
        iv = self._intervals
        busy_time = sum(i.t1 - i.t0 for i in iv if i.other_cores >= BUSY_INTERVAL_CORES)
        top = sorted(
            (
                (cpu_s / wall, pid, self._names.get(pid, "?"))
                for (pid, _), cpu_s in self._other_by_proc.items()
                if ok and cpu_s / wall >= TOP_MIN_CORES
            ),
            reverse=True,
        )[:TOP_PROCESSES]
        loads = [i.load1 for i in iv if i.load1 is not None]
        freqs = [i.freq_mhz for i in iv if i.freq_mhz is not None]
        gpu: dict[str, Any] = {"available": self._gpu is not None, "reason": self._gpu_reason}
        if self._gpu is not None:
            gpu["devices"] = summarize_gpu(self._gpu_readings, self._own_gpu_pids | {self._pid}, self._names)
        return {
            "duration_s": wall,
            "interval_s": self.interval_s,
            "samples": self._samples,
            "cores": cores,
            "physical_cores": probes.physical_cores(),
            "threads": self.threads,
            "own_cores": self._own_total / wall if ok else None,
            "other_cores": other_s / wall if ok else None,
            "other_share": other_s / wall / cores if ok else None,
            "other_cores_peak": max((i.other_cores for i in iv), default=None),
            "other_busy_time_share": busy_time / wall if ok else None,
            "steal_share": steal / total if total > 0 else None,
            "cpu_pressure_share": None
            if psi1 is None or self._psi0 is None or not ok
            else (psi1 - self._psi0) / wall,
            "load1": {
                "start": self._load_start,
                "max": max(loads, default=None),
                "end": loads[-1] if loads else None,
            },
            "freq_mhz": None
            if not freqs
            else {"min": min(freqs), "mean": sum(freqs) / len(freqs), "max_rated": self._freq_max},
            "top_processes": [
                {"pid": pid, "name": name, "cmd": probes.short_cmdline(pid), "cores": c}
                for c, pid, name in top
            ],
            "gpu": gpu,
            "sampler": {
                "cpu_s": self._cost_s,
                "share_of_core": self._cost_s / wall if ok else None,
                "per_sample_ms": 1000.0 * self._cost_s / max(1, self._samples),
                "scans": self._scans,
            },
            "timeline": {
                "t_s": [round(i.t1, 3) for i in iv],
                "other_cores": [round(i.other_cores, 3) for i in iv],
                "own_cores": [round(i.own_cores, 3) for i in iv],
                "steal_share": [round(i.steal / i.total, 4) if i.total > 0 else None for i in iv],
                "load1": [i.load1 for i in iv],
                "freq_mhz": [i.freq_mhz for i in iv],
            },
        }
