"""Streams read by several worker processes, each stamping arrivals on its own event loop.

One Python process that reads every stream stamps a chunk only when its event loop gets to it: with 64
streams in flight, a first token waits behind the parsing of the other streams' chunks, and the client's
TTFT runs late by milliseconds that grow with the number of open streams (benchmarks/load_client.py:
median 14–15 ms at concurrency 64 from one process). ``WorkerStreams`` spreads the streams over N worker
processes (``load --client-processes N``): each runs ``stream_request`` — the same parser and the same
stamps as in-process — on its own event loop for the slots it owns (slot mod N), and sends the finished
``RequestOutcome`` back over a pipe; outcomes are merged by request number. Stamps are ``perf_counter()``,
CLOCK_MONOTONIC on Linux: one clock for every process of the machine, so a worker's stamps, its
``started_at`` and ``ended_at`` mean the same as the main process's.

What it costs: one process start per worker (about half a second, before the first level), a pickle of
each request and each outcome, and the workers' CPU (``cpu_seconds``). The main process keeps the schedule
(``load.loop``), the records and the readings; the data still flows one way.

Ctrl-C: a request cancelled in the main process is cancelled in its worker, whose interrupted outcome comes
back and goes to ``on_cancel`` like an in-process one (waited for through further cancels, up to
``CANCEL_WAIT``). Workers ignore SIGINT and SIGTERM (the main process owns the interrupt) and exit when
their pipe closes, so none outlives the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from specmeter.load.client import RequestOutcome, StreamRequest, StreamState

__all__ = ["WorkerStreams"]

CANCEL_WAIT = 2.0  # seconds to wait for a cancelled request's interrupted outcome from its worker
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _worker(conn: Connection, settings: dict[str, Any]) -> None:
    # The main process owns Ctrl-C and SIGTERM (a group-wide one included) and cancels the requests in
    # flight, whose interrupted outcomes the workers still send back; a worker stops when its pipe closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    asyncio.run(_serve(conn, settings))


async def _serve(conn: Connection, settings: dict[str, Any]) -> None:
    # Imported here: the loop module pulls in httpx, which the spawned process needs anyway.
    from specmeter.load.loop import Streams

    loop = asyncio.get_running_loop()
    streams = Streams(**settings)
    stop: asyncio.Future[None] = loop.create_future()
    tasks: dict[int, asyncio.Task[None]] = {}

    async def one(rid: int, request: StreamRequest, slot: int) -> None:
        cancelled: list[RequestOutcome] = []
        try:
            outcome = await streams.send(request, slot, cancelled.append)
        except asyncio.CancelledError:
            conn.send(("cancelled", rid, cancelled[0] if cancelled else None))
            return
        finally:
            tasks.pop(rid, None)
        conn.send(("done", rid, outcome))

    def readable() -> None:
        while conn.poll():
            try:
                message = conn.recv()
            except (EOFError, OSError):
                message = None
            if message is None:
                if not stop.done():
                    stop.set_result(None)
                return
            kind = message[0]
            if kind == "send":
                _, rid, request, slot = message
                tasks[rid] = loop.create_task(one(rid, request, slot))
            elif kind == "cancel" and message[1] in tasks:
                tasks[message[1]].cancel()
            elif kind == "prepare":
                streams.prepare(message[1])

    loop.add_reader(conn.fileno(), readable)
    conn.send(("ready", os.getpid()))
    try:
        await stop
    finally:
        loop.remove_reader(conn.fileno())
        pending = list(tasks.values())
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await streams.aclose()
        conn.close()


async def _outlast(future: asyncio.Future[tuple[str, Any]], timeout: float) -> RequestOutcome | None:
    """The worker's answer to a cancelled request, waited for at most ``timeout`` s *through* further
    cancellations: the request loop cancels its tasks again while they wait (``closed_loop`` after its
    ``gather`` was cancelled, ``asyncio.run`` at shutdown), and a wait cut short loses the record of a
    request the server received (issue 29: ``requests_sent: 2`` with 4 connections open)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not future.done():
        remaining = deadline - loop.time()
        if remaining <= 0:
            return None
        try:
            await asyncio.wait({future}, timeout=remaining)  # never cancels the future itself
        except asyncio.CancelledError:
            continue  # the caller re-raises its own cancellation once the answer is in
    if future.cancelled() or future.exception() is not None:
        return None
    outcome: RequestOutcome | None = future.result()[1]
    return outcome


