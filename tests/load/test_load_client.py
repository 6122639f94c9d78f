"""The streaming client against injected failures: every outcome keeps what was measured and says why."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from serving_fakes import Behaviour
from specmeter.load.client import RequestOutcome, StreamRequest, stream_request


def _run(url: str, **kw: float) -> RequestOutcome:
    async def go() -> RequestOutcome:
        async with httpx.AsyncClient() as client:
            request = StreamRequest("p1", "cat", url + "/v1/completions", {"prompt": "x", "stream": True})
            return await stream_request(client, request, **kw)

    return asyncio.run(go())


def test_tokens_per_chunk_come_from_the_server_not_from_chunk_counts(fake: tuple[Behaviour, str]) -> None:
    behaviour, url = fake
    behaviour.chunks = [1, 4, 4, 2]  # a speculative server: several tokens per chunk
    out = _run(url)
    assert out.ok and out.error is None
    assert out.record.output_tokens == 11  # not 4 chunks
    assert [e.tokens for e in out.record.emissions] == [1, 4, 4, 2]
    assert out.token_source == "token_ids"
    assert out.record.finish_reason == "length"
    assert out.record.prompt_tokens == 5
    assert 0 < out.record.ttft_s <= out.record.latency_s
    assert out.first_payload is not None and out.first_payload["choices"][0]["token_ids"] == [100]


def test_final_usage_only_is_distributed_and_marked(fake: tuple[Behaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode, behaviour.chunks = "final_usage_only", [2, 2, 3]
    out = _run(url)
    assert out.ok
    assert out.token_source == "usage_distributed"
    assert out.record.output_tokens == 7
    assert sum(e.tokens for e in out.record.emissions) == 7
    assert [e.tokens for e in out.record.emissions] == [3, 2, 2]  # 7 over 3 chunks, extra to the earliest


def test_server_closes_the_stream_midway(fake: tuple[Behaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode, behaviour.chunks = "close_midway", [1, 2, 3, 4]
    out = _run(url)
    assert not out.ok and out.partial
    assert out.record.finish_reason == "interrupted"
    assert out.record.output_tokens == 3  # the two chunks that arrived are kept
    assert out.error is not None and "closed" in out.error


def test_done_is_optional_once_finish_reason_arrived(fake: tuple[Behaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "no_done"
    assert _run(url).ok


def test_stream_ending_without_finish_or_done_is_interrupted(fake: tuple[Behaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode, behaviour.chunks = "cut", [2, 2]
    out = _run(url)
    assert out.partial and out.record.output_tokens == 4
    assert out.error is not None and "without finish_reason or [DONE]" in out.error


def test_stalled_stream_times_out_and_keeps_the_partial_record(fake: tuple[Behaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode, behaviour.chunks = "stall", [2, 2, 2]
    out = _run(url, stall_timeout=0.3)
    assert out.partial
    assert out.error == "stalled: no data for 0.3s"
    assert out.record.output_tokens == 2


@pytest.mark.parametrize(("status", "message"), [(500, "engine exploded"), (429, "rate limited, slow down")])
def test_http_errors_carry_status_and_message(fake: tuple[Behaviour, str], status: int, message: str) -> None:
    behaviour, url = fake
    behaviour.mode, behaviour.status = "status", status
    out = _run(url)
    assert not out.ok and not out.partial
    assert out.status == status
    assert out.error == f"HTTP {status}: {message}"
    assert out.record.output_tokens == 0


def test_malformed_sse_lines_are_skipped_and_counted(fake: tuple[Behaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode, behaviour.chunks = "malformed", [1, 1, 1]
    out = _run(url)
    assert out.ok
    assert out.record.output_tokens == 3
    assert out.malformed_lines == 2  # the bad JSON payload and the line without a field


def test_error_event_inside_the_stream(fake: tuple[Behaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode, behaviour.chunks = "error_event", [1, 2, 3]
    out = _run(url)
    assert out.partial
    assert out.error == "error event in stream: out of memory"


def test_connection_refused() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = _run(f"http://127.0.0.1:{port}")
    assert not out.ok
    assert out.error is not None and out.error.startswith("connection failed")
    assert out.status is None
