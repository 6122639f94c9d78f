"""The load generator: the same workload against a speculative endpoint and (optionally) a baseline one.

A *phase* is one load level: a fixed concurrency (closed loop: N workers, each sends its next request when
the previous one finishes) or a fixed request rate (open loop: Poisson or evenly spaced arrivals, whatever
the server's pace). A sweep runs one phase per level. Within a phase the work is cut into blocks that
alternate between the endpoints (A B, B A, A B, …) so that drift of the machines — thermal, other tenants —
hits both alike, which is what makes E_meas per level honest.

Around every block each endpoint's ``/metrics`` is scraped and the counter deltas kept, so acceptance under
load comes from the server's own counters (``monitoring.adapters``); per-request reports (vLLM's
``metrics.speculative_decoding``, llama.cpp's ``timings``) are collected too. Outcomes are handed to a
callback as each request ends, so an interrupted run keeps every finished request.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, Literal

import httpx

from specmeter.monitoring.acceptance import ServerAcceptance, acceptance_from_delta, acceptance_from_requests
from specmeter.monitoring.adapters import (
    CounterDelta,
    Reading,
    ServerKind,
    counter_delta,
    detect_kind,
    read_counters,
)
from specmeter.monitoring.monitor import sglang_server_info_tau
from specmeter.monitoring.promtext import ScrapeError, metrics_url, scrape
from specmeter.serving.client import ClientShards, RequestOutcome, StreamRequest, stream_request
from specmeter.workloads.loader import Prompt
from specmeter.workloads.render import plain_chat_text

__all__ = ["Endpoint", "LoadConfig", "LoadError", "LoadRunner", "Phase", "PhaseResult", "RoleResult"]

Role = Literal["speculative", "baseline"]
OPEN_LOOP_SLOTS = 256  # rate mode spreads its requests over this many pooled slots (see ClientShards)


class LoadError(RuntimeError):
    """A problem that stops the run before it measures anything (unreachable endpoint, no model)."""


@dataclass
class Endpoint:
    role: Role
    url: str  # base URL, without /v1
    metrics: str | None  # /metrics URL, None = do not scrape
    model: str | None = None
    kind: ServerKind = "unknown"
    positions: int = 0  # draft positions the server's metrics reveal (k), 0 = unknown
    metrics_note: str | None = None  # why server metrics are missing, if they are

    @staticmethod
    def base(url: str) -> str:
        url = url.rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url


@dataclass(frozen=True)
class Phase:
    concurrency: int | None = None
    rate: float | None = None

    @property
    def label(self) -> str:
        return f"c={self.concurrency}" if self.concurrency is not None else f"rate={self.rate:g}/s"


@dataclass
class LoadConfig:
    endpoint: str
    prompts: Sequence[Prompt]
    baseline: str | None = None
    phases: Sequence[Phase] = (Phase(concurrency=1),)
    arrival: Literal["poisson", "constant"] = "poisson"
    limit: int | None = None  # requests per phase and endpoint (default: one pass over the prompts)
    duration: float | None = None  # seconds per phase and endpoint, instead of a request count
    warmup: int = 2
    max_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    api: Literal["auto", "completions", "chat"] = "auto"
    model: str | None = None
    baseline_model: str | None = None
    api_key: str | None = None
    k: int | None = None
    server_kind: ServerKind | None = None  # None: detect from /metrics
    metrics_url: str | None = None
    baseline_metrics_url: str | None = None
    scrape_metrics: bool = True
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    stall_timeout: float = 60.0
    request_timeout: float | None = None
    blocks: int | None = None  # alternation blocks per phase; None = automatic


@dataclass
class RoleResult:
    endpoint: Endpoint
    outcomes: list[RequestOutcome] = field(default_factory=list)
    wall_s: float = 0.0
    delta: dict[str, float] = field(default_factory=dict)
    resets: list[str] = field(default_factory=list)
    delta_seconds: float = 0.0
    gauges: dict[str, float] = field(default_factory=dict)
    positions: int = 0
    scrape_errors: list[str] = field(default_factory=list)

    def add_delta(self, d: CounterDelta, after: Reading) -> None:
        for name, value in d.values.items():
            self.delta[name] = self.delta.get(name, 0.0) + value
        self.resets += [r for r in d.resets if r not in self.resets]
        self.delta_seconds += d.seconds
        self.gauges = dict(after.gauges)
        self.positions = max(self.positions, after.positions)

    def metrics_acceptance(self, k: int | None) -> ServerAcceptance | None:
        if self.endpoint.metrics is None or (not self.delta and not self.gauges and self.scrape_errors):
            return None
        delta = CounterDelta(self.delta, tuple(self.resets), self.delta_seconds)
        return acceptance_from_delta(self.endpoint.kind, delta, self.gauges, k=k or self.positions or None)

    def request_acceptance(self, k: int | None) -> ServerAcceptance | None:
        return acceptance_from_requests((o.server_spec for o in self.outcomes if o.server_spec), k=k)


@dataclass
class PhaseResult:
    phase: Phase
    roles: dict[str, RoleResult]
    complete: bool = True


# Which request fields make each server kind report tokens per chunk (see serving.client).
_EXTRAS: dict[str, dict[str, Any]] = {
    "vllm": {"continuous_usage_stats": True, "return_token_ids": True},
    "sglang": {"continuous_usage_stats": True},
    "llamacpp": {"timings_per_token": True},
}


class LoadRunner:
    def __init__(
        self,
        config: LoadConfig,
        client: httpx.AsyncClient,
        on_outcome: Callable[[Phase, Role, RequestOutcome], None] | None = None,
    ) -> None:
        self.cfg, self.client, self.on_outcome = config, client, on_outcome
        # Streams go through small sharded pools (see ClientShards); `client` serves lookups and scrapes.
        self.streams = ClientShards()
        self.headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else None
        self.endpoints: list[Endpoint] = [self._endpoint("speculative", config.endpoint, config.metrics_url)]
        if config.baseline:
            self.endpoints.append(self._endpoint("baseline", config.baseline, config.baseline_metrics_url))
        self._rng = random.Random(config.seed)

    def _endpoint(self, role: Role, url: str, metrics: str | None) -> Endpoint:
        base = Endpoint.base(url)
        scrape_url = (metrics or metrics_url(base)) if self.cfg.scrape_metrics else None
        return Endpoint(role, base, scrape_url)

    # ------------------------------------------------------------------------------------- preparation

    async def prepare(self) -> None:
        """Resolve each endpoint's model and server kind; raises LoadError when an endpoint is unusable."""
        for ep in self.endpoints:
            given = self.cfg.model if ep.role == "speculative" else self.cfg.baseline_model
            ep.model = given or await self._first_model(ep)
            ep.kind = self.cfg.server_kind or "unknown"
            if ep.metrics is None:
                ep.metrics_note = "not scraped (--no-metrics)"
                continue
            try:
                snapshot = await scrape(self.client, ep.metrics)
            except ScrapeError as e:
                ep.metrics_note = str(e)
                continue
            if self.cfg.server_kind is None:
                ep.kind = detect_kind(snapshot)
            reading = read_counters(snapshot, ep.kind)
            ep.positions = reading.positions
            if not reading.has_spec and ep.role == "speculative":
                ep.metrics_note = f"no speculative-decoding metrics in {ep.metrics} (kind {ep.kind})"

    async def _first_model(self, ep: Endpoint) -> str:
        url = ep.url + "/v1/models"
        try:
            response = await self.client.get(url, headers=self.headers, timeout=10.0)
        except httpx.HTTPError as e:
            raise LoadError(f"cannot reach {url}: {e or type(e).__name__}") from e
        if response.status_code != 200:
            raise LoadError(f"{url} answered HTTP {response.status_code}; pass --model to skip the lookup")
        try:
            data = response.json()["data"]
            return str(data[0]["id"])
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise LoadError(f"{url} lists no model; pass --model") from e

    # -------------------------------------------------------------------------------------- requests

    def request(self, ep: Endpoint, index: int) -> StreamRequest:
        cfg = self.cfg
        prompt = cfg.prompts[index % len(cfg.prompts)]
        chat = prompt.is_chat if cfg.api == "auto" else cfg.api == "chat"
        payload: dict[str, Any] = {"model": ep.model}
        if chat:
            messages = prompt.messages or ()
            payload["messages"] = (
                [m.as_dict() for m in messages] if messages else [{"role": "user", "content": prompt.text}]
            )
        else:
            payload["prompt"] = (
                prompt.text if prompt.text is not None else plain_chat_text(prompt.messages or ())
            )
        payload.update(
            max_tokens=prompt.max_tokens or cfg.max_tokens,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            seed=cfg.seed + index,
            stream=True,
            stream_options={"include_usage": True},
        )
        extras = dict(_EXTRAS.get(ep.kind, {}))
        if extras.pop("continuous_usage_stats", False):
            payload["stream_options"]["continuous_usage_stats"] = True
        payload.update(extras)
        payload.update(cfg.extra_body)
        path = "/v1/chat/completions" if chat else "/v1/completions"
        return StreamRequest(prompt.id, prompt.category, ep.url + path, payload)

    async def aclose(self) -> None:
        await self.streams.aclose()

    async def _one(
        self, phase: Phase | None, ep: Endpoint, index: int, into: RoleResult | None, slot: int
    ) -> None:
        outcome = await stream_request(
            self.streams.get(slot),
            self.request(ep, index),
            headers=self.headers,
            stall_timeout=self.cfg.stall_timeout,
            total_timeout=self.cfg.request_timeout,
        )
        if into is not None and phase is not None:
            into.outcomes.append(outcome)
            if self.on_outcome is not None:
                self.on_outcome(phase, ep.role, outcome)

    async def _closed(
        self,
        phase: Phase,
        ep: Endpoint,
        work: Iterator[int],
        c: int,
        deadline: float | None,
        into: RoleResult | None,
    ) -> None:
        async def worker(slot: int) -> None:
            for index in work:
                if deadline is not None and perf_counter() >= deadline:
                    return
                await self._one(phase, ep, index, into, slot)

        await asyncio.gather(*(worker(slot) for slot in range(c)))

    async def _open(
        self,
        phase: Phase,
        ep: Endpoint,
        work: Iterator[int],
        rate: float,
        deadline: float | None,
        into: RoleResult,
    ) -> None:
        tasks: set[asyncio.Task[None]] = set()
        next_at = perf_counter()
        try:
            for index in work:
                if deadline is not None and next_at >= deadline:
                    break
                await asyncio.sleep(max(next_at - perf_counter(), 0.0))
                task = asyncio.create_task(self._one(phase, ep, index, into, index % OPEN_LOOP_SLOTS))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                gap = self._rng.expovariate(rate) if self.cfg.arrival == "poisson" else 1.0 / rate
                next_at += gap
            await asyncio.gather(*list(tasks))
        finally:
            for task in tasks:
                task.cancel()

    async def warmup(self) -> None:
        """A few requests per endpoint before measuring: first requests pay for allocation and caches."""
        for ep in self.endpoints:
            if self.cfg.warmup > 0:
                await self._closed(
                    Phase(), ep, iter(range(self.cfg.warmup)), min(self.cfg.warmup, 4), None, None
                )

    # ---------------------------------------------------------------------------------------- phases

    async def _read(self, ep: Endpoint, into: RoleResult) -> Reading | None:
        if ep.metrics is None:
            return None
        try:
            snapshot = await scrape(self.client, ep.metrics)
        except ScrapeError as e:
            into.scrape_errors.append(str(e))
            return None
        tau = await sglang_server_info_tau(self.client, ep.metrics) if ep.kind == "sglang" else None
        return read_counters(snapshot, ep.kind, server_info_tau=tau)

    def _blocks(self, phase: Phase, requests: int | None) -> int:
        if self.cfg.blocks is not None:
            return max(1, self.cfg.blocks)
        if len(self.endpoints) == 1:
            return 1
        if requests is None:
            return 4
        per_block = 2 * (phase.concurrency or 2)  # blocks much shorter than this never reach the load level
        return max(1, min(4, requests // per_block))

    async def run_phase(self, phase: Phase, result: PhaseResult) -> None:
        """Run one load level into ``result`` (already registered by the caller, so partial work is kept)."""
        cfg = self.cfg
        total = None if cfg.duration is not None else (cfg.limit or len(cfg.prompts))
        blocks = self._blocks(phase, total)
        self.streams.prepare(phase.concurrency or OPEN_LOOP_SLOTS)
        cursors = {ep.role: itertools.count() for ep in self.endpoints}
        for b in range(blocks):
            order = self.endpoints if b % 2 == 0 else list(reversed(self.endpoints))
            for ep in order:
                role = result.roles[ep.role]
                if total is not None:
                    start, stop = b * total // blocks, (b + 1) * total // blocks
                    work: Iterator[int] = iter(range(start, stop))
                    deadline = None
                else:
                    work = cursors[ep.role]
                    deadline = perf_counter() + (cfg.duration or 0.0) / blocks
                before = await self._read(ep, role)
                t0 = perf_counter()
                try:
                    if phase.rate is not None:
                        await self._open(phase, ep, work, phase.rate, deadline, role)
                    else:
                        await self._closed(phase, ep, work, phase.concurrency or 1, deadline, role)
                finally:
                    role.wall_s += perf_counter() - t0
                after = await self._read(ep, role)
                if before is not None and after is not None:
                    role.add_delta(counter_delta(before, after), after)

    def new_phase(self, phase: Phase) -> PhaseResult:
        return PhaseResult(phase, {ep.role: RoleResult(ep) for ep in self.endpoints}, complete=False)