class WorkerStreams:
    """``load.loop.Streams``'s interface, with the streams read by ``processes`` worker processes."""

    def __init__(
        self,
        processes: int,
        *,
        headers: dict[str, str] | None = None,
        stall_timeout: float = 60.0,
        request_timeout: float | None = None,
        state_type: type[StreamState] = StreamState,
        lean_http: bool = True,
    ) -> None:
        self.processes = max(1, processes)
        # Sent to each worker, pickled (the state type travels by its module and name).
        self._settings = {
            "headers": headers,
            "stall_timeout": stall_timeout,
            "request_timeout": request_timeout,
            "state_type": state_type,
            "lean_http": lean_http,
        }
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        self._pending: dict[int, asyncio.Future[tuple[str, Any]]] = {}
        self._next = 0
        self._started: asyncio.Task[None] | None = None
        self._prepared: list[int] = []

    async def start(self) -> None:
        """Start the workers (once) and wait until each can take requests."""
        if self._started is None:
            self._started = asyncio.get_running_loop().create_task(self._start())
        await asyncio.shield(self._started)

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        ctx = mp.get_context("spawn")  # no inherited event loop, sockets or threads
        ready: list[asyncio.Future[None]] = []
        for _ in range(self.processes):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, self._settings), daemon=True)
            proc.start()
            child.close()
            self._conns.append(parent)
            self._procs.append(proc)
            started: asyncio.Future[None] = loop.create_future()
            ready.append(started)
            loop.add_reader(parent.fileno(), self._readable, parent, started)
        await asyncio.gather(*ready)
        for slots in self._prepared:
            self._prepare_now(slots)

    def _readable(self, conn: Connection, started: asyncio.Future[None]) -> None:
        while True:
            try:
                if not conn.poll():
                    return
                message = conn.recv()
            except (EOFError, OSError):
                asyncio.get_running_loop().remove_reader(conn.fileno())
                for future in self._pending.values():
                    if not future.done():
                        future.set_exception(RuntimeError("a load worker process exited"))
                if not started.done():
                    started.set_exception(RuntimeError("a load worker process failed to start"))
                return
            if message[0] == "ready":
                if not started.done():
                    started.set_result(None)
                continue
            kind, rid, outcome = message
            waiting = self._pending.pop(rid, None)
            if waiting is not None and not waiting.done():
                waiting.set_result((kind, outcome))

    def prepare(self, slots: int) -> None:
        """Create each worker's pools for its share of ``slots`` now, outside any measured interval."""
        if self._conns:
            self._prepare_now(slots)
        else:
            self._prepared.append(slots)

    def _prepare_now(self, slots: int) -> None:
        for w, conn in enumerate(self._conns):
            conn.send(("prepare", len(range(w, slots, self.processes))))

    async def send(
        self, request: StreamRequest, slot: int, on_cancel: Callable[[RequestOutcome], None] | None = None
    ) -> RequestOutcome:
        await self.start()
        rid, self._next = self._next, self._next + 1
        future: asyncio.Future[tuple[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        conn = self._conns[slot % self.processes]
        # Slot s of the run is slot s // N of its worker: each worker's slots stay dense for its pools.
        conn.send(("send", rid, request, slot // self.processes))
        try:
            outcome: RequestOutcome = (await asyncio.shield(future))[1]
            return outcome
        except asyncio.CancelledError:
            with contextlib.suppress(OSError, ValueError):  # a worker that is gone has nothing to cancel
                conn.send(("cancel", rid))
            interrupted = await _outlast(future, CANCEL_WAIT)
            if on_cancel is not None and interrupted is not None:
                on_cancel(interrupted)
            raise
        finally:
            self._pending.pop(rid, None)

    def pids(self) -> tuple[int, ...]:
        """The worker processes' PIDs (empty before ``start``): the machine watch counts them as own."""
        return tuple(proc.pid for proc in self._procs if proc.pid is not None)

    def cpu_seconds(self) -> float:
        """CPU seconds the workers have used so far (Linux /proc; 0 where it cannot be read)."""
        return sum(self.cpu_by_process())

    def cpu_by_process(self) -> tuple[float, ...]:
        """Each worker's CPU seconds so far, in start order (Linux /proc; 0 where it cannot be read)."""
        seconds: list[float] = []
        for proc in self._procs:
            try:
                with open(f"/proc/{proc.pid}/stat", encoding="ascii") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
                seconds.append((int(fields[11]) + int(fields[12])) / _TICKS)  # utime, stime
            except (OSError, IndexError, ValueError):
                seconds.append(0.0)
        return tuple(seconds)

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        for conn in self._conns:
            with contextlib.suppress(OSError, ValueError):
                loop.remove_reader(conn.fileno())
                conn.send(None)
        for proc in self._procs:
            await loop.run_in_executor(None, proc.join, 5.0)
            if proc.is_alive():
                proc.terminate()
                proc.join(2.0)
        for conn in self._conns:
            conn.close()
        self._conns, self._procs = [], []
