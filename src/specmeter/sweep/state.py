"""The state of one ``sweep`` as it runs: each configuration's stay on the machine (``ConfigRun``) and the
whole run so far (``SweepRun``). Plain data, no I/O: ``sweep.run`` fills it, ``sweep.result`` and
``sweep.search`` read it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from specmeter.load.client import RequestOutcome
from specmeter.load.config import Phase
from specmeter.load.level import RoleResult
from specmeter.sweep.config import ServerConfig

__all__ = ["END", "ConfigRun", "SweepAborted", "SweepRun", "none_completed"]

END = " (end)"  # the baseline's second run: "k=0 (end)"


class SweepAborted(RuntimeError):
    """The first baseline could not be measured: nothing to compare against. One line."""


def none_completed(outcomes: Sequence[RequestOutcome], where: str = "") -> str | None:
    """``none of the 8 requests completed{where} (first failure: HTTP 500 …)`` when requests were sent and
    not one completed; None when one did, or when none was sent."""
    if not outcomes or any(o.ok for o in outcomes):
        return None
    first = next((o.error for o in outcomes if o.error), None)
    return f"none of the {len(outcomes)} requests completed{where}" + (
        f" (first failure: {first})" if first else ""
    )


@dataclass
class ConfigRun:
    """One configuration's stay on the machine: its levels (by phase label, in order) and how it ended."""

    config: ServerConfig
    run: str  # "k=0", "k=4", "schedule", "k=0 (end)"
    phases: list[Phase] = field(default_factory=list)
    levels: dict[str, RoleResult] = field(default_factory=dict)
    search_levels: dict[str, RoleResult] = field(default_factory=dict)
    status: str = "pending"  # running, ok, failed, interrupted
    error: str | None = None
    url: str | None = None
    argv: list[str] | None = None
    log: str | None = None
    startup_s: float | None = None
    exit_code: int | None = None
    pid: int | None = None  # the launched server's process (its process group's id)
    started_at: float = 0.0  # seconds since the sweep began
    ended_at: float = 0.0
    capacity: Any = None  # sweep.capacity.CapacityResult, with --search

    def describe(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "k": self.config.k,
            "schedule": None if self.config.schedule is None else self.config.schedule.to_json(),
            "status": self.status,
            "error": self.error,
            "url": self.url,
            "launch": self.argv,
            "log": self.log,
            "startup_s": self.startup_s,
            "exit_code": self.exit_code,
            "pid": self.pid,
            "started_at_s": self.started_at,
            "ended_at_s": self.ended_at,
            "levels": list(self.levels),
        }

    def outcomes(self) -> list[RequestOutcome]:
        """Every request of its levels and its capacity search's, in order."""
        roles = [*self.levels.values(), *self.search_levels.values()]
        return [o for role in roles for o in role.outcomes]

    def measured(self) -> bool:
        """Whether at least one of its requests completed."""
        return any(o.ok for o in self.outcomes())


@dataclass
class SweepRun:
    """Everything measured so far, in the order it ran."""

    runs: list[ConfigRun] = field(default_factory=list)
    t0: float = field(default_factory=time.monotonic)

    def find(self, run: str) -> ConfigRun | None:
        return next((r for r in self.runs if r.run == run and r.levels), None)

    def measured(self) -> bool:
        """Whether any request of any run completed (else nothing was measured)."""
        return any(run.measured() for run in self.runs)
