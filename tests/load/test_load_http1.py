"""The lean HTTP/1.1 client (``load.http1``): what ``load`` counts is what it counted through httpx, and a
chunk's stamp is the moment its bytes arrived — taken before any parsing, never a later one."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from serving_fakes import Behaviour, fake_openai
from specmeter.load import http1
from specmeter.load.client import ClientShards, RequestOutcome, StreamRequest, StreamState, stream_request
from specmeter.load.config import LoadConfig, Phase
from specmeter.load.run import execute_load
from specmeter.server.hosting import ServerThread
from specmeter.workloads.loader import Prompt

PAYLOAD = {"prompt": "x", "stream": True}


def _request(url: str) -> StreamRequest:
    return StreamRequest("p1", "cat", url + "/v1/completions", PAYLOAD)


async def _lean(request: StreamRequest, **kw: Any) -> RequestOutcome:
    shards = ClientShards()
    try:
        return await stream_request(shards.get(0), request, **kw)
    finally:
        await shards.aclose()


async def _httpx(request: StreamRequest, **kw: Any) -> RequestOutcome:
    async with httpx.AsyncClient() as client:
        return await stream_request(client, request, **kw)


def _counted(o: RequestOutcome) -> dict[str, Any]:
    """Everything an outcome counts (not its times)."""
    r = o.record
    return {
        "ok": o.ok, "partial": o.partial, "status": o.status, "error": o.error, "source": o.token_source,
        "malformed": o.malformed_lines, "tokens": r.output_tokens, "prompt": r.prompt_tokens,
        "per_chunk": [e.tokens for e in r.emissions], "finish": r.finish_reason, "raw": o.raw_finish_reason,
        "text": o.text, "first": o.first_payload,
    }  # fmt: skip


MODES = ["ok", "close_midway", "cut", "status", "malformed", "final_usage_only", "error_event", "no_done"]


@pytest.mark.parametrize("mode", MODES)
def test_every_failure_mode_counts_as_through_httpx(fake: tuple[Behaviour, str], mode: str) -> None:
    behaviour, url = fake
    behaviour.mode, behaviour.chunks = mode, [1, 4, 4, 2]
    lean = asyncio.run(_lean(_request(url)))
    old = asyncio.run(_httpx(_request(url)))
    assert _counted(lean) == _counted(old)
    assert behaviour.requests == 2


def test_a_stall_and_a_refused_connection_say_what_they_said(fake: tuple[Behaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode, behaviour.chunks = "stall", [2, 2, 2]
    out = asyncio.run(_lean(_request(url), stall_timeout=0.3))
    assert out.error == "stalled: no data for 0.3s" and out.record.output_tokens == 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = asyncio.run(_lean(_request(f"http://127.0.0.1:{port}")))
    assert out.error is not None and out.error.startswith("connection failed") and out.status is None


def test_https_credentials_and_proxies_stay_with_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    assert http1.target("http://127.0.0.1:8000/v1/completions?x=1") == http1.Target(
        "127.0.0.1", 8000, "127.0.0.1:8000", "/v1/completions?x=1"
    )
    assert http1.target("http://[::1]/v1/chat").host == "::1"  # type: ignore[union-attr]
    assert http1.target("https://api.example.com/v1/completions") is None
    assert http1.target("http://user:pw@host:1/v1") is None
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert http1.target("http://engine:8000/v1") is None
    monkeypatch.setenv("NO_PROXY", "engine")
    assert http1.target("http://engine:8000/v1") is not None


# --- a raw server, to send exactly the bytes a test needs ----------------------------------------------


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, list[float]], Awaitable[None]]


@contextmanager
def raw_server(handler: Handler) -> Iterator[tuple[str, list[float], list[int]]]:
    """A loopback server on its own thread's loop: (URL, the send stamps it records, connections seen)."""
    import threading

    loop = asyncio.new_event_loop()
    stamps: list[float] = []
    connections: list[int] = []
    ready = threading.Event()
    port: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            await handler(reader, writer, stamps)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def start() -> asyncio.AbstractServer:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port.append(server.sockets[0].getsockname()[1])
        ready.set()
        return server

    def run() -> None:
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(start())
        loop.run_forever()
        server.close()
        loop.run_until_complete(server.wait_closed())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{port[0]}", stamps, connections
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    await reader.readexactly(length)
    return head


