"""What the accelerators are doing, through NVML (``pip install specmeter[gpu]`` installs nvidia-ml-py).

Optional in every sense: without the bindings, without a driver, or on a machine with no NVIDIA device,
:func:`open_nvml` returns ``(None, reason)`` and the sampler records that reason instead of GPU figures.
Each reading is one cheap driver call per device; a call that a device or driver does not support gives
None for that figure, never an exception.

Per device and sample: other processes holding a compute context (PIDs not in the measurement's tree, with
their memory), GPU utilisation, the SM clock against its maximum, the temperature, and the active clock
event ("throttle") reasons. A speculative step is many small kernels, so a second process on the device or
a clock held down by heat or power shows in the speedup before it shows anywhere else.

The bit masks are NVML's ``nvmlClocksThrottleReason*`` / ``nvmlClocksEventReason*`` constants (nvml.h);
idle, the application clock setting and the display clock are not slowdowns and are not reported.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SLOWDOWN_REASONS", "DeviceReading", "NvmlProbe", "open_nvml"]

# nvml.h: clock event reasons that mean "slower than it could be" (bit → name).
SLOWDOWN_REASONS: dict[int, str] = {
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake",
}
_NVML_CLOCK_SM = 1
_NVML_TEMPERATURE_GPU = 0


@dataclass(frozen=True)
class DeviceReading:
    index: int
    name: str
    utilization: float | None  # percent of the sample period in which a kernel ran
    sm_clock_mhz: float | None
    sm_clock_max_mhz: float | None
    temperature_c: float | None
    slowdowns: tuple[str, ...]
    processes: dict[int, float] = field(default_factory=dict)  # pid → used memory in MiB (0 if unknown)


def _call(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:  # NVMLError_NotSupported and friends: the figure is just not available
        return None


class NvmlProbe:
    """Reads every NVML device; ``nvml`` is the ``pynvml`` module (or a stand-in with the same names)."""

    def __init__(self, nvml: Any) -> None:
        self._nvml = nvml
        count = int(nvml.nvmlDeviceGetCount())
        self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self.names = [self._name(h) for h in self._handles]
        reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)

    def _name(self, handle: Any) -> str:
        name = _call(self._nvml.nvmlDeviceGetName, handle)
        return name.decode() if isinstance(name, bytes) else str(name or "?")

    def read(self) -> list[DeviceReading]:
        nvml = self._nvml
        out = []
        for i, h in enumerate(self._handles):
            util = _call(nvml.nvmlDeviceGetUtilizationRates, h)
            mask = _call(self._reasons, h) if self._reasons is not None else None
            procs: dict[int, float] = {}
            for getter in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
                fn = getattr(nvml, getter, None)
                for p in (_call(fn, h) if fn is not None else None) or []:
                    used = getattr(p, "usedGpuMemory", None)
                    procs[int(p.pid)] = used / 2**20 if isinstance(used, (int, float)) and used >= 0 else 0.0
            out.append(
                DeviceReading(
                    index=i,
                    name=self.names[i],
                    utilization=_num(getattr(util, "gpu", None)),
                    sm_clock_mhz=_num(_call(nvml.nvmlDeviceGetClockInfo, h, _NVML_CLOCK_SM)),
                    sm_clock_max_mhz=_num(_call(nvml.nvmlDeviceGetMaxClockInfo, h, _NVML_CLOCK_SM)),
                    temperature_c=_num(_call(nvml.nvmlDeviceGetTemperature, h, _NVML_TEMPERATURE_GPU)),
                    slowdowns=slowdown_names(mask),
                    processes=procs,
                )
            )
        return out

    def close(self) -> None:
        _call(self._nvml.nvmlShutdown)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def slowdown_names(mask: Any) -> tuple[str, ...]:
    if not isinstance(mask, int):
        return ()
    return tuple(name for bit, name in SLOWDOWN_REASONS.items() if mask & bit)


def open_nvml(module: Any | None = None) -> tuple[NvmlProbe | None, str | None]:
    """(probe, None) when NVML answers; (None, why not) otherwise. ``module`` replaces ``pynvml`` (tests)."""
    if module is None:
        try:
            module = importlib.import_module("pynvml")
        except ImportError:
            return None, "NVML bindings not installed (pip install 'specmeter[gpu]')"
    try:
        module.nvmlInit()
    except Exception as e:  # no driver, no device: NVMLError_LibraryNotFound / DriverNotLoaded
        return None, f"NVML unavailable ({type(e).__name__}: {e})"
    try:
        probe = NvmlProbe(module)
    except Exception as e:
        _call(module.nvmlShutdown)
        return None, f"NVML unavailable ({type(e).__name__}: {e})"
    if not probe.names:
        probe.close()
        return None, "NVML reports no device"
    return probe, None


def summarize_gpu(
    readings: Iterable[list[DeviceReading]], own: set[int], names: dict[int, str]
) -> list[dict[str, Any]]:
    """Per device over a window: other processes seen, utilisation, SM clock against its maximum, slowdowns.

    ``own`` are the measurement's PIDs; ``names`` maps other PIDs to process names where known.
    """
    devices: dict[int, dict[str, Any]] = {}
    for sample in readings:
        for r in sample:
            d = devices.setdefault(
                r.index,
                {"index": r.index, "name": r.name, "util": [], "clock": [], "clock_max": r.sm_clock_max_mhz,
                 "temp": [], "slowdowns": set(), "others": {}, "ours": False},
            )  # fmt: skip
            if r.utilization is not None:
                d["util"].append(r.utilization)
            if r.sm_clock_mhz is not None:
                d["clock"].append(r.sm_clock_mhz)
            if r.temperature_c is not None:
                d["temp"].append(r.temperature_c)
            d["slowdowns"].update(r.slowdowns)
            for pid, mib in r.processes.items():
                if pid in own:
                    d["ours"] = True
                else:
                    prev = d["others"].get(pid, 0.0)
                    d["others"][pid] = max(prev, mib)
    out = []
    for d in devices.values():
        clock = d["clock"]
        out.append(
            {
                "index": d["index"],
                "name": d["name"],
                "used_by_measurement": d["ours"],
                "other_processes": [
                    {"pid": pid, "name": names.get(pid, "?"), "memory_mib": round(mib, 1)}
                    for pid, mib in sorted(d["others"].items())
                ],
                "utilization_mean": _mean(d["util"]),
                "sm_clock_mhz_min": min(clock) if clock else None,
                "sm_clock_mhz_mean": _mean(clock),
                "sm_clock_mhz_max_rated": d["clock_max"],
                "temperature_c_max": max(d["temp"]) if d["temp"] else None,
                "slowdowns": sorted(d["slowdowns"]),
            }
        )
    return sorted(out, key=lambda x: x["index"])


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
