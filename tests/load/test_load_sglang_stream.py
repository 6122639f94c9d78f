"""``load`` against an SGLang-shaped OpenAI stream: what it sends, what it counts, what it can report.

The fake speaks ``/v1/chat/completions`` the way SGLang streams it (``serving_chat.py``
``_generate_chat_stream``, commit 002897c; chunks built by ``sse_utils.build_sse_content``, whose
``StreamChunk`` omits ``usage`` when None and whose ``StreamDelta`` omits None fields): a first chunk with the
role and empty content, one chunk per engine step with a running ``usage`` when
``stream_options.continuous_usage_stats`` is set, a finish chunk with an empty delta, the final usage chunk
with no choices, then ``[DONE]``. A streamed request that sets ``return_meta_info`` gets the error
``_convert_to_internal_request`` raises (answered as HTTP 400 by ``create_error_response``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from serving_fakes import sse
from specmeter.load.client import RequestOutcome, stream_request
from specmeter.load.config import Endpoint, LoadConfig
from specmeter.load.requests import build_request
from specmeter.server.hosting import ServerThread
from specmeter.workloads.loader import Message, Prompt

PROMPT = Prompt("p", "general", None, (Message("user", "Tell me about buttons."),), 64, 1)
STEPS = [1, 3, 2, 4]  # tokens per stream chunk: the prefill's token, then accepted drafts + 1 per step


@dataclass
class Sglang:
    bodies: list[dict[str, Any]] = field(default_factory=list)
    meta_info: dict[str, Any] | None = None  # a gateway that adds meta_info to the finish chunk


def _chunk(choice: dict[str, Any], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "a1b2",
        "object": "chat.completion.chunk",
        "created": 1796040000,
        "model": "m",
        "choices": [{"index": 0, "logprobs": None, "finish_reason": None, "matched_stop": None, **choice}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def _usage(completion: int) -> dict[str, Any]:
    return {
        "prompt_tokens": 9,
        "total_tokens": 9 + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
    }


def fake_sglang(state: Sglang) -> Starlette:
    async def chat(request: Request) -> Response:
        body = await request.json()
        state.bodies.append(body)
        if body.get("stream") and body.get("return_meta_info"):
            message = (
                "return_meta_info is not supported with streaming. "
                "Please set stream=false when using return_meta_info=true."
            )
            error = {"object": "error", "message": message, "type": "BadRequestError", "code": 400}
            return JSONResponse({**error, "param": None}, status_code=400)
        options = body.get("stream_options") or {}
        continuous = bool(options.get("continuous_usage_stats"))
        return StreamingResponse(_stream(continuous), media_type="text/event-stream")

    async def _stream(continuous: bool) -> AsyncIterator[bytes]:
        yield sse(_chunk({"delta": {"role": "assistant", "content": ""}}))
        produced = 0
        for n in STEPS:
            produced += n
            yield sse(_chunk({"delta": {"content": " w" * n}}, _usage(produced) if continuous else None))
        finish: dict[str, Any] = {"delta": {}, "finish_reason": "length"}
        if state.meta_info is not None:
            finish["meta_info"] = state.meta_info
        yield sse(_chunk(finish))
        final = {"id": "a1b2", "object": "chat.completion.chunk", "created": 1796040000, "model": "m"}
        yield sse({**final, "choices": [], "usage": _usage(produced)})
        yield b"data: [DONE]\n\n"

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@pytest.fixture
def sglang() -> Iterator[tuple[Sglang, str]]:
    state = Sglang()
    with ServerThread(fake_sglang(state), graceful_timeout=2) as server:
        yield state, server.url


def _send(url: str, **cfg: Any) -> RequestOutcome:
    config = LoadConfig(endpoint=url, prompts=(PROMPT,), server_kind="sglang", **cfg)
    ep = Endpoint("speculative", url, None, model="m", kind="sglang")

    async def go() -> RequestOutcome:
        async with httpx.AsyncClient() as client:
            return await stream_request(client, build_request(config, ep, 0))

    return asyncio.run(go())


def test_load_counts_an_sglang_stream_from_its_running_usage(sglang: tuple[Sglang, str]) -> None:
    state, url = sglang
    out = _send(url)
    sent = state.bodies[-1]
    assert "return_meta_info" not in sent  # refused with streaming: sending it would fail every request
    assert sent["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert out.ok and out.error is None
    assert [e.tokens for e in out.record.emissions] == STEPS
    assert out.record.output_tokens == sum(STEPS) and out.record.prompt_tokens == 9
    assert out.token_source == "usage" and out.record.finish_reason == "length"
    assert out.server_spec is None  # SGLang's OpenAI stream carries no meta_info


def test_return_meta_info_on_a_stream_is_refused(sglang: tuple[Sglang, str]) -> None:
    _, url = sglang
    out = _send(url, extra_body={"return_meta_info": True})
    assert not out.ok and out.status == 400
    assert "return_meta_info is not supported with streaming" in (out.error or "")


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        # counts in the newest spelling: read as counts
        ({"spec_verify_ct": 3, "spec_num_correct_drafts": 6, "spec_num_proposed_drafts": 9}, (3, 9, 6)),
        # only SGLang's own rates: a report derived from them, no counts
        ({"spec_verify_ct": 3, "spec_accept_rate": 6 / 9, "spec_accept_length": 10 / 3}, (3, None, None)),
    ],
)
def test_meta_info_added_to_the_stream_is_read(
    sglang: tuple[Sglang, str], meta: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    from specmeter.monitoring.acceptance import acceptance_from_requests

    state, url = sglang
    state.meta_info = {"id": "a1b2", "completion_tokens": sum(STEPS), **meta}
    out = _send(url)
    assert out.ok and out.server_spec is not None and out.server_spec["engine"] == "sglang"
    acc = acceptance_from_requests([out.server_spec])
    assert acc is not None and (acc.steps, acc.drafted_tokens, acc.accepted_tokens) == expected
    assert acc.acceptance_rate == pytest.approx(6 / 9)
    assert acc.acceptance_length == pytest.approx(1 + 6 / 3)  # C = 10 = A + S + 1: τ = 3, not 10/3