def _event(i: int, finish: str | None = None) -> bytes:
    chunk = {"choices": [{"index": 0, "text": f" t{i}", "token_ids": [i], "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


class Stamped(StreamState):
    """Records, for every event, the stamp it got and the clock when it was parsed."""

    seen: ClassVar[list[tuple[float, float]]] = []

    def handle(self, data: bytes, now: float) -> bool:
        Stamped.seen.append((now, time.perf_counter()))
        return super().handle(data, now)


def test_a_chunk_is_stamped_when_it_arrives_not_when_the_next_one_comes() -> None:
    async def handler(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stamps: list[float]
    ) -> None:
        await _read_request(reader)
        writer.write(SSE_HEAD + _chunked(_event(0)))
        await writer.drain()
        stamps.append(time.perf_counter())  # chunk 0 is out
        await asyncio.sleep(0.3)  # nothing more for a while
        stamps.append(time.perf_counter())  # chunk 1 leaves now
        writer.write(_chunked(_event(1, "length")) + _chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()

    Stamped.seen = []
    with raw_server(handler) as (url, stamps, _):
        out = asyncio.run(_lean(_request(url), state_type=Stamped))
    assert out.ok and [e.tokens for e in out.record.emissions] == [1, 1]
    first = out.started_at + out.record.emissions[0].t
    second = out.started_at + out.record.emissions[1].t
    # Chunk 0's stamp lies between its send and chunk 1's send (the same clock in both threads): it was
    # taken on arrival, not when the stream went on or ended.
    assert stamps[0] - 0.05 <= first < stamps[1] <= second
    # Every stamp precedes the parsing of its event.
    assert all(stamp <= parsed for stamp, parsed in Stamped.seen)


def test_the_stamp_is_taken_before_the_http_layer_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[float] = []
    original = http1.Exchange._parse

    def spy(self: http1.Exchange, data: bytes, now: float) -> None:
        parsed.append(time.perf_counter())
        assert now <= parsed[-1]  # stamped before the first byte was parsed
        original(self, data, now)

    monkeypatch.setattr(http1.Exchange, "_parse", spy)

    async def handler(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stamps: list[float]
    ) -> None:
        await _read_request(reader)
        for i in range(3):
            writer.write((SSE_HEAD if i == 0 else b"") + _chunked(_event(i)))
            await writer.drain()
            await asyncio.sleep(0.02)
        writer.write(_chunked(_event(3, "stop")) + b"0\r\n\r\n")

    with raw_server(handler) as (url, _, _):
        out = asyncio.run(_lean(_request(url)))
    assert out.ok and out.record.output_tokens == 4 and len(parsed) >= 2


def test_connections_are_kept_alive_and_a_stale_one_is_retried_once() -> None:
    served = 0

    async def handler(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stamps: list[float]
    ) -> None:
        nonlocal served
        while True:
            await _read_request(reader)
            served += 1
            if served == 3:
                return  # closes the kept-alive connection without answering: a stale connection
            writer.write(
                SSE_HEAD + _chunked(_event(0, "length")) + _chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n"
            )
            await writer.drain()

    async def go(url: str) -> list[RequestOutcome]:
        shards = ClientShards()
        try:
            return [await stream_request(shards.get(0), _request(url)) for _ in range(4)]
        finally:
            await shards.aclose()

    with raw_server(handler) as (url, _, connections):
        outcomes = asyncio.run(go(url))
    assert [o.ok for o in outcomes] == [True] * 4
    assert served == 5  # the third request was sent twice: the first time it met a closed connection
    assert len(connections) == 2  # one kept alive for three requests, one opened for the retry onwards


def test_a_head_and_a_cut_body_in_one_read_keep_what_came_and_are_not_sent_again() -> None:
    served = 0

    async def handler(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stamps: list[float]
    ) -> None:
        nonlocal served
        await _read_request(reader)
        served += 1
        writer.write(SSE_HEAD + _chunked(_event(0)) + _chunked(_event(1)) + b"5\r\ndata:")  # then it is gone
        await writer.drain()

    with raw_server(handler) as (url, _, _):
        out = asyncio.run(_lean(_request(url)))
    assert served == 1  # answered, so never retried as a stale connection
    assert out.status == 200 and out.record.output_tokens == 2 and out.partial
    assert out.error is not None and out.error.startswith(
        "connection closed mid-stream: peer closed connection"
    )


def test_a_full_pool_makes_requests_wait_their_turn() -> None:
    in_flight, most = 0, 0

    async def handler(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stamps: list[float]
    ) -> None:
        nonlocal in_flight, most
        while True:
            await _read_request(reader)
            in_flight += 1
            most = max(most, in_flight)
            writer.write(SSE_HEAD + _chunked(_event(0)))
            await writer.drain()
            await asyncio.sleep(0.05)
            in_flight -= 1
            writer.write(_chunked(_event(1, "length")) + b"0\r\n\r\n")
            await writer.drain()

    async def go(url: str) -> list[RequestOutcome]:
        shards = ClientShards(per_shard=1)  # pools of 1 + 2 connections
        try:
            return await asyncio.gather(*(stream_request(shards.get(0), _request(url)) for _ in range(7)))
        finally:
            await shards.aclose()

    with raw_server(handler) as (url, _, connections):
        outcomes = asyncio.run(go(url))
    assert [o.record.output_tokens for o in outcomes] == [2] * 7 and all(o.ok for o in outcomes)
    assert len(connections) == 3 and most == 3  # never more than the pool's cap at once


@pytest.mark.parametrize("framing", ["content-length", "close", "gzip", "extensions"])
def test_other_body_framings(framing: str) -> None:
    body = _event(0) + _event(1) + _event(2, "stop") + b"data: [DONE]\n\n"

    async def handler(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stamps: list[float]
    ) -> None:
        await _read_request(reader)
        head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        if framing == "content-length":
            writer.write(f"{head}content-length: {len(body)}\r\n\r\n".encode() + body)
        elif framing == "close":
            writer.write(f"{head}connection: close\r\n\r\n".encode() + body)
        elif framing == "gzip":
            packed = gzip.compress(body)
            writer.write(f"{head}content-encoding: gzip\r\ncontent-length: {len(packed)}\r\n\r\n".encode())
            writer.write(packed)
        else:
            writer.write(f"{head}transfer-encoding: chunked\r\n\r\n".encode())
            writer.write(b"%x;name=value\r\n%s\r\n0\r\nx-trailer: 1\r\n\r\n" % (len(body), body))
        await writer.drain()
        if framing == "close":
            writer.close()

    with raw_server(handler) as (url, _, _):
        out = asyncio.run(_lean(_request(url)))
    assert out.ok, out.error
    assert [e.tokens for e in out.record.emissions] == [1, 1, 1] and out.text == " t0 t1 t2"


def test_a_cancelled_request_keeps_what_arrived_and_closes_its_connection() -> None:
    async def handler(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stamps: list[float]
    ) -> None:
        await _read_request(reader)
        writer.write(SSE_HEAD + _chunked(_event(0)))
        await writer.drain()
        await reader.read()  # until the client goes
        stamps.append(time.perf_counter())

    async def go(url: str) -> list[RequestOutcome]:
        shards = ClientShards()
        cancelled: list[RequestOutcome] = []
        task = asyncio.create_task(stream_request(shards.get(0), _request(url), on_cancel=cancelled.append))
        for _ in range(500):
            await asyncio.sleep(0.01)
            if shards.get(0).pool._all:
                break
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await shards.aclose()
        return cancelled

    with raw_server(handler) as (url, stamps, _):
        cancelled = asyncio.run(go(url))
        for _ in range(200):
            if stamps:
                break
            time.sleep(0.01)
    assert len(cancelled) == 1 and cancelled[0].record.output_tokens == 1
    assert cancelled[0].error is not None and cancelled[0].error.startswith("interrupted")
    assert stamps  # the server saw the connection close


def test_a_load_run_counts_the_same_through_either_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompts = tuple(Prompt(f"p{i}", "general", f"prompt {i}", None, None, i + 1) for i in range(6))
    behaviour = Behaviour(fail_every=5, chunks=[1, 3, 2, 4])
    results = []
    with ServerThread(fake_openai(behaviour), graceful_timeout=2) as server:
        for lean in (True, False):
            monkeypatch.setattr("specmeter.load.loop.ClientShards", lambda lean=lean: ClientShards(lean=lean))
            cfg = LoadConfig(endpoint=server.url, prompts=prompts, phases=[Phase(concurrency=3)], limit=12,
                             warmup=0, warmup_per_level=0, scrape_metrics=False,
                             client_processes=1)  # fmt: skip
            behaviour.requests = 0
            results.append(asyncio.run(execute_load(cfg, config={}, json_out=tmp_path / f"{lean}.json")))
    keys = ("requests_sent", "completed", "partial", "failed", "errors", "token_sources", "malformed_lines",
            "client_processes")  # fmt: skip
    counted = []
    for result in results:
        load, summary = result["candidates"][0]["load"], result["candidates"][0]["summary"]
        counted.append(({k: load[k] for k in keys}, summary["emitted_tokens"]))
    assert counted[0] == counted[1]
    assert counted[0][0]["requests_sent"] == 12 and counted[0][0]["failed"] == 2
