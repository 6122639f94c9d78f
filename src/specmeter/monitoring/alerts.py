"""Alert rules over windows, and where alerts go (console, JSONL file, webhook).

Two rules, per target:

- ``alpha_low``: α below a threshold for N consecutive windows. Windows without drafts (no traffic, a
  failed scrape) are not evidence either way, so they neither extend nor break the streak.
- ``tau_drop``: τ more than X % below a baseline τ — a fixed value, or the first window that had enough
  drafts. This is the field report's failure: the draft still "works", but each verification buys less.

An alert fires once when its condition starts to hold and resolves once when it stops, so a sink sees
transitions, not a message every window.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, Protocol

import httpx

from specmeter.monitoring.windows import Window, iso
from specmeter.report.outfile import FORMATS, open_for_writing

__all__ = [
    "AlertEvent",
    "AlertRules",
    "AlertSink",
    "ConsoleSink",
    "JsonlSink",
    "WebhookSink",
    "alert_sinks",
    "dispatch",
]

State = Literal["firing", "resolved"]


@dataclass(frozen=True)
class AlertEvent:
    time: str
    target: str
    rule: str
    state: State
    value: float | None
    threshold: float | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _TargetState:
    streak: int = 0
    tau_baseline: float | None = None
    active: set[str] = field(default_factory=set)


@dataclass
class AlertRules:
    """Evaluates both rules window by window and returns the transitions."""

    alpha_threshold: float | None = 0.5
    alpha_windows: int = 3
    tau_drop_pct: float | None = 20.0
    tau_baseline: float | None = None  # None: the first window with at least `min_drafts` drafts
    min_drafts: int = 1
    _state: dict[str, _TargetState] = field(default_factory=dict)

    def active(self, target: str) -> set[str]:
        return set(self._state.get(target, _TargetState()).active)

    def evaluate(self, window: Window) -> list[AlertEvent]:
        st = self._state.setdefault(window.target, _TargetState(tau_baseline=self.tau_baseline))
        events: list[AlertEvent] = []
        drafts = window.drafts
        informative = window.error is None and (drafts is None or drafts >= self.min_drafts)
        alpha, tau = window.alpha, window.tau
        when = iso(window.t_end)

        if self.alpha_threshold is not None and informative and alpha is not None:
            limit = self.alpha_threshold
            st.streak = st.streak + 1 if alpha < limit else 0
            firing = st.streak >= self.alpha_windows
            message = (
                f"α = {alpha:.3f} below {limit:.2f} for {st.streak} consecutive windows"
                if firing
                else f"α = {alpha:.3f} back at or above {limit:.2f}"
            )
            events += self._transition(st, window.target, "alpha_low", firing, when, alpha, limit, message)

        if self.tau_drop_pct is not None and informative and tau is not None:
            if st.tau_baseline is None:
                st.tau_baseline = tau
            else:
                base = st.tau_baseline
                floor = base * (1.0 - self.tau_drop_pct / 100.0)
                firing = tau < floor
                drop = 100.0 * (1.0 - tau / base) if base else 0.0
                message = (
                    f"τ = {tau:.3f} is {drop:.0f}% below the baseline {base:.3f} "
                    f"(limit {self.tau_drop_pct:g}%)"
                    if firing
                    else f"τ = {tau:.3f} recovered (baseline {base:.3f})"
                )
                events += self._transition(st, window.target, "tau_drop", firing, when, tau, floor, message)
        return events

    @staticmethod
    def _transition(
        st: _TargetState,
        target: str,
        rule: str,
        firing: bool,
        when: str,
        value: float,
        threshold: float,
        message: str,
    ) -> list[AlertEvent]:
        if firing and rule not in st.active:
            st.active.add(rule)
            return [AlertEvent(when, target, rule, "firing", value, threshold, message)]
        if not firing and rule in st.active:
            st.active.discard(rule)
            return [AlertEvent(when, target, rule, "resolved", value, threshold, message)]
        return []


class AlertSink(Protocol):
    async def send(self, event: AlertEvent) -> None: ...


class ConsoleSink:
    def __init__(self, printer: Callable[[str], None]) -> None:
        self._print = printer

    async def send(self, event: AlertEvent) -> None:
        mark = "ALERT" if event.state == "firing" else "resolved"
        self._print(f"[{event.time}] {mark} {event.rule} on {event.target}: {event.message}")


class JsonlSink:
    """One JSON object per alert transition, flushed at once (the file survives a crash)."""

    def __init__(self, path: Path) -> None:
        # Appended to, never through a link or into someone else's file (report.outfile).
        self._fh: IO[str] = open_for_writing(path, FORMATS["alerts"], append=True, buffering=1)

    async def send(self, event: AlertEvent) -> None:
        self._fh.write(json.dumps(event.as_dict(), ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


class WebhookSink:
    """POSTs each alert as JSON; a failing webhook is reported via ``on_error``, never stops the monitor."""

    def __init__(
        self, url: str, client: httpx.AsyncClient, on_error: Callable[[str], None], timeout: float = 5.0
    ) -> None:
        self.url, self._client, self._on_error, self._timeout = url, client, on_error, timeout
        self.delivered = 0

    async def send(self, event: AlertEvent) -> None:
        try:
            response = await self._client.post(self.url, json=event.as_dict(), timeout=self._timeout)
        except httpx.HTTPError as e:
            self._on_error(f"webhook {self.url} failed: {type(e).__name__}: {e}")
            return
        if response.status_code >= 300:
            self._on_error(f"webhook {self.url} answered HTTP {response.status_code}")
        else:
            self.delivered += 1


@contextlib.asynccontextmanager
async def alert_sinks(
    say: Callable[[str], None], alerts_log: Path | None, webhook: str | None
) -> AsyncIterator[tuple[httpx.AsyncClient, list[AlertSink]]]:
    """The monitor's sinks — the console (``say``), ``--alerts-log``, ``--webhook`` — with the HTTP client
    they share; the JSONL file is closed on the way out."""
    jsonl = JsonlSink(alerts_log) if alerts_log is not None else None
    try:
        async with httpx.AsyncClient() as client:
            sinks: list[AlertSink] = [ConsoleSink(say)]
            if jsonl is not None:
                sinks.append(jsonl)
            if webhook is not None:
                sinks.append(WebhookSink(webhook, client, on_error=lambda m: say(f"warning: {m}")))
            yield client, sinks
    finally:
        if jsonl is not None:
            jsonl.close()


async def dispatch(event: AlertEvent, sinks: Sequence[AlertSink]) -> None:
    for sink in sinks:
        await sink.send(event)
