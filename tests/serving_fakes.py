"""Small in-process fake servers for failure injection (loopback only, free ports, always shut down).

``fake_openai(behaviour)`` is a Starlette app speaking just enough of the OpenAI streaming API to inject
one failure at a time; ``MetricsText`` serves a /metrics body the test rewrites between scrapes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route


def sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def chunk(
    text: str,
    *,
    finish: str | None = None,
    token_ids: list[int] | None = None,
    usage: int | None = None,
    prompt: int = 5,
) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": finish}
    if token_ids is not None:
        choice["token_ids"] = token_ids
    body: dict[str, Any] = {"id": "cmpl-1", "object": "text_completion", "choices": [choice]}
    if usage is not None:
        body["usage"] = {"prompt_tokens": prompt, "completion_tokens": usage, "total_tokens": prompt + usage}
    return body


@dataclass
class Behaviour:
    """What the fake does; the fields a test does not set keep a well-behaved stream."""

    mode: str = (
        "ok"  # ok, close_midway, cut, stall, status, malformed, final_usage_only, error_event, no_done
    )
    chunks: list[int] = field(default_factory=lambda: [1, 3, 2, 4])  # tokens per streamed chunk
    status: int = 500
    requests: int = 0
    model: str = "fake-model"
    metrics: str = ""
    metrics_seq: list[str] = field(default_factory=list)  # served one per scrape; the last one stays
    scrapes: int = 0
    delay: float = 0.0  # seconds before every chunk
    in_flight: int = 0  # completion requests being answered now
    arrivals: list[int] = field(default_factory=list)  # per request: in flight on arrival, itself included
    fail_every: int = 0  # > 0: every fail_every-th completion request answers HTTP `status` (a flaky server)


def fake_openai(b: Behaviour) -> Starlette:
    async def completions(request: Request) -> Response:
        b.requests += 1
        await request.json()
        b.arrivals.append(b.in_flight + 1)
        if b.mode == "status" or (b.fail_every and b.requests % b.fail_every == 0):
            message = "rate limited, slow down" if b.status == 429 else "engine exploded"
            return JSONResponse(
                {"error": {"message": message, "type": "x", "param": None, "code": None}},
                status_code=b.status,
            )
        b.in_flight += 1
        return StreamingResponse(_counted(request), media_type="text/event-stream")

    async def _counted(request: Request) -> AsyncIterator[bytes]:
        try:
            async for part in _stream(request):
                yield part
        finally:
            b.in_flight -= 1

    async def _stream(request: Request) -> AsyncIterator[bytes]:
        produced, next_id = 0, 100
        for i, n in enumerate(b.chunks):
            if b.delay:
                await asyncio.sleep(b.delay)
            if b.mode == "close_midway" and i == 2:
                raise RuntimeError("injected: connection dropped mid-stream")
            if b.mode == "stall" and i == 1:
                for _ in range(300):  # ends early once the client has gone
                    await asyncio.sleep(0.05)
                    if await request.is_disconnected():
                        return
            if b.mode == "error_event" and i == 2:
                yield sse({"error": {"message": "out of memory", "type": "server_error"}})
                yield b"data: [DONE]\n\n"
                return
            if b.mode == "malformed" and i == 1:
                yield b"data: {not json\n\n"
                yield b"garbage line without a field\n\n"
                yield b": keep-alive comment\n\n"
            produced += n
            ids = list(range(next_id, next_id + n))
            next_id += n
            if b.mode == "final_usage_only":
                yield sse(chunk("w" * n))
            else:
                yield sse(chunk(" w" * n, token_ids=ids, usage=produced))
        if b.mode == "cut":  # the body ends cleanly, but without finish_reason or [DONE]
            return
        yield sse(chunk("", finish="length", token_ids=[], usage=produced))
        usage = {"prompt_tokens": 5, "completion_tokens": produced, "total_tokens": 5 + produced}
        yield sse({"id": "cmpl-1", "object": "text_completion", "choices": [], "usage": usage})
        if b.mode != "no_done":
            yield b"data: [DONE]\n\n"

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": b.model, "object": "model"}]})

    async def metrics(request: Request) -> Response:
        b.scrapes += 1
        if b.metrics_seq:
            b.metrics = b.metrics_seq.pop(0) if len(b.metrics_seq) > 1 else b.metrics_seq[0]
        return PlainTextResponse(b.metrics)

    return Starlette(
        routes=[
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/v1/models", models),
            Route("/metrics", metrics),
        ]
    )


def vllm_metrics(
    drafts: int, draft_tokens: int, accepted: int, per_pos: list[int], generated: int, engine: str = "0"
) -> str:
    labels = f'engine="{engine}",model_name="m"'
    lines = [
        "# TYPE vllm:spec_decode_num_drafts counter",
        f"vllm:spec_decode_num_drafts_total{{{labels}}} {drafts}",
        f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {draft_tokens}",
        f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {accepted}",
        f"vllm:generation_tokens_total{{{labels}}} {generated}",
    ]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{i}"}} {n}'
        for i, n in enumerate(per_pos)
    ]
    return "\n".join(lines) + "\n"
