"""What the server itself says: its model, its kind, and its /metrics counters around each block of load.

``resolve`` fills in an endpoint before anything is measured (its model from ``/v1/models``, its server
kind from ``/metrics``, the draft positions those metrics reveal). During a level, ``read`` scrapes the
endpoint before and after each block and ``ServerReadings.add`` keeps the counter deltas, so acceptance
under load comes from the server's own counters (``monitoring.adapters``). Scrape failures are kept as
notes, never fatal: a load test without server metrics still measures latency.

**The server's queue during a level.** Scrapes before and after a block see the server idle (no request
of the block has been sent yet, or every one has ended), so they say nothing about queueing. While a block
runs, :func:`sampling_queue` reads the queue gauges (``adapters.queue_names``: requests running, requests
waiting) every ``QUEUE_SAMPLE_S`` seconds, for server kinds that export them; the level's
``load.server_queue`` holds their mean and max over those samples (:meth:`ServerReadings.queue_summary`),
beside the client's ``effective_concurrency``. Only the lines of those two gauges are parsed, so a sample
costs the client little and the loop that stamps chunk arrivals is not held up by parsing a whole
exposition; the server answers one more /metrics request per sample (``--no-metrics`` turns it off).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from specmeter.load.client import AUTH_HINT, parse_json, printable
from specmeter.load.config import Endpoint, LoadConfig, LoadError, Role
from specmeter.monitoring.acceptance import ServerAcceptance, acceptance_from_delta
from specmeter.monitoring.adapters import (
    QUEUE_RUNNING,
    QUEUE_WAITING,
    CounterDelta,
    Reading,
    counter_delta,
    detect_kind,
    queue_names,
    read_counters,
    read_queue,
)
from specmeter.monitoring.monitor import sglang_server_info_tau
from specmeter.monitoring.promtext import ScrapeError, metrics_url, scrape

__all__ = ["QUEUE_SAMPLE_S", "ServerReadings", "endpoints_for", "read", "resolve", "sampling_queue"]

# Seconds between samples of the server's queue gauges during a block: twice a second sees a queue build
# up while adding far less to the server than the requests themselves (issue 19: the client's own load).
QUEUE_SAMPLE_S = 0.5
MODEL_LOOKUP_TIMEOUT = 10.0  # seconds for /v1/models to answer before the run stops (pass --model to skip it)


def endpoints_for(cfg: LoadConfig) -> list[Endpoint]:
    """The endpoints a run measures: the speculative one, then the baseline if there is one."""

    def endpoint(role: Role, url: str, metrics: str | None) -> Endpoint:
        base = Endpoint.base(url)
        return Endpoint(role, base, (metrics or metrics_url(base)) if cfg.scrape_metrics else None)

    out = [endpoint("speculative", cfg.endpoint, cfg.metrics_url)]
    if cfg.baseline:
        out.append(endpoint("baseline", cfg.baseline, cfg.baseline_metrics_url))
    return out


async def resolve(client: httpx.AsyncClient, ep: Endpoint, cfg: LoadConfig) -> None:
    """Fill in the endpoint's model and server kind; raises LoadError when it is unusable."""
    given = cfg.model if ep.role == "speculative" else cfg.baseline_model
    ep.model = given or await _first_model(client, ep, cfg.headers)
    ep.kind = cfg.server_kind or "unknown"
    if ep.metrics is None:
        ep.metrics_note = "not scraped (--no-metrics)"
        return
    try:
        snapshot = await scrape(client, ep.metrics)
    except ScrapeError as e:
        ep.metrics_note = str(e)
        return
    if cfg.server_kind is None:
        ep.kind = detect_kind(snapshot)
    reading = read_counters(snapshot, ep.kind)
    ep.positions = reading.positions
    if not reading.has_spec and ep.role == "speculative":
        ep.metrics_note = f"no speculative-decoding metrics in {ep.metrics} (kind {ep.kind})"


async def _first_model(client: httpx.AsyncClient, ep: Endpoint, headers: dict[str, str] | None) -> str:
    url = ep.url + "/v1/models"
    try:
        response = await client.get(url, headers=headers, timeout=MODEL_LOOKUP_TIMEOUT)
    except httpx.TimeoutException as e:  # its message is empty: say what happened
        raise LoadError(f"cannot reach {url}: timed out after {MODEL_LOOKUP_TIMEOUT:g} s") from e
    except httpx.HTTPError as e:
        raise LoadError(f"cannot reach {url}: {printable(str(e)) or type(e).__name__}") from e
    if response.status_code in (401, 403):
        refused = " (the key given was refused)" if headers else ""
        raise LoadError(f"{url} answered HTTP {response.status_code}{refused}: {AUTH_HINT}")
    if response.status_code != 200:
        raise LoadError(f"{url} answered HTTP {response.status_code}; pass --model to skip the lookup")
    try:
        data = parse_json(response.content)["data"]
        return printable(str(data[0]["id"]))
    except (ValueError, KeyError, IndexError, TypeError) as e:  # TooDeep (nesting) is a ValueError
        raise LoadError(f"{url} lists no model; pass --model") from e


