"""One load level: the request loop against an endpoint, with the server's readings around it.

A level (``Phase``) is a fixed concurrency or a fixed request rate. ``LevelRunner.run_level`` runs one
level against one endpoint and returns its records and server readings (``RoleResult``) — the unit a sweep
over server configurations repeats. ``run_phase`` runs one level against the speculative endpoint and its
baseline: the work is cut into blocks that alternate between the endpoints (A B, B A, A B, …) so that drift
of the machines — thermal, other tenants — hits both alike, which is what makes E_meas per level honest.

Before a level is measured, each endpoint is warmed at that level's own load (``LevelRunner.warm_level``,
sized by ``LoadConfig.level_warmup``): the first batch of that size a server meets costs more, and it must
fall outside the measurement. Warm-up requests are counted apart and never recorded.

Around every block the endpoint's ``/metrics`` is read (``load.readings``); per-request reports (vLLM's
``metrics.speculative_decoding``, llama.cpp's ``timings``) arrive with the outcomes. Outcomes are appended
to the level's result and handed to a callback the moment each request ends, so an interrupted run keeps
every finished request.
"""

from __future__ import annotations

import itertools
import random
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from time import perf_counter, process_time

import httpx

from specmeter.load.arrivals import arrival_gaps
from specmeter.load.client import RequestOutcome, StreamState
from specmeter.load.config import Endpoint, LoadConfig, Phase, Role
from specmeter.load.limits import client_cores
from specmeter.load.loop import OPEN_LOOP_SLOTS, Streams, closed_loop, open_loop
from specmeter.load.messages_stream import MessagesStream
from specmeter.load.readings import ServerReadings, read, sampling_queue
from specmeter.load.requests import build_request, prompt_of
from specmeter.load.trace import trace_gaps
from specmeter.load.workers import WorkerStreams
from specmeter.monitoring.acceptance import ServerAcceptance, acceptance_from_requests

__all__ = ["LevelRunner", "OnRequest", "PhaseResult", "RoleResult", "new_phase"]

OnRequest = Callable[[Phase, Role, RequestOutcome], None]
WARMUP_CONCURRENCY = 4


@dataclass
class RoleResult:
    """One endpoint's share of a level: the records of its requests and the server's readings."""

    endpoint: Endpoint
    outcomes: list[RequestOutcome] = field(default_factory=list)
    wall_s: float = 0.0
    readings: ServerReadings = field(default_factory=ServerReadings)
    client_cpu_s: float = 0.0  # the client's CPU time (workers included) during the level's blocks
    # The same per process (this one first, then each worker): how busy the busiest one was (load.result).
    client_cpu_by_process: list[float] = field(default_factory=list)
    client_processes: int = 1  # processes that read the streams (1: this one; N > 1: N workers)
    warmup_requests: int = 0  # unrecorded requests sent at the level's load just before it (warm_level)
    warmup_failed: int = 0  # of which failed
    warmup_s: float = 0.0  # their wall time, outside ``wall_s``

    def metrics_acceptance(self, k: int | None) -> ServerAcceptance | None:
        return self.readings.acceptance(self.endpoint, k)

    def request_acceptance(self, k: int | None) -> ServerAcceptance | None:
        return acceptance_from_requests((o.server_spec for o in self.outcomes if o.server_spec), k=k)


@dataclass
class PhaseResult:
    phase: Phase
    roles: dict[str, RoleResult]
    complete: bool = True


