"""``serve``'s streamed answer on ``/v1/messages``: engine steps as Anthropic Messages events.

The job is already queued (``server.app`` parses, checks and submits it exactly as for the OpenAI routes);
this generator turns what the worker reports into the reference's event sequence (``wire.messages``):
``message_start`` with the prompt's ``input_tokens``, one text block, a ``ping``, one ``content_block_delta``
per engine step that produced text (with speculation several tokens, as the OpenAI stream's chunks), then
``content_block_stop``, ``message_delta`` with the stop reason and the output total, ``message_stop``.

A step whose tokens decode to no new text yet (half of a multi-byte character) sends no delta — an empty
``text_delta`` means nothing to a client — so its tokens arrive with the next delta. The Messages API has no
per-chunk token counts: clients learn the total from ``message_delta`` (see ``load.messages_stream``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from specmeter.server.engine import ServingEngine
from specmeter.server.responses import TextStream
from specmeter.server.worker import Job
from specmeter.wire.messages import delta_event, error_event, finish_events, start_events
from specmeter.wire.sse import encode_event

__all__ = ["stream_message"]


async def stream_message(
    engine: ServingEngine,
    job: Job,
    model: str,
    events: asyncio.Queue[tuple[Any, ...]],
    watch_disconnect: Callable[[], Coroutine[Any, Any, None]],
) -> AsyncIterator[bytes]:
    text = TextStream(engine.decode)
    watcher = asyncio.create_task(watch_disconnect())
    finished = False
    try:
        for name, payload in start_events(job.request_id, model, len(job.prompt_ids)):
            yield encode_event(name, payload)
        while True:
            item = await events.get()
            if item[0] == "disconnect":
                return
            if item[0] == "tokens":
                piece = text.push(item[1])
                if piece:
                    yield encode_event(*delta_event(piece))
                continue
            finished = True
            result, error = item[1], item[2]
            if error is not None:
                yield encode_event("error", error_event(f"generation failed: {error}"))
                return
            if result is None or result.finish_reason == "interrupted":
                return
            tail = text.push([], final=True)
            if tail:
                yield encode_event(*delta_event(tail))
            for name, payload in finish_events(result.finish_reason, len(result.output_ids)):
                yield encode_event(name, payload)
            return
    finally:
        watcher.cancel()
        if not finished:
            job.cancelled.set()  # the response was abandoned (client gone): stop generating for nobody
