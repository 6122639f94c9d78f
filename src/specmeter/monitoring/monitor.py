"""The monitor loop: scrape every target each interval, close a window per target, store, export, alert.

Scrapes of all targets run concurrently and ticks are aligned to the start time (tick n at t0 + n·interval),
so a slow scrape delays nothing but itself. ``once`` stops after every target closed one window (two
scrapes); ``duration`` stops after that many seconds; otherwise the loop runs until cancelled (Ctrl-C).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from specmeter import jsonsafe
from specmeter.monitoring.adapters import ServerKind
from specmeter.monitoring.alerts import AlertEvent, AlertRules, AlertSink, dispatch
from specmeter.monitoring.exporter import MonitorExporter
from specmeter.monitoring.promtext import ScrapeError, scrape
from specmeter.monitoring.store import HistoryStore
from specmeter.monitoring.windows import Window, WindowTracker

__all__ = ["Monitor", "MonitorConfig", "sglang_server_info_tau"]


async def sglang_server_info_tau(
    client: httpx.AsyncClient, metrics_url: str, timeout: float = 5.0
) -> float | None:
    """SGLang's ``internal_states[i].avg_spec_accept_length`` (mean over data-parallel ranks), if served.

    Newer SGLang serves ``/server_info``, older ``/get_server_info``; both are tried. Any failure is None:
    this is a second opinion, never a reason to fail a scrape.
    """
    base = metrics_url[: -len("/metrics")] if metrics_url.endswith("/metrics") else metrics_url.rstrip("/")
    for path in ("/get_server_info", "/server_info"):
        try:
            response = await client.get(base + path, timeout=timeout)
            if response.status_code != 200:
                continue
            states = jsonsafe.loads(response.content).get("internal_states")
        except (httpx.HTTPError, ValueError, AttributeError, RecursionError):
            continue
        values = [
            float(s["avg_spec_accept_length"])
            for s in states or []
            if isinstance(s, dict) and isinstance(s.get("avg_spec_accept_length"), int | float)
        ]
        if values:
            return sum(values) / len(values)
    return None


@dataclass
class MonitorConfig:
    targets: Sequence[str]  # /metrics URLs
    interval: float = 15.0
    kind: ServerKind | None = None  # None: detect per target
    k: int | None = None
    duration: float | None = None
    once: bool = False
    scrape_timeout: float = 10.0
    server_info: bool = True


@dataclass
class Monitor:
    config: MonitorConfig
    rules: AlertRules = field(default_factory=AlertRules)
    sinks: Sequence[AlertSink] = ()
    store: HistoryStore | None = None
    exporter: MonitorExporter | None = None
    on_window: Callable[[Window, WindowTracker], None] | None = None
    on_alert: Callable[[AlertEvent], None] | None = None
    trackers: dict[str, WindowTracker] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for url in self.config.targets:
            self.trackers[url] = WindowTracker(url, self.config.kind, self.config.k)

    async def _scrape_one(self, client: httpx.AsyncClient, url: str) -> None:
        tracker = self.trackers[url]
        try:
            snapshot = await scrape(client, url, timeout=self.config.scrape_timeout)
        except ScrapeError as e:
            window: Window | None = tracker.failed(str(e), time.time())
        else:
            tau = None
            if self.config.server_info and (tracker.kind or self.config.kind) == "sglang":
                tau = await sglang_server_info_tau(client, url, self.config.scrape_timeout)
            # With auto-detection the kind is unknown before the first scrape; that scrape only opens the
            # first window, so server info joins from the second one on.
            window = tracker.observe(snapshot, server_info_tau=tau)
        if window is not None:
            await self._publish(window, tracker)

    async def _publish(self, window: Window, tracker: WindowTracker) -> None:
        if self.store is not None:
            self.store.add_window(window)
        if self.exporter is not None:
            self.exporter.observe_window(window)
        if self.on_window is not None:
            self.on_window(window, tracker)
        for event in self.rules.evaluate(window):
            if self.store is not None:
                self.store.add_alert(event)
            if self.exporter is not None:
                self.exporter.observe_alert(event)
            if self.on_alert is not None:
                self.on_alert(event)
            await dispatch(event, self.sinks)

    async def tick(self, client: httpx.AsyncClient) -> None:
        """Scrape every target once (concurrently) and publish the windows this closes."""
        await asyncio.gather(*(self._scrape_one(client, url) for url in self.config.targets))

    def _done(self, started: float) -> bool:
        if self.config.once:
            return all(t.history for t in self.trackers.values())
        return self.config.duration is not None and time.monotonic() - started >= self.config.duration

    async def run(self, client: httpx.AsyncClient | None = None) -> None:
        own = client is None
        http = client or httpx.AsyncClient()
        try:
            started = time.monotonic()
            tick = 0
            while True:
                await self.tick(http)
                if self._done(started):
                    return
                tick += 1
                delay = started + tick * self.config.interval - time.monotonic()
                if self.config.duration is not None:
                    delay = min(delay, started + self.config.duration - time.monotonic())
                await asyncio.sleep(max(delay, 0.0))
        finally:
            if own:
                await http.aclose()

    def latest(self) -> dict[str, Any]:
        return {url: (t.history[-1].as_dict() if t.history else None) for url, t in self.trackers.items()}
