"""One streamed OpenAI request measured from outside, as the user feels it.

Every SSE event is time-stamped when its bytes arrive. Tokens per chunk come from what the server says —
vLLM's ``token_ids`` per choice, the running ``usage.completion_tokens`` of ``continuous_usage_stats``,
``logprobs`` entries, llama.cpp's running ``timings.predicted_n`` — never from the number of chunks, because
a speculative server sends several tokens per chunk. When a server gives none of these per chunk, the final
``usage`` is spread over the content chunks and the record says so (``token_source = "usage_distributed"``):
TTFT and per-chunk gaps stay exact, per-token gaps become approximate.

Failures never lose what was measured: the outcome keeps the partial record (finish reason
``"interrupted"``) and the reason in ``error`` — refused connections, HTTP errors (the body's OpenAI error
message included), stalls (no bytes for ``stall_timeout``), a stream that ends without ``finish_reason`` or
``[DONE]``, error events inside the stream. Lines that are not valid SSE or JSON are counted and skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any, ClassVar

import httpx

from specmeter.load import http1
from specmeter.metrics.records import Emission, FinishReason, RequestRecord
from specmeter.monitoring.acceptance import steps_from_report
from specmeter.monitoring.adapters import request_report
from specmeter.wire.sse import DONE, SSEParser

__all__ = [
    "ClientShards", "RequestOutcome", "Shard", "StreamRequest", "StreamState", "TooDeep", "encode_body",
    "parse_json", "printable", "stream_request",
]  # fmt: skip

try:
    import sniffio  # noqa: F401
except ImportError:
    # httpcore tries `import sniffio` on every connection-pool operation; without the package each try
    # searches sys.path again (a measurable share of the client's CPU under load). A None entry makes the
    # same import fail at once, with the same result.
    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]

DRAIN_TIMEOUT = 1.0  # seconds to finish reading a body after [DONE] before giving the connection up
# A server's bytes are read within bounds: an SSE event longer than this (no end of line or event, say) and
# an error body beyond the other would otherwise grow the client's memory for as long as the server sends.
MAX_EVENT_BYTES = 64 << 20  # vLLM's first chunk with return_token_ids of a long prompt takes a few MiB
MAX_ERROR_BODY = 64 << 10  # the message shown is its first 200 characters
_FINISH: dict[str, FinishReason] = {
    "stop": "eos",
    "eos_token": "eos",
    "tool_calls": "eos",
    "length": "length",
}


@dataclass(frozen=True)
class StreamRequest:
    id: str
    category: str
    url: str
    payload: Mapping[str, Any]
    prompt_tokens: int | None = None  # used when the server reports no usage


@dataclass(frozen=True)
class RequestOutcome:
    record: RequestRecord  # record.error says why the request failed, None when it did not
    status: int | None = None
    token_source: str = "none"  # token_ids, usage, logprobs, timings, usage_distributed, mixed or none
    malformed_lines: int = 0
    server_spec: Mapping[str, Any] | None = None  # per-request acceptance the server reported
    started_at: float = 0.0  # perf_counter() when the request was sent (absolute, same clock as emissions)
    ended_at: float = (
        0.0  # perf_counter() when the stream was over (ended, failed or cut): in flight until then
    )
    first_payload: Mapping[str, Any] | None = None  # the first chunk that carried tokens
    raw_finish_reason: str | None = None
    exact_steps: bool = False  # the record's steps were rebuilt exactly from the server's per-request report
    text: str = ""  # the answer's streamed content (no reasoning): a conversation's next turn holds it
    temperature: float | None = None  # as sent: load results are broken down by it

    @property
    def error(self) -> str | None:
        return self.record.error

    @property
    def ok(self) -> bool:
        return self.error is None and self.record.finish_reason != "interrupted"

    @property
    def partial(self) -> bool:
        return not self.ok and self.record.output_tokens > 0


# What to do about HTTP 401/403, wherever specmeter meets one as a client (load, its model lookup).
AUTH_HINT = (
    "the server wants an API key: pass it with --api-key or the SPECMETER_API_KEY environment variable"
)


class TooDeep(ValueError):
    """JSON nested deeper than the parser's recursion allows (``[`` × 100000): valid, but unreadable."""