@dataclass
class ServerReadings:
    """An endpoint's /metrics over one level: counter deltas summed over its blocks, the last gauges."""

    delta: dict[str, float] = field(default_factory=dict)
    resets: list[str] = field(default_factory=list)
    delta_seconds: float = 0.0
    gauges: dict[str, float] = field(default_factory=dict)
    positions: int = 0
    scrape_errors: list[str] = field(default_factory=list)
    queue: list[dict[str, float]] = field(default_factory=list)  # one per sample during the blocks
    queue_failed: int = 0  # samples whose scrape failed
    queue_interval_s: float = QUEUE_SAMPLE_S

    def add(self, before: Reading, after: Reading) -> None:
        d = counter_delta(before, after)
        for name, value in d.values.items():
            self.delta[name] = self.delta.get(name, 0.0) + value
        self.resets += [r for r in d.resets if r not in self.resets]
        self.delta_seconds += d.seconds
        self.gauges = dict(after.gauges)
        self.positions = max(self.positions, after.positions)

    def queue_summary(self, ep: Endpoint) -> dict[str, Any] | None:
        """The server's running and waiting requests over the level's samples: mean and max of each.

        None when nothing was sampled (``--no-metrics``, or a server kind without queue gauges); with
        samples but no gauge in them, the figures are None and ``note`` says so.
        """
        names = queue_names(ep.kind)
        if ep.metrics is None or not names or not (self.queue or self.queue_failed):
            return None
        block: dict[str, Any] = {
            "samples": len(self.queue),
            "failed_samples": self.queue_failed,
            "interval_s": self.queue_interval_s,
            "metrics": dict(names),
        }
        for key in (QUEUE_RUNNING, QUEUE_WAITING):
            values = [q[key] for q in self.queue if key in q]
            block[key] = {"mean": sum(values) / len(values), "max": max(values)} if values else None
        if self.queue and block[QUEUE_RUNNING] is None and block[QUEUE_WAITING] is None:
            block["note"] = f"no {' / '.join(names.values())} in {ep.metrics}"
        return block

    def acceptance(self, ep: Endpoint, k: int | None) -> ServerAcceptance | None:
        """Acceptance from the counter deltas; None when the endpoint was not or could not be scraped."""
        if ep.metrics is None or (not self.delta and not self.gauges and self.scrape_errors):
            return None
        delta = CounterDelta(self.delta, tuple(self.resets), self.delta_seconds)
        return acceptance_from_delta(ep.kind, delta, self.gauges, k=k or self.positions or None)


async def read(client: httpx.AsyncClient, ep: Endpoint, into: ServerReadings) -> Reading | None:
    """One scrape of the endpoint's counters; None (and a note in ``into``) when it cannot be read."""
    if ep.metrics is None:
        return None
    try:
        snapshot = await scrape(client, ep.metrics)
    except ScrapeError as e:
        into.scrape_errors.append(str(e))
        return None
    tau = await sglang_server_info_tau(client, ep.metrics) if ep.kind == "sglang" else None
    return read_counters(snapshot, ep.kind, server_info_tau=tau)


async def _queue_sample(client: httpx.AsyncClient, ep: Endpoint, names: tuple[str, ...]) -> dict[str, float]:
    """One sample of the queue gauges: only their lines of the exposition are parsed."""
    assert ep.metrics is not None
    return read_queue(await scrape(client, ep.metrics, timeout=5.0, only=names), ep.kind)


@asynccontextmanager
async def sampling_queue(
    client: httpx.AsyncClient, ep: Endpoint, into: ServerReadings, interval: float = QUEUE_SAMPLE_S
) -> AsyncIterator[None]:
    """Sample the endpoint's queue gauges into ``into.queue`` every ``interval`` s while the body runs.

    Nothing is sampled without metrics or for a kind without queue gauges. A failed sample is counted,
    never fatal; the sampler stops when the body ends (or is cancelled), whatever it was doing.
    """
    names = tuple(queue_names(ep.kind).values())
    if ep.metrics is None or not names:
        yield
        return
    into.queue_interval_s = interval

    async def loop() -> None:
        while True:
            # Wait first: at the block's start nothing has been sent yet, so a sample there is always idle.
            await asyncio.sleep(interval)
            try:
                into.queue.append(await _queue_sample(client, ep, names))
            except (ScrapeError, ValueError):
                into.queue_failed += 1

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
