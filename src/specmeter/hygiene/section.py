"""The ``hygiene`` section of a result: the sampler's figures, the verdict, and the data's own stability.

One call per measuring command, around the part that times things::

    watch = MachineWatch.start(threads=torch.get_num_threads())   # or MachineWatch.disabled()
    ...measure...
    section = watch.finish(stability={"draft@k=4": stability(base, spec)})
    result["hygiene"] = section

The layout is documented in docs/results.md ("hygiene"); the thresholds in docs/metrics.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specmeter.hygiene.sampler import DEFAULT_INTERVAL_S, MachineSampler
from specmeter.hygiene.stability import stability
from specmeter.hygiene.verdict import assess, banner
from specmeter.metrics.records import RequestRecord

__all__ = ["MachineWatch", "build_section", "stability_by_candidate"]


def build_section(
    figures: Mapping[str, Any], stability_of: Mapping[str, Mapping[str, Any] | None] | None = None
) -> dict[str, Any]:
    """Verdict + figures + per-candidate stability, as stored under ``hygiene`` in the result."""
    verdict = assess(figures)
    section: dict[str, Any] = {
        "verdict": verdict["verdict"],
        "reasons": verdict["reasons"],
        "message": None,
        "free_cores": verdict["free_cores"],
        "excess_cores": verdict["excess_cores"],
        "thresholds": verdict["thresholds"],
        "figures": dict(figures),
        "stability": {k: v for k, v in (stability_of or {}).items() if v is not None},
    }
    moved = [
        f"{label}: {s['note']}"
        for label, s in section["stability"].items()
        if s.get("machine_moved") or s.get("timing_noise")
    ]
    section["message"] = banner(section)
    section["unstable"] = moved
    return section


def stability_by_candidate(
    baseline: Sequence[RequestRecord], candidates: Mapping[str, Sequence[RequestRecord]]
) -> dict[str, dict[str, Any] | None]:
    return {label: stability(baseline, records) for label, records in candidates.items()}


class MachineWatch:
    """A sampler window that can also be switched off (``MeasureConfig.hygiene=False``, ``execute_load(...,
    hygiene=False)``: library use, no command-line flag) without changing the caller."""

    def __init__(self, sampler: MachineSampler | None) -> None:
        self._sampler = sampler

    @classmethod
    def start(
        cls,
        *,
        threads: int | None = None,
        extra_pids: tuple[int, ...] = (),
        interval_s: float = DEFAULT_INTERVAL_S,
        gpu: bool = True,
        nvml: Any | None = None,
    ) -> MachineWatch:
        sampler = MachineSampler(
            interval_s=interval_s, threads=threads, extra_pids=extra_pids, gpu=gpu, nvml=nvml
        )
        return cls(sampler.start())

    @classmethod
    def disabled(cls) -> MachineWatch:
        return cls(None)

    def add_pids(self, pids: Sequence[int]) -> None:
        if self._sampler is not None:
            self._sampler.add_pids(list(pids))

    def finish(
        self, stability_of: Mapping[str, Mapping[str, Any] | None] | None = None
    ) -> dict[str, Any] | None:
        """Stop sampling and build the section; None when the watch was disabled."""
        if self._sampler is None:
            return None
        return build_section(self._sampler.stop(), stability_of)
