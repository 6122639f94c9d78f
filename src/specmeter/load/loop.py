"""The request loop: send a level's requests on their schedule and hand over each outcome as it ends.

Closed loop (``closed_loop``): N workers, each sends its next request when the previous one ends. Open loop
(``open_loop``): a request leaves at every arrival of the schedule (``arrivals``), however many are still
in flight. Both take the work as an iterator of request indices (shared by the workers, so a level's
indices are sent once each) and an optional deadline; both call ``on_outcome`` the moment a request ends,
so an interrupted level keeps every finished request.

The loop knows nothing of prompts or payloads: ``send(index, slot)`` does the sending (``Streams.send``
with a request built by ``load.requests``). ``slot`` names the worker (closed loop) or a pooled slot (open
loop) so that connections are reused per slot (``ClientShards``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from time import perf_counter

from specmeter.load.client import ClientShards, RequestOutcome, StreamRequest, StreamState, stream_request
from specmeter.load.limits import ensure_open_files

__all__ = ["OPEN_LOOP_SLOTS", "OnOutcome", "Send", "Streams", "closed_loop", "open_loop"]

OPEN_LOOP_SLOTS = 256  # rate mode spreads its requests over this many pooled slots (see ClientShards)

Send = Callable[[int, int], Awaitable[RequestOutcome]]  # (request index, slot) -> outcome
OnOutcome = Callable[[RequestOutcome], None]


class Streams:
    """Sends streamed requests through small sharded connection pools (``ClientShards``), picked by slot."""

    def __init__(
        self,
        *,
        headers: dict[str, str] | None = None,
        stall_timeout: float = 60.0,
        request_timeout: float | None = None,
        state_type: type[StreamState] = StreamState,
        lean_http: bool = True,
    ) -> None:
        # lean_http=False: httpx reads plain http:// streams too (what load did before load.http1; only
        # benchmarks/load_client.py asks for it, to compare the two side by side).
        self.shards = ClientShards(lean=lean_http)
        self.headers, self.stall_timeout, self.request_timeout = headers, stall_timeout, request_timeout
        self.state_type = state_type  # the stream's wire format: OpenAI's, or MessagesStream

    async def start(self) -> None:
        """Nothing to start in-process (``load.workers.WorkerStreams`` starts its processes here)."""

    def prepare(self, slots: int) -> None:
        """Create the pools for ``slots`` slots now, outside any measured interval, and make room for their
        sockets under the open-file limit (``load.limits``: the config allowed no more than it can hold)."""
        ensure_open_files(slots + slots // 4 + 2)  # each shard of 8 slots may open 2 spare connections
        self.shards.prepare(slots)

    def cpu_seconds(self) -> float:
        """CPU used outside this process for the streams: none in-process."""
        return 0.0

    def cpu_by_process(self) -> tuple[float, ...]:
        """CPU seconds of each process besides this one that reads the streams: none in-process."""
        return ()

    def pids(self) -> tuple[int, ...]:
        """Processes besides this one that read the streams: none in-process (``WorkerStreams`` has some)."""
        return ()

    async def send(
        self, request: StreamRequest, slot: int, on_cancel: OnOutcome | None = None
    ) -> RequestOutcome:
        """One request; ``on_cancel`` gets its ``interrupted`` outcome if Ctrl-C cancels it in flight."""
        return await stream_request(
            self.shards.get(slot),
            request,
            headers=self.headers,
            stall_timeout=self.stall_timeout,
            total_timeout=self.request_timeout,
            on_cancel=on_cancel,
            state_type=self.state_type,
        )

    async def aclose(self) -> None:
        await self.shards.aclose()


async def closed_loop(
    send: Send,
    work: Iterator[int],
    concurrency: int,
    deadline: float | None = None,
    on_outcome: OnOutcome | None = None,
) -> None:
    """``concurrency`` workers drain ``work``; none starts a request after ``deadline`` (perf_counter).

    Cancellation (Ctrl-C) cancels every worker and waits for all of them to end before it propagates:
    ``gather`` alone resumes its caller as soon as the *first* worker ends cancelled, while the others may
    still be closing their streams and recording their interrupted requests — and the caller would then
    summarise the level without them.
    """

    async def worker(slot: int) -> None:
        for index in work:
            if deadline is not None and perf_counter() >= deadline:
                return
            outcome = await send(index, slot)
            if on_outcome is not None:
                on_outcome(outcome)

    tasks = [asyncio.ensure_future(worker(slot)) for slot in range(concurrency)]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def open_loop(
    send: Send,
    work: Iterator[int],
    gaps: Iterator[float],
    deadline: float | None = None,
    on_outcome: OnOutcome | None = None,
) -> None:
    """Send request after request at the schedule's gaps (seconds), then wait for all of them to end.

    No request is sent at or after ``deadline``; cancellation cancels every request in flight and waits
    for them to end, so that what they record on cancellation is recorded before the caller's files close.
    """
    tasks: set[asyncio.Task[None]] = set()

    async def one(index: int) -> None:
        outcome = await send(index, index % OPEN_LOOP_SLOTS)
        if on_outcome is not None:
            on_outcome(outcome)

    next_at = perf_counter()
    try:
        for index in work:
            if deadline is not None and next_at >= deadline:
                break
            await asyncio.sleep(max(next_at - perf_counter(), 0.0))
            task = asyncio.create_task(one(index))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            next_at += next(gaps)
        await asyncio.gather(*list(tasks))
    finally:
        pending = list(tasks)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
