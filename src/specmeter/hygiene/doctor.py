"""``specmeter doctor``: is this machine fit to time speculative decoding? Checks with concrete advice.

Like pyperf's ``system show``: threads against cores, the frequency governor and boost, what else is running
(a short sampler window, judged with the same thresholds as a measuring run), steal time, memory and swap,
the torch build, and the accelerator. Each check is a :class:`Check` with a status (ok / info / warn / bad)
and, where something should change, a one-line advice a user can act on.

torch is imported only inside :func:`torch_checks` (doctor reports on it; nothing else here needs it).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import psutil

from specmeter.hygiene import probes
from specmeter.hygiene.gpu import open_nvml
from specmeter.hygiene.sampler import MachineSampler
from specmeter.hygiene.verdict import assess

__all__ = ["Check", "Status", "diagnose"]

Status = Literal["ok", "info", "warn", "bad"]
SWAP_WARN_BYTES = 256 * 2**20
LOW_MEMORY_SHARE = 0.10


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    finding: str
    advice: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def cpu_checks(torch_threads: int | None) -> list[Check]:
    logical = probes.logical_cores()
    physical = probes.physical_cores()
    cores = f"{logical} logical CPUs" + (f", {physical} physical cores" if physical else "")
    env = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ}
    env_text = "".join(f", {k}={v}" for k, v in env.items())
    out = [Check("cores", "info", cores)]
    if torch_threads is None:
        out.append(Check("threads", "info", "torch not importable: thread count unknown"))
    elif physical and torch_threads > physical:
        out.append(
            Check(
                "threads", "warn",
                f"torch uses {torch_threads} threads on {physical} physical cores{env_text}",
                f"hyper-threads slow each forward and add jitter: pass --threads {physical}",
            )
        )  # fmt: skip
    elif torch_threads >= logical and logical <= 4:
        out.append(
            Check(
                "threads", "info",
                f"torch uses {torch_threads} threads on {logical} CPUs{env_text}: "
                "every core is the measurement's",
                "any other process will take a core from it; on a shared host --threads "
                f"{max(1, logical - 1)} leaves one free and is steadier",
            )
        )  # fmt: skip
    else:
        out.append(Check("threads", "ok", f"torch uses {torch_threads} threads on {cores}{env_text}"))
    return out


def governor_checks(root: Path = Path("/sys/devices/system/cpu")) -> list[Check]:
    govs = probes.governors(root)
    out: list[Check] = []
    if not govs:
        out.append(
            Check("governor", "info", "no cpufreq interface (a VM or container): the host sets the clocks")
        )
    else:
        text = ", ".join(f"{g} on {n} CPU(s)" for g, n in govs.items())
        if set(govs) == {"performance"}:
            out.append(Check("governor", "ok", text))
        else:
            out.append(
                Check(
                    "governor", "warn", text,
                    "clocks that ramp with load make short forwards look slow: "
                    "sudo cpupower frequency-set -g performance",
                )
            )  # fmt: skip
    no_turbo, boost = root / "intel_pstate/no_turbo", root / "cpufreq/boost"
    state: bool | None = None
    try:
        if no_turbo.exists():
            state = no_turbo.read_text().strip() == "0"
        elif boost.exists():
            state = boost.read_text().strip() == "1"
    except OSError:
        state = None
    if state:
        out.append(
            Check(
                "boost", "info",
                "turbo/boost is on: clocks depend on temperature and on the other cores' load",
                "for the steadiest ratios disable it while measuring "
                f"(echo {'1 > ' + str(no_turbo) if no_turbo.exists() else '0 > ' + str(boost)})",
            )
        )  # fmt: skip
    return out


def load_checks(sample_s: float, torch_threads: int | None) -> tuple[list[Check], dict[str, Any]]:
    """A short sampler window while doctor itself sleeps: what else runs, steal, the load average."""
    sampler = MachineSampler(interval_s=min(0.5, max(0.05, sample_s / 4)), threads=torch_threads, gpu=False)
    sampler.start()
    time.sleep(sample_s)  # doctor idles: everything the window sees is someone else's
    figures = sampler.stop()
    verdict = assess(figures)
    out: list[Check] = []
    top = figures.get("top_processes") or []
    listed = "; ".join(f"{p.get('cmd') or p['name']} (pid {p['pid']}) {p['cores']:.2f} cores" for p in top)
    listed = listed or "none"
    other = figures.get("other_cores") or 0.0
    finding = f"other processes used {other:.2f} cores over {sample_s:g} s — busiest: {listed}"
    if verdict["verdict"] == "quiet":
        out.append(Check("other processes", "ok", finding))
    else:
        out.append(
            Check(
                "other processes", "bad" if verdict["verdict"] == "unusable" else "warn", finding,
                f"a measuring run now would be judged {verdict['verdict']}: stop them (kill PID), wait, or "
                "measure elsewhere; --threads below the core count leaves them a core",
            )
        )  # fmt: skip
    steal = figures.get("steal_share")
    if steal is not None and steal >= 0.02:
        out.append(
            Check(
                "steal", "warn", f"the hypervisor gave {steal:.0%} of this VM's CPU to other guests",
                "a VM with dedicated vCPUs (or bare metal) gives ratios that repeat",
            )
        )  # fmt: skip
    load = probes.read_load1()
    if load is not None:
        cores = figures.get("cores") or 1
        status: Status = "warn" if load > cores else "info"
        out.append(
            Check(
                "load average", status, f"1-minute load {load:.2f} on {cores} CPUs",
                "more runnable tasks than CPUs: wait for the machine to settle" if status == "warn" else "",
            )
        )  # fmt: skip
    return out, figures


def memory_checks() -> list[Check]:
    vm = psutil.virtual_memory()
    out = [Check("memory", "info", f"{vm.available / 2**30:.1f} GiB available of {vm.total / 2**30:.1f} GiB")]
    if vm.available < LOW_MEMORY_SHARE * vm.total:
        out[0] = Check(
            "memory", "warn", out[0].finding, "under 10 % free: the page cache evicts model weights mid-run"
        )
    try:
        swap = psutil.swap_memory()
    except (OSError, RuntimeError):
        return out
    if swap.used > SWAP_WARN_BYTES:
        out.append(
            Check(
                "swap", "warn", f"{swap.used / 2**30:.1f} GiB of swap in use",
                "a paged-out model gives outlier requests: free memory or measure a smaller model",
            )
        )  # fmt: skip
    battery = getattr(psutil, "sensors_battery", None)
    b = battery() if battery is not None else None
    if b is not None and not b.power_plugged:
        out.append(Check("power", "warn", "running on battery", "plug in: laptops lower clocks on battery"))
    return out


def torch_checks() -> tuple[list[Check], int | None, dict[str, Any]]:
    """The torch build and the accelerator as torch sees it; (checks, torch threads, facts)."""
    try:
        import torch
    except ImportError as e:
        return [Check("torch", "bad", f"torch is not importable ({e})", "pip install torch")], None, {}
    facts: dict[str, Any] = {
        "version": str(torch.__version__),
        "cuda": getattr(torch.version, "cuda", None),
        "hip": getattr(torch.version, "hip", None),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "openmp": bool(torch.backends.openmp.is_available()),
        "cuda_available": bool(torch.cuda.is_available()),
        "devices": [],
    }
    build = (
        "CPU-only build"
        if not facts["cuda"] and not facts["hip"]
        else (f"CUDA {facts['cuda']}" if facts["cuda"] else f"ROCm {facts['hip']}")
    )
    extras = ", ".join(x for x, on in (("oneDNN", facts["mkldnn"]), ("OpenMP", facts["openmp"])) if on)
    out = [Check("torch", "ok", f"torch {facts['version']}, {build}" + (f" ({extras})" if extras else ""))]
    if facts["cuda_available"]:
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            facts["devices"].append({"index": i, "name": p.name, "memory_gib": p.total_memory / 2**30})
        names = "; ".join(
            f"cuda:{d['index']} {d['name']} ({d['memory_gib']:.0f} GiB)" for d in facts["devices"]
        )
        out.append(Check("accelerator", "ok", names))
    elif facts["cuda"] or facts["hip"]:
        out.append(
            Check(
                "accelerator", "warn", f"torch was built for {build} but sees no device",
                "check the driver (nvidia-smi) and CUDA_VISIBLE_DEVICES",
            )
        )  # fmt: skip
    else:
        out.append(
            Check(
                "accelerator", "info", "no accelerator: specmeter times CPU decode here",
                "CPU speedups do not carry over to GPU serving; measure on the hardware you will serve on",
            )
        )  # fmt: skip
    return out, facts["threads"], facts


def nvml_checks(nvml: Any | None = None) -> list[Check]:
    probe, reason = open_nvml(nvml)
    if probe is None:
        return [Check("NVML", "info", reason or "NVML unavailable")]
    out = []
    try:
        for d in probe.read():
            clock = (
                f", SM clock {d.sm_clock_mhz:.0f}/{d.sm_clock_max_mhz:.0f} MHz"
                if d.sm_clock_mhz is not None and d.sm_clock_max_mhz
                else ""
            )
            temp = f", {d.temperature_c:.0f} °C" if d.temperature_c is not None else ""
            finding = f"GPU {d.index} {d.name}{clock}{temp}"
            others = {pid: mib for pid, mib in d.processes.items() if pid != os.getpid()}
            if others:
                listed = ", ".join(f"pid {pid} ({mib:.0f} MiB)" for pid, mib in sorted(others.items())[:5])
                out.append(
                    Check(
                        f"GPU {d.index}", "warn", f"{finding}; other processes on it: {listed}",
                        "they share the SMs and memory bandwidth the measurement needs: stop them or pick "
                        "another device (CUDA_VISIBLE_DEVICES)",
                    )
                )  # fmt: skip
            elif d.slowdowns:
                out.append(
                    Check(
                        f"GPU {d.index}", "warn", f"{finding}; clocks held down: {', '.join(d.slowdowns)}",
                        "cool the device or lift the power cap (nvidia-smi -pl) before measuring",
                    )
                )  # fmt: skip
            else:
                out.append(Check(f"GPU {d.index}", "ok", finding))
    finally:
        probe.close()
    return out


def diagnose(
    *, sample_s: float = 2.0, nvml: Any | None = None, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Every check, in reading order, and the overall status: ``{"status", "checks", "machine", "torch"}``."""
    say = progress or (lambda _msg: None)
    say("torch")
    t_checks, threads, torch_facts = torch_checks()
    checks = cpu_checks(threads) + governor_checks()
    say(f"watching the machine for {sample_s:g} s")
    l_checks, figures = load_checks(sample_s, threads)
    checks += l_checks + memory_checks() + t_checks + nvml_checks(nvml)
    worst = max((("ok", "info", "warn", "bad").index(c.status) for c in checks), default=0)
    status = {0: "ready", 1: "ready", 2: "warnings", 3: "not ready"}[worst]
    figures = {k: v for k, v in figures.items() if k != "timeline"}
    return {
        "status": status,
        "checks": [c.to_dict() for c in checks],
        "machine": figures,
        "verdict": assess(figures)["verdict"],
        "torch": torch_facts,
    }
