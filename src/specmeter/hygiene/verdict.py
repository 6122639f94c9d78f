"""The verdict on the machine during a run — quiet, busy or unusable — with the figures and thresholds.

The thresholds are documented in docs/metrics.md ("Measurement hygiene"); this module is their one owner.
Definitions, with ``other`` the mean CPU cores other processes used over the window, ``cores`` the logical
CPUs, ``free`` = cores − the measurement's threads (the cores it leaves to others; when the thread count
is unknown, cores − the cores it was measured to use) and ``excess`` = other − free (what others must have
taken from the cores the measurement runs on):

- **unusable** when excess ≥ 0.5 core, or steal ≥ 10 %.
- **busy** when other ≥ 0.10 core *and* (excess > 0 or other ≥ 5 % of all cores), or steal ≥ 2 %, or
  another process held a context on an accelerator the measurement used, or an accelerator's clocks were
  slowed by heat or power.
- **quiet** otherwise.

Why these, measured on the bundled legal pair (2 cores, k = 4, 40 legal prompts, docs/metrics.md): with
torch on both cores, one CPU-bound process beside the run (other 0.75, excess 0.75) cut the baseline from
189 to 60 tokens/s and moved E_meas from 2.26× [2.07, 2.43] to 1.58× [1.30, 1.92] — unusable; with
``--threads 1`` the same process on the free core (other 1.0, excess 0) left the baseline at 190 tokens/s
and E_meas at 1.82× [1.67, 1.95] against 1.93× [1.76, 2.06] — a measurable but small effect through shared
caches and memory bandwidth, busy. 0.10 core is above the background of an idle Linux host (0.01-0.05
core: kernel threads, a shell) and well below any second job; 5 % of the cores scales that to large hosts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from specmeter.exitcodes import EXIT_NOISY_MACHINE

__all__ = ["EXIT_NOISY_MACHINE", "LEVELS", "THRESHOLDS", "Level", "assess", "banner", "is_flagged"]

Level = Literal["quiet", "busy", "unusable"]
LEVELS: tuple[Level, ...] = ("quiet", "busy", "unusable")

# docs/metrics.md "Measurement hygiene" lists these; change both together.
THRESHOLDS: dict[str, float] = {
    "busy_other_cores": 0.10,
    "busy_other_share": 0.05,
    "unusable_excess_cores": 0.5,
    "busy_steal_share": 0.02,
    "unusable_steal_share": 0.10,
}

# A measuring command run with --strict exits with EXIT_NOISY_MACHINE (4) when the machine was busy or
# unusable (its results are still written); every exit code is in specmeter.exitcodes.


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _cores(x: float) -> str:
    return f"{x:.2f} core" + ("" if abs(x - 1.0) < 0.005 else "s")


def free_cores(figures: Mapping[str, Any]) -> float | None:
    cores = _num(figures.get("cores"))
    if cores is None:
        return None
    threads = _num(figures.get("threads"))
    used = threads if threads is not None else _num(figures.get("own_cores"))
    return None if used is None else max(0.0, cores - used)


def assess(figures: Mapping[str, Any]) -> dict[str, Any]:
    """The verdict on a sampler window (``MachineSampler.stop()``): level, reasons, thresholds.

    Returns ``{"verdict", "reasons", "free_cores", "excess_cores", "thresholds"}``; reasons are plain
    sentences with the figures. A window that measured nothing (zero duration) is ``quiet``, with a reason
    saying so.
    """
    th = THRESHOLDS
    reasons: list[str] = []
    level = 0
    other = _num(figures.get("other_cores"))
    share = _num(figures.get("other_share"))
    cores = _num(figures.get("cores"))
    free = free_cores(figures)

    def raise_to(n: int, reason: str) -> None:
        nonlocal level
        level = max(level, n)
        reasons.append(reason)

    if other is None or share is None or cores is None:
        return {"verdict": "quiet", "reasons": ["the window was too short to measure"], "free_cores": free,
                "excess_cores": None, "thresholds": dict(th)}  # fmt: skip
    excess = other - free if free is not None else 0.0
    top = figures.get("top_processes") or []
    who = ""
    if top:
        first = top[0]
        who = f" (mostly {first.get('name', '?')} pid {first.get('pid', '?')}, {_cores(first['cores'])})"
    if free is None:
        where = f" of {cores:.0f}"
    elif excess > 0:
        where = f", {_cores(excess)} more than the {_cores(free)} the measurement left free"
    else:
        where = f" of {cores:.0f}, within the {_cores(free)} the measurement left free"
    usage = f"other processes used {_cores(other)} on average{where}{who}"
    if excess >= th["unusable_excess_cores"]:
        raise_to(2, usage)
    elif other >= th["busy_other_cores"] and (excess > 0 or share >= th["busy_other_share"]):
        raise_to(1, usage)

    steal = _num(figures.get("steal_share"))
    if steal is not None and steal >= th["busy_steal_share"]:
        raise_to(
            2 if steal >= th["unusable_steal_share"] else 1,
            f"the hypervisor gave {steal:.0%} of this VM's CPU time to other guests (steal)",
        )

    for dev in (figures.get("gpu") or {}).get("devices") or []:
        name = f"GPU {dev.get('index')} ({dev.get('name')})"
        others = dev.get("other_processes") or []
        if others and dev.get("used_by_measurement"):
            listed = ", ".join(f"{p.get('name', '?')} pid {p.get('pid')}" for p in others[:3])
            raise_to(1, f"{name} was shared with {len(others)} other process(es): {listed}")
        slow = dev.get("slowdowns") or []
        if slow and dev.get("used_by_measurement"):
            raise_to(1, f"{name} clocks were held down: {', '.join(slow)}")
    return {"verdict": LEVELS[level], "reasons": reasons, "free_cores": free, "excess_cores": excess,
            "thresholds": dict(th)}  # fmt: skip


def is_flagged(section: Mapping[str, Any] | None) -> bool:
    """True when a hygiene section says busy or unusable (what ``--strict`` refuses)."""
    return isinstance(section, Mapping) and section.get("verdict") in ("busy", "unusable")


def banner(section: Mapping[str, Any] | None) -> str | None:
    """The one prominent line for a busy or unusable run; None for a quiet one (or no section)."""
    if not is_flagged(section) or section is None:
        return None
    reasons = "; ".join(str(r) for r in section.get("reasons") or []) or "see the hygiene section"
    if section.get("verdict") == "unusable":
        tail = "speedups measured here are not usable — rerun on a quiet machine (specmeter doctor)"
    else:
        tail = "speedups are unreliable"
    return f"MACHINE {str(section.get('verdict')).upper()}: {reasons}; {tail}."
