"""A fake Anthropic Messages server for failure injection (loopback only, free ports, always shut down).

It streams the reference's event sequence — ``message_start``, ``content_block_start``, ``ping``, one
``content_block_delta`` per entry of ``chunks``, ``content_block_stop``, ``message_delta`` with the
cumulative usage, ``message_stop`` — and injects one failure at a time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


def event(name: str, payload: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()


@dataclass
class MessagesBehaviour:
    # ok, cut, close_midway, stall, status, error_event, malformed, refusal, cached, no_stop_event, thinking
    mode: str = "ok"
    chunks: list[str] = field(default_factory=lambda: ["Hel", "lo, wor", "ld"])  # text per delta
    output_tokens: int = 7
    status: int = 529
    bodies: list[dict[str, Any]] = field(default_factory=list)  # the requests received
    headers: list[dict[str, str]] = field(default_factory=list)


def fake_messages(b: MessagesBehaviour) -> Starlette:
    async def messages(request: Request) -> Response:
        b.bodies.append(await request.json())
        b.headers.append(dict(request.headers))
        if b.mode == "status":
            body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            return JSONResponse(body, status_code=b.status)
        return StreamingResponse(_stream(request), media_type="text/event-stream")

    async def _stream(request: Request) -> AsyncIterator[bytes]:
        usage: dict[str, int] = {"input_tokens": 9, "output_tokens": 1}
        if b.mode == "cached":
            usage.update(cache_read_input_tokens=20, cache_creation_input_tokens=3)
        message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m",
                   "stop_reason": None, "stop_sequence": None, "usage": usage}  # fmt: skip
        yield event("message_start", {"type": "message_start", "message": message})
        block = {"type": "thinking", "thinking": ""} if b.mode == "thinking" else {"type": "text", "text": ""}
        yield event(
            "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
        )
        yield event("ping", {"type": "ping"})
        for i, text in enumerate(b.chunks):
            if b.mode == "close_midway" and i == 2:
                raise RuntimeError("injected: connection dropped mid-stream")
            if b.mode == "stall" and i == 1:
                for _ in range(300):  # ends early once the client has gone
                    await asyncio.sleep(0.05)
                    if await request.is_disconnected():
                        return
            if b.mode == "error_event" and i == 2:
                error = {"type": "overloaded_error", "message": "Overloaded"}
                yield event("error", {"type": "error", "error": error})
                return
            if b.mode == "malformed" and i == 1:
                yield b"event: content_block_delta\ndata: {not json\n\n"
                yield b"garbage line without a field\n\n"
                yield event("future_event", {"type": "future_event", "x": 1})  # unknown: skipped
            delta = {"type": "thinking_delta", "thinking": text} if b.mode == "thinking" else {
                "type": "text_delta", "text": text}  # fmt: skip
            yield event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        if b.mode == "thinking":
            signature = {"type": "signature_delta", "signature": "abc"}
            yield event(
                "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": signature}
            )
        yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
        if b.mode == "cut":  # the body ends cleanly, without stop_reason or message_stop
            return
        stop = "refusal" if b.mode == "refusal" else "max_tokens"
        delta = {"stop_reason": stop, "stop_sequence": None}
        yield event("message_delta", {"type": "message_delta", "delta": delta,
                                      "usage": {"output_tokens": b.output_tokens}})  # fmt: skip
        if b.mode != "no_stop_event":
            yield event("message_stop", {"type": "message_stop"})

    async def models(request: Request) -> Response:
        return JSONResponse({"data": [{"id": "fake-claude", "type": "model"}], "has_more": False})

    return Starlette(routes=[Route("/v1/messages", messages, methods=["POST"]), Route("/v1/models", models)])
