"""A request that met a pooled connection the server had closed is sent once more, and only that one."""

from __future__ import annotations

import asyncio
import json

import httpx

from specmeter.load.client import StreamRequest, stream_request

CHUNKS = [
    {
        "choices": [{"text": "a", "finish_reason": None}],
        "usage": {"completion_tokens": 1, "prompt_tokens": 2},
    },
    {
        "choices": [{"text": "b", "finish_reason": "length"}],
        "usage": {"completion_tokens": 2, "prompt_tokens": 2},
    },
]
SSE = "".join(f"data: {json.dumps(c)}\n\n" for c in CHUNKS).encode() + b"data: [DONE]\n\n"


def _run(failures: list[Exception]) -> tuple[int, str | None, int]:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        if failures:
            raise failures.pop(0)
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, stream=httpx.ByteStream(SSE), headers=headers)

    async def go() -> tuple[str | None, int]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            req = StreamRequest(
                "p", "c", "http://engine.test/v1/completions", {"prompt": "x", "stream": True}
            )
            outcome = await stream_request(client, req)
        return outcome.error, outcome.record.output_tokens

    error, tokens = asyncio.run(go())
    return calls, error, tokens


def test_a_request_the_server_never_answered_is_sent_again() -> None:
    stale = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    assert _run([stale]) == (2, None, 2)


def test_it_is_retried_once_only_and_other_failures_not_at_all() -> None:
    stale = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    calls, error, _ = _run([stale, stale, stale])
    assert calls == 2 and error is not None and error.startswith("connection closed mid-stream")
    calls, error, _ = _run([httpx.ConnectError("refused")])
    assert calls == 1 and error is not None and error.startswith("connection failed")