def parse_json(data: bytes | str) -> Any:
    """``json.loads`` whose every failure is a ValueError: ``TooDeep`` for nesting beyond the parser's depth
    (a RecursionError otherwise, which no caller expects from a server's bytes), plain ValueError for the rest
    (bad JSON or UTF-8, integers of more than 4300 digits)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise TooDeep("JSON nested too deeply to read") from None


def printable(text: str) -> str:
    """``text`` with lone surrogates (``"\\ud800"``: JSON can carry them, UTF-8 cannot) as backslash escapes.

    A server's streamed text, error message or finish reason, and a golden set's id, may hold one; written
    as is, it stopped ``load`` at the first CSV row (issue 29). Everything else passes unchanged."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def encode_body(payload: Mapping[str, Any]) -> bytes:
    """The request's JSON body as httpx would send it (compact, UTF-8, no NaN); ValueError with one line when
    it cannot be sent: a lone surrogate (a golden set's ``"\\ud800"``) has no UTF-8, NaN no JSON."""
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        char = e.object[e.start : e.start + 1] if isinstance(e.object, str) else "?"
        raise ValueError(
            f"the request holds a lone surrogate ({printable(char)}), which UTF-8 cannot encode"
        ) from None
    except (ValueError, TypeError, RecursionError) as e:
        raise ValueError(f"the request body is not JSON ({printable(str(e))})") from None


def _error_message(body: bytes) -> str:
    try:
        obj = parse_json(body)
    except ValueError:
        return body.decode("utf-8", "replace").strip()[:200]
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(err, dict) and "message" in err:
        return str(err["message"])
    if isinstance(err, str):
        return err
    return json.dumps(obj)[:200]


MAX_TOKEN_COUNT = 2**31 - 1  # a server's token count beyond int32: no context holds it


def impossible_count(block: object, name: str, keys: tuple[str, ...]) -> str | None:
    """Why a server's token count in ``block`` (``usage``, ``timings``) cannot be right, or None.

    A negative count (or one beyond ``MAX_TOKEN_COUNT``) would be written as negative tokens/s and make
    ``report`` refuse the file (issue 29), so the request is recorded as failed with this reason instead."""
    if not isinstance(block, dict):
        return None
    for key in keys:
        value = block.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= MAX_TOKEN_COUNT:
            shown = str(value) if abs(value) < 10**12 else f"{value:.3g}"
            return f"impossible count from the server: {name}.{key} = {shown}"
    return None


def _count(value: object) -> int | None:
    return len(value) if isinstance(value, list) else None