class LevelRunner:
    """Runs load levels against resolved endpoints (``load.readings.resolve``) with one set of streams."""

    def __init__(self, config: LoadConfig, client: httpx.AsyncClient, streams: int | None = None) -> None:
        """``streams``: the most streams a level beyond ``config.phases`` may hold (a sweep's concurrency
        search), counted by ``--client-processes auto``."""
        self.cfg = config
        self.client = client  # scrapes; streams go through their own sharded pools
        self._latency: dict[str, float] = {}  # by endpoint URL: its latest median latency, s (_note_latency)
        headers, stall, total = config.headers, config.stall_timeout, config.request_timeout
        state_type = MessagesStream if config.api == "messages" else StreamState
        # One process reads every stream, or N worker processes stamp on their own loops (loadworkers);
        # --client-processes auto picks N from the busiest level's streams and the cores.
        self.client_processes = config.client_process_count(client_cores(), streams)
        self.streams: Streams | WorkerStreams = (
            WorkerStreams(
                self.client_processes,
                headers=headers,
                stall_timeout=stall,
                request_timeout=total,
                state_type=state_type,
            )
            if self.client_processes > 1
            else Streams(headers=headers, stall_timeout=stall, request_timeout=total, state_type=state_type)
        )

    async def start(self) -> None:
        """Start the client's worker processes, if any, before anything is measured."""
        await self.streams.start()

    async def aclose(self) -> None:
        await self.streams.aclose()

    async def warmup(self, ep: Endpoint) -> None:
        """A few unrecorded requests once per server: first requests pay for allocation and caches."""
        self._latency.pop(ep.url, None)  # a new server (a sweep's next configuration may reuse the port)
        if self.cfg.warmup > 0:
            outcomes: list[RequestOutcome] = []
            await closed_loop(
                lambda index, slot: self.streams.send(build_request(self.cfg, ep, index, warmup=True), slot),
                iter(range(self.cfg.warmup)),
                min(self.cfg.warmup, WARMUP_CONCURRENCY),
                on_outcome=outcomes.append,
            )
            self._note_latency(ep, outcomes)

    async def warm_level(self, phase: Phase, ep: Endpoint, into: RoleResult) -> None:
        """Unrecorded requests at the level's own load just before it (``LoadConfig.level_warmup`` of them),
        so the first batch of that size the server sees falls outside the measurement: a concurrency level
        sends them through its own N slots at once (closed loop), an open-loop level at its rate with even
        gaps. Counted in ``into`` (``warmup_requests``, ``warmup_failed``, ``warmup_s``), never recorded: no
        outcome reaches the level's records, files or summaries."""
        count = self.cfg.level_warmup(phase, self._latency.get(ep.url))
        if count <= 0:
            return
        outcomes: list[RequestOutcome] = []

        async def send(index: int, slot: int) -> RequestOutcome:
            return await self.streams.send(build_request(self.cfg, ep, index, warmup=True), slot)

        t0 = perf_counter()
        try:
            if phase.concurrency is not None:
                await closed_loop(send, iter(range(count)), phase.concurrency, None, outcomes.append)
            else:
                rate = self.cfg.offered_rate(phase)
                gaps = itertools.repeat(1.0 / rate if rate else 0.0)
                await open_loop(send, iter(range(count)), gaps, None, outcomes.append)
        finally:
            into.warmup_requests += len(outcomes)
            into.warmup_failed += sum(1 for o in outcomes if not o.ok)
            into.warmup_s += perf_counter() - t0
        self._note_latency(ep, outcomes)

    def _note_latency(self, ep: Endpoint, outcomes: Sequence[RequestOutcome]) -> None:
        """The endpoint's latest latency (the median of these completed requests): sizes a rate level's
        warm-up (``LoadConfig.level_warmup``)."""
        done = [o.record.latency_s for o in outcomes if o.ok]
        if done:
            self._latency[ep.url] = statistics.median(done)

    async def block(
        self,
        phase: Phase,
        ep: Endpoint,
        work: Iterator[int],
        deadline: float | None,
        into: RoleResult,
        on_request: OnRequest | None = None,
        schedule: int = 0,
    ) -> None:
        """Send ``work`` to ``ep`` at the level's load, reading the server's counters before and after.

        Open-loop arrivals are drawn from a generator seeded by (seed, level, ``schedule``): the blocks of
        both endpoints with the same ``schedule`` get the same gaps, so the speculative and the baseline
        endpoint see the same arrival pattern (a trace: the same times), and pairs stay paired.
        """

        def done(outcome: RequestOutcome) -> None:
            into.outcomes.append(outcome)
            if on_request is not None:
                on_request(phase, ep.role, outcome)

        async def send(index: int, slot: int) -> RequestOutcome:
            # A conversation is one unit of work: its turns go one after another on the same slot, each
            # with the server's own earlier answers (as a chat client would); every turn is a request.
            turns = prompt_of(self.cfg, index).turns
            answers: list[str] = []
            while True:
                # Cancelled in flight (Ctrl-C): the server got it, so it is recorded, as interrupted.
                outcome = await self.streams.send(build_request(self.cfg, ep, index, answers), slot, done)
                if len(answers) + 1 == turns or not outcome.ok:
                    return outcome
                done(outcome)
                answers.append(outcome.text)

        before = await read(self.client, ep, into.readings)
        into.client_processes = self.client_processes
        t0, cpu0 = perf_counter(), process_time() + self.streams.cpu_seconds()
        per0 = (process_time(), *self.streams.cpu_by_process())
        try:
            # The server's running/waiting gauges while the block runs (loadreadings.sampling_queue).
            async with sampling_queue(self.client, ep, into.readings):
                if phase.trace and self.cfg.trace is not None:
                    indices = list(work)
                    gaps = iter(trace_gaps(self.cfg.trace, indices, self.cfg.trace_speed))
                    await open_loop(send, iter(indices), gaps, deadline, done)
                elif phase.rate is not None:
                    rng = random.Random(f"{self.cfg.seed}:{phase.label}:{schedule}")
                    gaps = arrival_gaps(phase.rate, self.cfg.arrival, rng, self.cfg.burstiness)
                    await open_loop(send, work, gaps, deadline, done)
                else:
                    await closed_loop(send, work, phase.concurrency or 1, deadline, done)
        finally:
            into.wall_s += perf_counter() - t0
            into.client_cpu_s += process_time() + self.streams.cpu_seconds() - cpu0
            per = (process_time(), *self.streams.cpu_by_process())
            if len(into.client_cpu_by_process) < len(per):
                into.client_cpu_by_process += [0.0] * (len(per) - len(into.client_cpu_by_process))
            for i, (a, b) in enumerate(zip(per0, per, strict=False)):
                into.client_cpu_by_process[i] += b - a
        after = await read(self.client, ep, into.readings)
        if before is not None and after is not None:
            into.readings.add(before, after)

    def _work(self, total: int | None, b: int, blocks: int) -> tuple[Iterator[int] | None, float | None]:
        if total is None:
            return None, perf_counter() + (self.cfg.duration or 0.0) / blocks
        return iter(range(b * total // blocks, (b + 1) * total // blocks)), None

    async def run_level(self, phase: Phase, ep: Endpoint, on_request: OnRequest | None = None) -> RoleResult:
        """One level against one endpoint, warmed at its load (``warm_level``), in one block: its records and
        the server's readings."""
        into = RoleResult(ep)
        self.streams.prepare(phase.concurrency or OPEN_LOOP_SLOTS)
        await self.warm_level(phase, ep, into)
        work, deadline = self._work(self.cfg.level_size(), 0, 1)
        await self.block(phase, ep, work or itertools.count(), deadline, into, on_request)
        self._note_latency(ep, into.outcomes)
        return into

    def blocks(self, phase: Phase, endpoints: int, requests: int | None) -> int:
        if self.cfg.blocks is not None:
            return max(1, self.cfg.blocks)
        if endpoints == 1:
            return 1
        if requests is None:
            return 4
        per_block = 2 * (phase.concurrency or 2)  # blocks much shorter than this never reach the load level
        return max(1, min(4, requests // per_block))

    async def run_phase(
        self, result: PhaseResult, endpoints: Sequence[Endpoint], on_request: OnRequest | None = None
    ) -> None:
        """Run one level into ``result`` (registered by the caller first, so partial work is kept), the
        endpoints alternating block by block."""
        phase = result.phase
        total = self.cfg.level_size()
        blocks = self.blocks(phase, len(endpoints), total)
        self.streams.prepare(phase.concurrency or OPEN_LOOP_SLOTS)
        for ep in endpoints:  # each endpoint warmed at the level's load before either is measured
            await self.warm_level(phase, ep, result.roles[ep.role])
        cursors = {ep.role: itertools.count() for ep in endpoints}  # --duration: each side's own sequence
        for b in range(blocks):
            order = endpoints if b % 2 == 0 else list(reversed(endpoints))
            for ep in order:
                work, deadline = self._work(total, b, blocks)
                await self.block(
                    phase,
                    ep,
                    work or cursors[ep.role],
                    deadline,
                    result.roles[ep.role],
                    on_request,
                    schedule=b,
                )
        for ep in endpoints:
            self._note_latency(ep, result.roles[ep.role].outcomes)


def new_phase(phase: Phase, endpoints: Sequence[Endpoint]) -> PhaseResult:
    return PhaseResult(phase, {ep.role: RoleResult(ep) for ep in endpoints}, complete=False)
