"""The bridge between async HTTP handlers and the engine: first come first served, one or many at a time.

The engine is blocking, so it runs in one worker thread fed by a FIFO queue — requests start strictly in
arrival order, which is the fair order under overload. Each job carries thread-safe callbacks: the handler
turns them into asyncio events (``loop.call_soon_threadsafe``), so tokens reach the client the moment the
engine emits them. A job's ``cancelled`` flag is how a client disconnect stops its generation: checked
before a queued job starts, and returned to the engine after every step (``on_emit`` returning True stops
that sequence).

Two modes. ``max_batch == 1``: one generation at a time (``engine.generate``), the single-stream engine.
``max_batch > 1``: continuous batching through the engine's batch session (``engine.open_batch``) — between
two steps the worker moves queued jobs into free rows (FIFO), then runs one step for every live sequence;
finished sequences free their rows at once. ``vllm:num_requests_running`` is the live batch and
``vllm:num_requests_waiting`` the queue, as in vLLM's scheduler.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from specmeter.server.engine import BatchSession, Decoding, Emit, GenerationResult, ServingEngine
from specmeter.server.prom import ServerMetrics

__all__ = ["GenerationWorker", "Job"]

log = logging.getLogger(__name__)


@dataclass
class Job:
    request_id: str
    kind: str  # "completion" or "chat"
    prompt_ids: tuple[int, ...]
    decoding: Decoding
    on_tokens: Callable[[list[int]], None]  # called in the worker thread after every engine step
    on_done: Callable[[GenerationResult | None, BaseException | None], None]  # result None: never started
    arrival: float = field(default_factory=perf_counter)
    cancelled: threading.Event = field(default_factory=threading.Event)
    started: float | None = None
    log: Mapping[str, Any] = field(default_factory=dict)  # extra fields of the request log (domain, tenant…)


def _emitter(job: Job) -> Emit:
    """The engine's ``on_emit`` for ``job``: hand its tokens on, and stop it once its client has left."""

    def emit(tokens: list[int]) -> bool:
        job.on_tokens(tokens)
        return job.cancelled.is_set()

    return emit


class GenerationWorker:
    def __init__(
        self,
        engine: ServingEngine,
        metrics: ServerMetrics | None = None,
        on_finished: Callable[[Job, GenerationResult], None] | None = None,
        max_waiting: int = 1024,
        max_batch: int = 1,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self.engine, self.metrics, self.on_finished, self.max_waiting = (
            engine,
            metrics,
            on_finished,
            max_waiting,
        )
        self.max_batch = max_batch
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._waiting = 0
        self._stopped = False
        self.running: Job | None = None  # single-stream mode
        self.live: dict[int, Job] = {}  # batch mode: jobs in the batch, by id(job)

    @property
    def waiting(self) -> int:
        return self._waiting

    def start(self) -> None:
        if self._thread is None:
            loop = self._loop if self.max_batch == 1 else self._loop_batched
            self._thread = threading.Thread(target=loop, name="specmeter-generation", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Cancel the running job, drop the queued ones, and join the thread."""
        self._stopped = True
        if self._thread is None:
            return
        if self.running is not None:
            self.running.cancelled.set()
        with self._lock:
            live = list(self.live.values())
        for job in live:
            job.cancelled.set()
        self._queue.put(None)
        self._thread.join(timeout)
        self._thread = None

    def submit(self, job: Job) -> bool:
        """Queue a job; False when the queue is full (the handler answers 429)."""
        with self._lock:
            if self._stopped or self._waiting >= self.max_waiting:
                return False
            self._waiting += 1
        self._gauges()
        self._queue.put(job)
        return True

    def _gauges(self) -> None:
        if self.metrics is not None:
            self.metrics.waiting.set(self._waiting)
            self.metrics.running.set(len(self.live) if self.max_batch > 1 else int(self.running is not None))

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                self._drain()
                return
            if self._take(job):
                self._run(job)

    def _take(self, job: Job) -> bool:
        """A job off the queue: True when it is to run (no longer waiting), False when it was skipped."""
        if job.cancelled.is_set() or self._stopped:
            self._skip(job)
            return False
        with self._lock:
            self._waiting -= 1
        return True

    def _drain(self) -> None:
        """Stopping: every job still queued is told it will not run, so no handler waits forever."""
        while True:
            try:
                rest = self._queue.get_nowait()
            except queue.Empty:
                return
            if rest is not None:
                self._skip(rest)

    def _skip(self, job: Job) -> None:
        """A queued job that will not run (its client left, or the server stops): an aborted request, as
        vLLM counts one (``finished_reason="abort"``), whether or not it ever started."""
        with self._lock:
            self._waiting -= 1
        self._gauges()
        if self.metrics is not None:
            self.metrics.observe_abort(perf_counter() - job.arrival)
        job.on_done(None, None)

    def _run(self, job: Job) -> None:
        job.started = perf_counter()
        self.running = job
        self._gauges()

        try:
            result = self.engine.generate(job.prompt_ids, job.decoding, _emitter(job))
        except Exception as e:  # the engine failing must not kill the worker: the request gets a 500
            log.exception("generation of %s failed", job.request_id)
            self.running = None
            self._gauges()
            job.on_done(None, e)
            return
        self.running = None
        self._gauges()
        self._finished(job, result)

    def _finished(self, job: Job, result: GenerationResult) -> None:
        if self.metrics is not None:
            self.metrics.observe(len(job.prompt_ids), result, (job.started or job.arrival) - job.arrival)
        if self.on_finished is not None:
            try:
                self.on_finished(job, result)
            except Exception:  # a full disk must not take the server down; the response still goes out
                log.exception("recording request %s failed", job.request_id)
        job.on_done(result, None)

    # --------------------------------------------------------------------------------------- batch mode

    def _loop_batched(self) -> None:
        session: BatchSession | None = None
        stopping = False
        while True:
            # Fill free rows from the queue, oldest first; wait only when nothing is running.
            while not stopping and len(self.live) < self.max_batch:
                try:
                    job = self._queue.get(block=not self.live)
                except queue.Empty:
                    break
                if job is None:
                    stopping = True
                    break
                if not self._take(job):
                    continue
                if session is None:
                    session = self.engine.open_batch(self.max_batch)
                self._admit(session, job)
            if stopping and not self.live:
                self._drain()
                return
            if session is None or not self.live:
                continue
            try:
                finished = session.step()
            except Exception as e:  # the engine failing must not kill the worker: its requests get a 500
                log.exception("a batched generation step failed (%d requests)", len(self.live))
                with self._lock:
                    failed, self.live, session = list(self.live.values()), {}, None
                self._gauges()
                for job in failed:
                    job.on_done(None, e)
                continue
            for tag, result in finished:
                with self._lock:
                    job = self.live.pop(tag)
                self._gauges()
                if isinstance(result, BaseException):  # this request failed alone: its own 500
                    log.error("generation of %s failed", job.request_id, exc_info=result)
                    job.on_done(None, result)
                else:
                    self._finished(job, result)

    def _admit(self, session: BatchSession, job: Job) -> None:
        job.started = perf_counter()
        try:
            session.add(job.prompt_ids, job.decoding, _emitter(job), id(job))
        except Exception as e:  # a request the engine refuses fails alone
            log.exception("admitting %s failed", job.request_id)
            self._gauges()
            job.on_done(None, e)
            return
        with self._lock:
            self.live[id(job)] = job
        self._gauges()
