"""``monitor --requests``: follow per-request logs, close per-domain windows, store, export, alert.

Every ``poll`` seconds the log (a file, or a directory whose files grow and multiply) is read from where
the last poll stopped (:class:`~specmeter.monitoring.requestlog.LogTail`). Requests go to the window of
their own time stamp (or of the moment they were read, for logs without one); a window is closed and
published once the clock is ``grace`` seconds past its end, so lines written a little late still count.
``once`` reads what is there, closes every window and stops — the way to look back over a day of logs.

Published windows go through the same alert rules as the scrape monitor (one rule state per
``tenant/domain``: the legal tenant's α can collapse while the global rate looks fine), to the history
store (target ``tenant/domain``, kind ``requests``) and to the exporter.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from specmeter.monitoring.alerts import AlertEvent, AlertRules, AlertSink, dispatch
from specmeter.monitoring.domain_exporter import DomainExporter
from specmeter.monitoring.domains import DomainWindow, DomainWindows
from specmeter.monitoring.requestlog import LogTail, RequestObs
from specmeter.monitoring.store import HistoryStore

__all__ = ["RequestMonitor", "RequestMonitorConfig"]


@dataclass(frozen=True)
class RequestMonitorConfig:
    path: Path
    window: float  # seconds
    fields: dict[str, str] = field(default_factory=dict)
    once: bool = False
    duration: float | None = None
    poll: float = 1.0
    grace: float = 5.0
    seed: int = 0


@dataclass
class RequestMonitor:
    config: RequestMonitorConfig
    rules: AlertRules = field(default_factory=AlertRules)
    sinks: Sequence[AlertSink] = ()
    store: HistoryStore | None = None
    exporter: DomainExporter | None = None
    on_window: Callable[[DomainWindow], None] | None = None
    on_problem: Callable[[str], None] | None = None
    clock: Callable[[], float] = time.time
    published: list[DomainWindow] = field(default_factory=list)
    events: list[AlertEvent] = field(default_factory=list)
    problems: int = 0

    def __post_init__(self) -> None:
        self.tail = LogTail(self.config.path, self.config.fields)
        self.windows = DomainWindows(self.config.window, seed=self.config.seed)

    def _take(self, found: tuple[list[RequestObs], list[str]], now: float) -> None:
        observations, problems = found
        self.windows.add(observations, now)
        self.problems += len(problems)
        for p in problems:
            if self.exporter is not None:
                self.exporter.bad_lines.inc()
            if self.on_problem is not None:
                self.on_problem(p)

    async def _publish(self, windows: list[DomainWindow]) -> None:
        for w in windows:
            self.published.append(w)
            if self.store is not None:
                self.store.add_window(w.as_window())
            if self.exporter is not None:
                self.exporter.observe(w)
            if self.on_window is not None:
                self.on_window(w)
            for event in self.rules.evaluate(w.as_window()):
                self.events.append(event)
                if self.store is not None:
                    self.store.add_alert(event)
                if self.exporter is not None:
                    self.exporter.observe_alert(event, w.domain, w.tenant)
                await dispatch(event, self.sinks)

    async def step(self) -> list[DomainWindow]:
        """One poll: read what is new, close the windows the clock has passed (by ``grace``), publish."""
        now = self.clock()
        self._take(self.tail.poll(), now)
        closed = self.windows.close(until=now - self.config.grace)
        await self._publish(closed)
        return closed

    async def finish(self) -> list[DomainWindow]:
        """Read the rest (a last line without newline too), close every window, publish."""
        now = self.clock()
        self._take(self.tail.poll(), now)
        self._take(self.tail.flush(), now)
        closed = self.windows.close()
        await self._publish(closed)
        return closed

    async def run(self) -> None:
        if self.config.once:
            await self.finish()
            return
        started = time.monotonic()
        try:
            while self.config.duration is None or time.monotonic() - started < self.config.duration:
                await self.step()
                await asyncio.sleep(self.config.poll)
        finally:
            await self.finish()
