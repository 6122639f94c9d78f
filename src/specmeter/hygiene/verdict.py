"""The verdict on the machine during a run — quiet, busy or unusable — with the figures and thresholds.

The thresholds are documented in docs/metrics.md ("Measurement hygiene"); this module is their one owner.
Definitions, with ``other`` the mean CPU cores other processes used over the window, ``cores`` the logical
CPUs and ``free`` = cores − the measurement's threads (the cores it leaves to others; when the thread count
is unknown, cores − the cores it was measured to use):

- **unusable** when other ≥ 0.5 core *and* other > free (others ran on the cores the measurement needs:
  at least half a core of its time was taken), or other ≥ half of all cores, or steal ≥ 10 %.
- **busy** when other ≥ 0.10 core *and* (other > free or other ≥ 5 % of all cores), or steal ≥ 2 %, or
  another process held a context on an accelerator the measurement used, or an accelerator's clocks were
  slowed by heat or power.
- **quiet** otherwise.

Why these: a speculative step is k small draft forwards and one verification, so a stolen core hurts it more
than the baseline's evenly spaced forwards — interleaving does not cancel contention. Measured on the
bundled legal pair (2 cores): 1.69× quiet, 0.75× with one CPU-bound process beside it (other ≈ 1 core).
0.10 core is above the background of an idle Linux host (0.01-0.05 core: kernel threads, the shell) and well
below any second job; 5 % of the cores scales that to large hosts, where a few busy cores leave the
measurement's own cores alone but still share memory bandwidth, which decode is bound by.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["EXIT_NOISY_MACHINE", "LEVELS", "THRESHOLDS", "Level", "assess", "banner", "is_flagged"]

Level = Literal["quiet", "busy", "unusable"]
LEVELS: tuple[Level, ...] = ("quiet", "busy", "unusable")

# docs/metrics.md "Measurement hygiene" lists these; change both together.
THRESHOLDS: dict[str, float] = {
    "busy_other_cores": 0.10,
    "busy_other_share": 0.05,
    "unusable_other_cores": 0.5,
    "unusable_other_share": 0.5,
    "busy_steal_share": 0.02,
    "unusable_steal_share": 0.10,
}

# A measuring command run with --strict exits with this when the machine was busy or unusable (its results
# are still written). Distinct from 1 (compare: regression), 2 (usage), 3 (compat: cannot check), 130.
EXIT_NOISY_MACHINE = 4


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

    Returns ``{"verdict", "reasons", "free_cores", "thresholds"}``; reasons are plain sentences with the
    figures. A window that measured nothing (zero duration) is ``quiet`` with a reason saying so.
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
                "thresholds": dict(th)}  # fmt: skip
    contended = free is not None and other > free
    top = figures.get("top_processes") or []
    who = ""
    if top:
        first = top[0]
        who = f" (mostly {first.get('name', '?')} pid {first.get('pid', '?')}, {_cores(first['cores'])})"
    where = (
        f"on the cores the measurement needs ({_cores(free)} were free)"
        if contended and free is not None
        else f"of {cores:.0f}"
    )
    usage = f"other processes used {_cores(other)} on average {where}{who}"
    if (other >= th["unusable_other_cores"] and contended) or share >= th["unusable_other_share"]:
        raise_to(2, usage)
    elif other >= th["busy_other_cores"] and (contended or share >= th["busy_other_share"]):
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
    return {"verdict": LEVELS[level], "reasons": reasons, "free_cores": free, "thresholds": dict(th)}


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