@dataclass
class StreamState:
    """Everything seen so far in one OpenAI stream; survives cancellation so partial results are kept.

    Another wire format (``load.messages_stream``) subclasses it with its own ``handle``, finish reasons
    and wording; the outcome (token sources, distribution of a final usage, failures) is shared.
    """

    FINISH: ClassVar[Mapping[str, FinishReason]] = _FINISH
    UNFINISHED: ClassVar[str] = "stream ended without finish_reason or [DONE] (server closed the connection)"

    t0: float
    chunks: list[list[Any]] = field(default_factory=list)  # [arrival time, tokens or None (unknown)]
    sources: set[str] = field(default_factory=set)
    usage_total: int | None = None
    prompt_tokens: int | None = None
    usage_running: bool = False
    predicted: int | None = None
    finish: str | None = None
    done: bool = False
    error: str | None = None
    status: int | None = None
    spec: Mapping[str, Any] | None = None
    first_payload: Mapping[str, Any] | None = None
    malformed: int = 0
    content: list[str] = field(default_factory=list)
    unanswered: bool = False  # the connection closed before any response: the request was never served
    sent: bool = False  # the request's headers went to the server (httpcore's trace says when)

    def handle(self, data: bytes, now: float) -> bool:
        """Process one SSE data payload; True when the stream is over."""
        if data == DONE:
            self.done = True
            return True
        try:
            obj = parse_json(data)
        except TooDeep as e:  # valid JSON the client cannot read: the request fails, saying why
            self.error = f"unreadable event in stream: {e}"
            return True
        except ValueError:
            self.malformed += 1
            return False
        if not isinstance(obj, dict):
            self.malformed += 1
            return False
        if obj.get("error"):
            err = obj["error"]
            self.error = "error event in stream: " + (
                str(err.get("message")) if isinstance(err, dict) else str(err)
            )
            return True
        tokens: int | None = None
        text = False
        choices = obj.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if not isinstance(choice, dict):
                    continue
                n = _count(choice.get("token_ids"))
                if n is not None:
                    tokens = (tokens or 0) + n
                    self.sources.add("token_ids")
                else:
                    logprobs = choice.get("logprobs")
                    if isinstance(logprobs, dict):
                        n = _count(logprobs.get("content")) or _count(logprobs.get("tokens"))
                        if n is not None:
                            tokens = (tokens or 0) + n
                            self.sources.add("logprobs")
                delta = choice.get("delta")
                piece = choice.get("text") or (
                    (delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning"))
                    if isinstance(delta, dict)
                    else None
                )
                text = text or bool(piece)
                answer = choice.get("text") or (delta.get("content") if isinstance(delta, dict) else None)
                if isinstance(answer, str):
                    self.content.append(answer)
                if choice.get("finish_reason"):
                    self.finish = str(choice["finish_reason"])
        has_choices = bool(choices)
        usage = obj.get("usage")
        timings = obj.get("timings")
        impossible = impossible_count(usage, "usage", ("completion_tokens", "prompt_tokens")) or (
            impossible_count(timings, "timings", ("predicted_n",))
        )
        if impossible is not None:  # the server's count cannot be right: the request fails, saying why
            self.error = impossible
            return True
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            total = usage["completion_tokens"]
            # Usage on the first chunks means continuous usage stats (a running total per chunk); usage that
            # first shows up after content is the final total and says nothing about this chunk.
            if not self.usage_running and not self.chunks:
                self.usage_running = True
            if self.usage_running and tokens is None and has_choices:
                tokens = total - (self.usage_total or 0)
                self.sources.add("usage")
            self.usage_total = total
            if isinstance(usage.get("prompt_tokens"), int):
                self.prompt_tokens = usage["prompt_tokens"]
        if isinstance(timings, dict):
            predicted = timings.get("predicted_n")
            if isinstance(predicted, int):
                if tokens is None and has_choices and self.predicted is not None:
                    tokens = predicted - self.predicted
                    self.sources.add("timings")
                self.predicted = predicted
        # request_report reads "metrics", "timings" or a "meta_info" (top level or in a choice): a chunk with
        # none of them (almost every one) skips it — a fifth of this method's time per chunk otherwise.
        if (
            "metrics" in obj
            or timings is not None
            or "meta_info" in obj
            or (isinstance(choices, list) and any(isinstance(c, dict) and "meta_info" in c for c in choices))
        ):
            report = request_report(obj)
            if report is not None:
                self.spec = report
        if (tokens is not None and tokens > 0) or (tokens is None and text):
            self.chunks.append([now, tokens])
            if self.first_payload is None:
                self.first_payload = obj
        return False

    def outcome(self, request: StreamRequest) -> RequestOutcome:
        known = sum(c[1] for c in self.chunks if c[1] is not None)
        unknown = [c for c in self.chunks if c[1] is None]
        source = "mixed" if len(self.sources) > 1 else next(iter(self.sources), "none")
        if unknown:
            if self.usage_total is not None:
                # Spread the remaining total over the chunks that did not say (earlier chunks get the extra).
                remaining = max(self.usage_total - known, 0)
                base, extra = divmod(remaining, len(unknown))
                for i, c in enumerate(unknown):
                    c[1] = base + (1 if i < extra else 0)
                source = "usage_distributed"
            else:
                for c in unknown:
                    c[1] = 0
                source = "none" if not known else source
        output = self.usage_total if self.usage_total is not None else known
        emissions = tuple(Emission(t - self.t0, n) for t, n in self.chunks if n > 0)
        ended = perf_counter()
        elapsed = ended - self.t0
        error = self.error
        if error is None and not self.done and self.finish is None and self.status == 200:
            error = self.UNFINISHED
        finish: FinishReason = (
            "interrupted" if error is not None else self.FINISH.get(self.finish or "", "interrupted")
        )
        if error is None and finish == "interrupted":
            error = f"server finished with reason {self.finish!r}"
        steps = steps_from_report(self.spec) if self.spec is not None else None
        record = RequestRecord(
            id=printable(request.id),
            category=printable(request.category),
            prompt_tokens=self.prompt_tokens or request.prompt_tokens or 0,
            output_tokens=output,
            latency_s=emissions[-1].t if emissions else elapsed,
            ttft_s=emissions[0].t if emissions else elapsed,
            prefill_s=0.0,  # not observable from outside
            steps=steps or (),
            emissions=emissions,
            finish_reason=finish,
            error=None if error is None else printable(error),
        )
        return RequestOutcome(
            record=record,
            status=self.status,
            token_source=source,
            malformed_lines=self.malformed,
            server_spec=self.spec,
            started_at=self.t0,
            ended_at=ended,
            first_payload=self.first_payload,
            raw_finish_reason=None if self.finish is None else printable(self.finish),
            exact_steps=steps is not None,
            text=printable("".join(self.content)),
            temperature=_temperature(request.payload.get("temperature")),
        )


def _temperature(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


async def _read_at_most(response: httpx.Response, limit: int) -> bytes:
    """The first ``limit`` bytes of a body (an error's): the rest is never read, however long it runs."""
    parts: list[bytes] = []
    size = 0
    async for part in response.aiter_bytes():
        parts.append(part)
        size += len(part)
        if size >= limit:
            break
    return b"".join(parts)[:limit]


async def _drain(body: AsyncIterator[bytes]) -> None:
    async for _ in body:
        pass


async def _run(
    client: httpx.AsyncClient,
    request: StreamRequest,
    state: StreamState,
    headers: Mapping[str, str] | None,
    timeout: httpx.Timeout,
    stall_timeout: float,
) -> None:
    parser = SSEParser()

    async def trace(event: str, info: Mapping[str, Any]) -> None:
        # httpcore reports "http11.send_request_headers.started" (or http2's) as it writes the request on an
        # open connection. Before that (waiting for a pooled connection, connecting) a cancelled request
        # never reaches the server; from then on it does — the write to a local socket completes at once,
        # and a cancel that lands while it is awaited (before ".complete") still leaves the bytes sent.
        if event.endswith("send_request_headers.started"):
            state.sent = True

    try:
        body = encode_body(request.payload)
    except ValueError as e:  # never sent: recorded as failed, saying why, and the run goes on
        state.error = f"not sent: {e}"
        return
    headers = {"Content-Type": "application/json", **(headers or {})}
    try:
        async with client.stream(
            "POST", request.url, content=body, headers=headers, timeout=timeout, extensions={"trace": trace},
        ) as response:  # fmt: skip
            state.status = response.status_code
            if response.status_code != 200:
                error_body = await _read_at_most(response, MAX_ERROR_BODY)
                state.error = f"HTTP {response.status_code}: {_error_message(error_body)}"
                if response.status_code in (401, 403):
                    state.error += f" ({AUTH_HINT})"
                return
            # Raw bytes skip httpx's decoder layer (measurably cheaper per chunk); compressed bodies need it.
            encoding = response.headers.get("content-encoding", "identity").lower()
            stream = response.aiter_raw() if encoding in ("", "identity") else response.aiter_bytes()
            finished = False
            unfinished = 0  # bytes read since the last complete event
            async for raw in stream:
                now = perf_counter()
                events = parser.feed(raw)
                unfinished = 0 if events else unfinished + len(raw)
                if unfinished > MAX_EVENT_BYTES:
                    state.error = f"unreadable stream: an event longer than {MAX_EVENT_BYTES} bytes"
                    return
                for data in events:
                    if state.handle(data, now):
                        finished = True
                        break
                if finished:
                    break
                # Yield after every read: httpx hands over one HTTP chunk at a time without suspending while
                # bytes are buffered, so a stream with a backlog would be read to exhaustion while every
                # other stream (and its arrival stamps) waits.
                await asyncio.sleep(0)
            if finished:
                # Read what is left (normally just the chunked terminator) so the connection returns to the
                # pool instead of being closed; bounded, because a server may hold the stream open.
                with contextlib.suppress(httpx.HTTPError, asyncio.TimeoutError):
                    await asyncio.wait_for(_drain(stream), DRAIN_TIMEOUT)
                return
            now = perf_counter()
            for data in parser.close():
                if state.handle(data, now):
                    break
    except httpx.ConnectError as e:
        state.error = f"connection failed: {printable(str(e)) or 'connection refused'}"
    except httpx.ReadTimeout:
        state.error = f"stalled: no data for {stall_timeout:g}s"
    except httpx.ConnectTimeout:  # httpx's timeouts carry no message: say which and how long
        state.error = f"connection failed: timed out after {timeout.connect:g} s"
    except httpx.WriteTimeout:
        state.error = f"timeout: sending the request timed out after {timeout.write:g} s"
    except httpx.TimeoutException as e:
        state.error = f"timeout: {type(e).__name__}"
    except httpx.RemoteProtocolError as e:
        state.error = f"connection closed mid-stream: {e}"
        state.unanswered = state.status is None and not state.chunks
    except httpx.HTTPError as e:
        state.error = f"{type(e).__name__}: {e}"
    finally:
        state.malformed += parser.malformed


async def _run_http1(
    shard: Shard,
    target: http1.Target,
    request: StreamRequest,
    state: StreamState,
    headers: Mapping[str, str] | None,
    connect_timeout: float,
    stall_timeout: float,
) -> None:
    """``_run`` on the lean HTTP/1.1 client (``load.http1``): the same reading, failures and wording.

    Each piece of the body is read inside the socket's read callback with the stamp ``data_received`` took
    before any parsing, so a chunk's arrival time no longer waits behind the HTTP stack's layers or behind
    other streams' tasks (docs/serving.md, "Benchmark")."""
    parser = SSEParser()
    try:
        body = encode_body(request.payload)
    except ValueError as e:  # never sent: recorded as failed, saying why, and the run goes on
        state.error = f"not sent: {e}"
        return
    headers = {"Content-Type": "application/json", **(headers or {})}

    def sent() -> None:
        state.sent = True  # the request is being written to an open connection (httpx's trace event)

    exchange: http1.Exchange | None = None
    try:
        exchange = await shard.pool.send(
            target, "POST", headers, body, connect_timeout=connect_timeout, write_timeout=connect_timeout,
            stall_timeout=stall_timeout, on_sent=sent,
        )  # fmt: skip
        state.status = exchange.status
        if exchange.status != 200:
            error_body = await exchange.read_at_most(MAX_ERROR_BODY)
            state.error = f"HTTP {exchange.status}: {_error_message(error_body)}"
            if exchange.status in (401, 403):
                state.error += f" ({AUTH_HINT})"
            return
        unfinished = 0  # bytes read since the last complete event
        too_long = False
        limit = MAX_EVENT_BYTES

        def on_data(raw: bytes, now: float) -> bool:
            nonlocal unfinished, too_long
            events = parser.feed(raw)
            unfinished = 0 if events else unfinished + len(raw)
            if unfinished > limit:
                too_long = True
                return True
            return any(state.handle(data, now) for data in events)  # stops at the first that ends it

        if await exchange.stream(on_data):
            if too_long:
                state.error = f"unreadable stream: an event longer than {limit} bytes"
                return
            # Read what is left (normally just the chunked terminator) so the connection returns to the
            # pool instead of being closed; bounded, because a server may hold the stream open.
            await exchange.drain(DRAIN_TIMEOUT)
            return
        now = perf_counter()
        for data in parser.close():
            if state.handle(data, now):
                break
    except http1.ConnectFailed as e:
        state.error = f"connection failed: {printable(str(e)) or 'connection refused'}"
    except http1.Stalled:
        state.error = f"stalled: no data for {stall_timeout:g}s"
    except http1.ConnectTimedOut:
        state.error = f"connection failed: timed out after {connect_timeout:g} s"
    except http1.WriteTimedOut:
        state.error = f"timeout: sending the request timed out after {connect_timeout:g} s"
    except http1.Disconnected as e:
        state.error = f"connection closed mid-stream: {printable(str(e))}"
        state.unanswered = state.status is None and not state.chunks
    except http1.ReadFailed as e:
        state.error = f"ReadError: {printable(str(e))}"
    finally:
        state.malformed += parser.malformed
        if exchange is not None:
            shard.pool.release(exchange)


async def stream_request(
    client: httpx.AsyncClient | Shard,
    request: StreamRequest,
    *,
    headers: Mapping[str, str] | None = None,
    stall_timeout: float = 60.0,
    total_timeout: float | None = None,
    connect_timeout: float = 10.0,
    on_cancel: Callable[[RequestOutcome], None] | None = None,
    state_type: type[StreamState] = StreamState,
) -> RequestOutcome:
    """Send one streaming request and measure it; never raises for server or network failures.

    ``state_type`` reads the stream's wire format (OpenAI's by default). Cancellation (Ctrl-C) propagates:
    a request cut short by the user is not a measurement. If it had reached the server (its headers were
    written), the server received it all the same, so ``on_cancel`` gets its outcome first
    (``interrupted``, with whatever had arrived), for the caller's records to count every request the
    server received; one cancelled before that is not recorded.

    ``client`` is an httpx client, or a ``Shard`` (what ``load`` passes): its lean HTTP/1.1 pool reads a
    plain ``http://`` URL (``load.http1``: stamps at the socket read), its httpx client every other one.
    """
    timeout = httpx.Timeout(connect=connect_timeout, read=stall_timeout, write=connect_timeout, pool=None)
    target = client.target(request.url) if isinstance(client, Shard) else None
    for attempt in range(2):
        state = state_type(t0=perf_counter())
        if isinstance(client, Shard) and target is not None:
            run = _run_http1(client, target, request, state, headers, connect_timeout, stall_timeout)
        else:
            http = client.httpx if isinstance(client, Shard) else client
            run = _run(http, request, state, headers, timeout, stall_timeout)
        try:
            if total_timeout is None:
                await run
            else:
                await asyncio.wait_for(run, total_timeout)
        except asyncio.TimeoutError:
            state.error = f"timeout: the request took longer than {total_timeout:g}s"
        except asyncio.CancelledError:
            # Only a request that reached the server is one it received; one cancelled while it waited for
            # a connection or was being written never existed for the server, and is not recorded.
            if on_cancel is not None and state.sent:
                state.error = "interrupted: Ctrl-C while the request was in flight"
                on_cancel(state.outcome(request))
            raise
        # A pooled keep-alive connection the server closed as the request went out ("Server disconnected
        # without sending a response": no status, no byte) never reached the server — llama-server logs no
        # task for it. Send it once more on a fresh connection, as HTTP clients do for stale connections;
        # its clock restarts, since nothing of the first attempt was the server's work.
        if not (state.unanswered and attempt == 0):
            break
    return state.outcome(request)


class Shard:
    """The connections of one group of slots: a lean HTTP/1.1 pool (``load.http1``) for plain ``http://``
    URLs and an httpx client for the rest (``https://``, credentials in the URL, a proxy)."""

    def __init__(self, httpx_client: httpx.AsyncClient, size: int, lean: bool = True) -> None:
        self.httpx = httpx_client
        self.pool = http1.Pool(size)
        self.lean = lean  # False: httpx reads every URL (benchmarks/load_client.py compares the two)
        self._targets: dict[str, http1.Target | None] = {}

    def target(self, url: str) -> http1.Target | None:
        """Where the lean client sends ``url``; None when httpx must (``http1.target``); kept per URL."""
        try:
            return self._targets[url]
        except KeyError:
            found = self._targets[url] = http1.target(url) if self.lean else None
            return found

    async def aclose(self) -> None:
        await self.pool.aclose()
        await self.httpx.aclose()


class ClientShards:
    """Several small connection pools instead of one big one, picked by a slot number (a worker, a request).

    httpcore scans every pooled connection on every request start and end, so one client holding hundreds
    of streaming connections spends more CPU on bookkeeping than on the streams (measured in
    benchmarks/load_client.py: about 4x fewer chunks/s at 64 streams). Each shard (``Shard``) holds a lean
    HTTP/1.1 pool and an httpx client, both sized for its slots; they are created on first use.
    """

    def __init__(self, per_shard: int = 8, lean: bool = True, **client_kwargs: object) -> None:
        self.per_shard = max(1, per_shard)
        self.lean = lean
        self._kwargs = client_kwargs
        self._clients: dict[int, Shard] = {}
        self._ssl: ssl.SSLContext | None = None

    def get(self, slot: int) -> Shard:
        shard = slot // self.per_shard
        client = self._clients.get(shard)
        if client is None:
            if self._ssl is None:
                # One SSL context for all shards: building one loads the CA store (tens of ms of CPU), which
                # would stall every stream of the event loop each time a shard is created.
                self._ssl = httpx.create_ssl_context()
            size = self.per_shard + 2
            limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
            http = httpx.AsyncClient(limits=limits, verify=self._ssl, **self._kwargs)  # type: ignore[arg-type]
            client = self._clients[shard] = Shard(http, size, self.lean)
        return client

    def prepare(self, slots: int) -> None:
        """Create the clients for slots 0..slots-1 now, outside any measured interval."""
        for slot in range(0, slots, self.per_shard):
            self.get(slot)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
