"""Rolling windows: consecutive scrapes of one engine → one acceptance figure per window.

A window is the interval between two successful scrapes of the same target. Its figures come from counter
deltas (so they describe exactly that interval, whatever happened before) or, for servers that only export
gauges, from the gauge values at the window's end. A failed scrape produces an error window and keeps the
last good reading, so the next window spans the gap instead of losing it.

Beside acceptance, a window carries the server's queue (``adapters.queue_names``: requests running and
waiting) as the gauges read at the window's end. The monitor scrapes once per window, so that one value is
all a window has; it is not a mean over the window.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from specmeter.monitoring.acceptance import ServerAcceptance, acceptance_from_delta
from specmeter.monitoring.adapters import Reading, ServerKind, counter_delta, read_counters
from specmeter.monitoring.promtext import MetricsSnapshot

__all__ = ["AcceptanceFigures", "Window", "WindowTracker", "iso"]


def iso(wall_time: float) -> str:
    return datetime.fromtimestamp(wall_time, timezone.utc).isoformat(timespec="seconds")


class AcceptanceFigures:
    """α, τ and the number of drafts of a window (a scrape window, or a domain's), from its ``acceptance``."""

    acceptance: ServerAcceptance | None

    @property
    def alpha(self) -> float | None:
        return None if self.acceptance is None else self.acceptance.acceptance_rate

    @property
    def tau(self) -> float | None:
        return None if self.acceptance is None else self.acceptance.acceptance_length

    @property
    def drafts(self) -> int | None:
        return None if self.acceptance is None else self.acceptance.steps


@dataclass(frozen=True)
class Window(AcceptanceFigures):
    target: str
    kind: str
    t_start: float  # wall-clock seconds (epoch)
    t_end: float
    acceptance: ServerAcceptance | None = None
    error: str | None = None
    queue: Mapping[str, float] | None = None  # running / waiting at t_end; None: not exported or not read

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "kind": self.kind,
            "start": iso(self.t_start),
            "end": iso(self.t_end),
            "error": self.error,
            "queue": None if self.queue is None else {"at": "window_end", **self.queue},
            **(self.acceptance.as_dict() if self.acceptance is not None else {}),
        }


@dataclass
class WindowTracker:
    """Turns the scrapes of one target into windows; the server kind is fixed at the first scrape."""

    target: str
    kind: ServerKind | None = None
    k: int | None = None
    last: Reading | None = None
    last_error_time: float | None = None
    scrapes: int = 0
    errors: int = 0
    history: list[Window] = field(default_factory=list)

    def observe(self, snapshot: MetricsSnapshot, *, server_info_tau: float | None = None) -> Window | None:
        """Feed a successful scrape; returns the window it closes (None for the very first scrape)."""
        reading = read_counters(snapshot, self.kind, server_info_tau=server_info_tau)
        self.kind = reading.kind
        self.scrapes += 1
        previous, self.last = self.last, reading
        if previous is None:
            return None
        delta = counter_delta(previous, reading)
        acceptance = acceptance_from_delta(
            reading.kind, delta, reading.gauges, k=self.k or reading.positions or None
        )
        window = Window(
            self.target,
            reading.kind,
            previous.wall_time,
            reading.wall_time,
            acceptance,
            queue=dict(reading.queue) if reading.queue else None,
        )
        self.history.append(window)
        return window

    def failed(self, error: str, wall_time: float) -> Window:
        """Record a failed scrape as an error window (from the last good reading, or from now)."""
        self.errors += 1
        start = self.last.wall_time if self.last is not None else wall_time
        window = Window(self.target, self.kind or "unknown", start, wall_time, None, error)
        self.history.append(window)
        return window
