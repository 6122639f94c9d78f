"""``specmeter serve``: an OpenAI-compatible HTTP server (Starlette) around a single-stream engine.

Routes: ``POST /v1/completions``, ``POST /v1/chat/completions`` (streaming SSE or one JSON body),
``POST /v1/messages`` (Anthropic's Messages API, streaming or not: ``wire.messages``),
``GET /v1/models``, ``GET /health``, ``GET /metrics`` (Prometheus, vLLM's names). With an API key, the
``/v1`` routes want ``Authorization: Bearer KEY`` (``/v1/messages`` also ``x-api-key: KEY``); health and
metrics stay open, as in vLLM.

Each request becomes a :class:`~specmeter.server.worker.Job` on the worker's FIFO queue; engine steps
come back through ``loop.call_soon_threadsafe`` into an ``asyncio.Queue`` the response reads from, so a
streamed chunk carries exactly the tokens of one engine step (several with speculation, as in vLLM). A
task waits for the client's ``http.disconnect`` and sets the job's cancel flag, which stops a queued job
before it starts and a running one after its current step.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from specmeter.metrics.records import Emission, RequestRecord
from specmeter.metrics.warmup import is_warmup
from specmeter.report.files import RequestSink
from specmeter.server.engine import Decoding, GenerationResult, ServingEngine
from specmeter.server.messages import stream_message
from specmeter.server.prom import ServerMetrics
from specmeter.server.responses import (
    FINISH_REASONS,
    TextStream,
    final_response,
    stream_chunk,
)
from specmeter.server.responses import spec_metrics as spec_metrics_of
from specmeter.server.responses import usage as usage_of
from specmeter.server.worker import GenerationWorker, Job
from specmeter.wire.messages import error_body, message_body, parse_messages_request
from specmeter.wire.openai import APIError, ParsedRequest, parse_request, surrogate_path
from specmeter.wire.sse import encode_data, encode_done

__all__ = ["BODY_BYTES_PER_POSITION", "MIN_BODY_BYTES", "ServeConfig", "create_app"]

# The server's log: uvicorn's own logger, so these lines appear where uvicorn's do, in its format.
server_log = logging.getLogger("uvicorn.error")

MIN_BODY_BYTES = 1024  # the smallest --max-body-bytes (a request with a short prompt fits)
DEFAULT_BODY_BYTES = 2**20  # 1 MiB: the default body limit, unless the context asks for more
# A prompt that fills the context, as JSON: ~4 characters a token, each up to 6 bytes escaped (\uXXXX), or
# token ids of up to 7 digits and ", ": 32 bytes a position holds either with room to spare.
BODY_BYTES_PER_POSITION = 32

Kind = Literal["completion", "chat"]
Events = asyncio.Queue[tuple[Any, ...]]  # ("tokens", ids), ("done", result, error) or ("disconnect",)
Watch = Callable[[], Coroutine[Any, Any, None]]  # returns once the client has disconnected


@dataclass(frozen=True)
class ServeConfig:
    api_key: str | None = None
    log_path: Path | None = None  # per-request JSONL log (the field report's three fields)
    log_prompts: bool = False  # also log each request's prompt or messages (for `specmeter golden`)
    log_output: bool = False  # also log output ids and text, prompt ids, finish, limit, model (`replay`)
    default_max_tokens: int = 256  # when a request gives no max_tokens (capped by the context)
    max_waiting: int = 1024  # queued requests beyond this get 429
    max_batch: int = 1  # sequences decoded together (continuous batching); 1 = one at a time, FIFO
    per_request_metrics: bool = True  # vLLM-style metrics.speculative_decoding in responses
    max_body_bytes: int | None = None  # request bodies beyond this get 413; None: body_limit's default
    body_timeout_s: float = 60.0  # a request body not received within this gets 408

    def __post_init__(self) -> None:
        if self.max_body_bytes is not None and self.max_body_bytes < MIN_BODY_BYTES:
            raise ValueError(f"max_body_bytes must be >= {MIN_BODY_BYTES}, got {self.max_body_bytes}")
        if not self.body_timeout_s > 0:
            raise ValueError(f"body_timeout_s must be > 0, got {self.body_timeout_s}")

    def body_limit(self, context_length: int | None) -> int:
        """The largest request body accepted, in bytes: ``max_body_bytes`` or, by default, 1 MiB or 32 bytes
        per context position, whichever is larger (a prompt that fills the context fits, as text or ids)."""
        if self.max_body_bytes is not None:
            return self.max_body_bytes
        return max(DEFAULT_BODY_BYTES, BODY_BYTES_PER_POSITION * (context_length or 0))


class _Server:
    """Everything the handlers share: engine, worker, metrics, request log."""

    def __init__(self, engine: ServingEngine, config: ServeConfig) -> None:
        self.engine, self.config = engine, config
        self.metrics = ServerMetrics(engine.model_name, engine.k)
        self.sink: RequestSink | None = None
        self.worker = GenerationWorker(
            engine, self.metrics, self._log_request, config.max_waiting, max_batch=config.max_batch
        )
        self.created = int(time.time())
        self.body_limit = config.body_limit(engine.context_length)
        # Parsing and tokenizing run here, off the event loop: a 1 MB prompt takes the tokenizer seconds,
        # during which /health, /metrics and every stream must go on answering (issue 29). One thread:
        # requests are tokenized one at a time, so big ones cannot pile up in memory together.
        self.tokenizing = ThreadPoolExecutor(1, thread_name_prefix="specmeter-tokenize")

    def _log_request(self, job: Job, result: GenerationResult) -> None:
        if self.sink is None:
            return
        queued = (job.started or job.arrival) - job.arrival
        # Times from the request's arrival, queueing included: what the client lived through.
        # The log's category is what golden, monitor and drift read as the request's domain: the one its
        # metadata names (empty, written as null, when it names none); the endpoint has its own field.
        record = RequestRecord(
            id=job.request_id,
            category=str(job.log.get("domain") or ""),
            prompt_tokens=len(job.prompt_ids),
            output_tokens=len(result.output_ids),
            latency_s=queued + result.latency_s,
            ttft_s=queued + result.ttft_s,
            prefill_s=result.prefill_s,
            steps=result.steps,
            emissions=tuple(Emission(e.t + queued, e.tokens) for e in result.emissions),
            output_ids=result.output_ids,
            finish_reason=result.finish_reason,
        )
        # Wall-clock end of the request, then what the request said about itself (docs/monitoring.md).
        extra = {"time": round(time.time(), 3), "endpoint": job.kind, **job.log}
        if self.config.log_output:
            extra.update(_output_fields(self.engine, job, result))
        self.sink.write("serve", self.engine.draft_name, self.engine.k, record, extra=extra)

    def authorize(self, request: Request, *, x_api_key: bool = False) -> None:
        """Bearer token; with ``x_api_key`` (the Messages API) Anthropic's ``x-api-key`` header too."""
        key = self.config.api_key
        if key is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if x_api_key and "x-api-key" in request.headers:
            scheme, token = "bearer", request.headers["x-api-key"]
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), key.encode()):
            raise APIError(401, "Incorrect API key provided.", code="invalid_api_key")

    def prepare(self, parsed: ParsedRequest) -> tuple[list[int], int]:
        """Token ids and max_tokens of a parsed request; APIError when it cannot be served."""
        e = self.engine
        if parsed.prompt_ids is not None:
            ids = list(parsed.prompt_ids)
            vocab = e.vocab_size()
            if any(t >= vocab for t in ids):
                raise APIError(
                    400, f"'prompt' has token ids outside the vocabulary (size {vocab})", param="prompt"
                )
        elif parsed.prompt_text is not None:
            ids = e.encode_text(parsed.prompt_text)
        else:
            ids = e.encode_chat(parsed.messages or ())
        param = "prompt" if parsed.kind == "completion" else "messages"
        if not ids:
            raise APIError(400, f"'{param}' renders to no tokens", param=param)
        # A step feeds up to k + 1 positions past the text so far (the last token and k drafts): that many
        # are kept free of the completion, and the messages count them in what was asked for.
        reserve = e.k + 1
        why = (
            f"{reserve} reserved for speculation (the last step's {e.k} draft positions and one more)"
            if e.k
            else "1 reserved for the last step"
        )
        room = None if e.context_length is None else e.context_length - len(ids) - reserve
        max_tokens = parsed.max_tokens
        if max_tokens is None:
            max_tokens = (
                self.config.default_max_tokens if room is None else min(self.config.default_max_tokens, room)
            )
        if room is not None and room < 1:
            raise APIError(
                400,
                f"This model's maximum context length is {e.context_length} tokens. However, the {param} has "
                f"{len(ids)} tokens, which with {why} leaves no room for a completion. Please reduce the "
                "length of the prompt.",
                param=param,
                code="context_length_exceeded",
            )
        if room is not None and max_tokens > room:
            raise APIError(
                400,
                f"This model's maximum context length is {e.context_length} tokens. However, you requested "
                f"{len(ids) + max_tokens + reserve} tokens ({len(ids)} in the {param}, {max_tokens} in the "
                f"completion, {why}). Please reduce the length of the prompt or the completion.",
                param=param,
                code="context_length_exceeded",
            )
        return ids, max_tokens


def _log_fields(parsed: ParsedRequest, prompts: bool) -> dict[str, Any]:
    """The request's own fields in the request log: ``domain`` and ``tenant`` (from OpenAI's ``metadata``
    keys of those names; ``tenant`` falls back to ``user``), the sampling temperature, ``warmup`` for `load`'s
    warm-up requests (``metadata.specmeter_warmup``), all of ``metadata``,
    and with ``--log-prompts`` the prompt or messages."""
    metadata = dict(parsed.metadata)
    out: dict[str, Any] = {"temperature": parsed.temperature}
    domain, tenant = metadata.get("domain"), metadata.get("tenant") or parsed.user
    if domain:
        out["domain"] = domain
    if tenant:
        out["tenant"] = tenant
    if is_warmup({"metadata": metadata}):
        out["warmup"] = True  # `load`'s warm-up (metrics.warmup): replay, golden and drift leave it out
    if metadata:
        out["metadata"] = metadata
    if prompts:
        if parsed.messages is not None:
            out["messages"] = [{"role": role, "content": content} for role, content in parsed.messages]
        elif parsed.prompt_text is not None:
            out["prompt"] = parsed.prompt_text
    return out


def _output_fields(engine: ServingEngine, job: Job, result: GenerationResult) -> dict[str, Any]:
    """``--log-output``: what the target produced, as ids (EOS included when it ended there) and text, with
    the prompt's ids and the request's limit and model, so `specmeter replay` can walk it exactly."""
    return {
        "model": engine.model_name,
        "max_tokens": job.decoding.max_tokens,
        "finish_reason": result.finish_reason,
        "prompt_ids": list(job.prompt_ids),
        "output_ids": list(result.output_ids),
        "output": engine.decode(result.output_ids),
    }


def _error(e: APIError) -> JSONResponse:
    return JSONResponse(e.body(), status_code=e.status)


def _bridge(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[tuple[Any, ...]]) -> Callable[..., None]:
    def put(*item: Any) -> None:
        # The loop may be gone if the server is shutting down; nobody is left to tell.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(queue.put_nowait, item)

    return put


async def _watch_disconnect(request: Request, job: Job, put: Callable[..., None]) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            job.cancelled.set()
            put("disconnect")
            return


class _ClientLeft(Exception):
    """The client disconnected before its request was read: nobody to answer."""


async def _read(server: _Server, request: Request) -> bytes:
    """The request body, at most ``server.body_limit`` bytes (413 beyond it, before reading it when the
    Content-Length says so), within ``body_timeout_s`` (408)."""
    limit = server.body_limit
    too_large = APIError(
        413,
        f"the request body is larger than this server's limit of {limit} bytes (serve --max-body-bytes)",
        code="request_too_large",
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []

    async def collect() -> None:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_large
            chunks.append(chunk)

    try:
        await asyncio.wait_for(collect(), server.config.body_timeout_s)
    except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11 on
        timeout = server.config.body_timeout_s
        raise APIError(408, f"the request body did not arrive within {timeout:g} s") from None
    except ClientDisconnect:
        raise _ClientLeft from None
    return b"".join(chunks)


def _parse_json(raw: bytes) -> Any:
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nesting deeper than json's
        raise APIError(400, "could not parse the request body as JSON") from None
    where = surrogate_path(body)
    if where is not None:
        raise APIError(
            400,
            f"'{where or 'body'}' is not valid Unicode: it holds a lone surrogate "
            "(an unpaired \\ud800-\\udfff escape)",
            param=where or None,
        )
    return body


async def _submit(
    server: _Server,
    request: Request,
    parse: Callable[[Any], ParsedRequest],
    kind: Kind | Literal["messages"],
) -> tuple[ParsedRequest, Job, Events, Watch]:
    """Read, check and queue a request on the worker: the parsed request, the job, the queue its events
    arrive on, and the watcher that cancels the job when the client disconnects (a ``disconnect`` event).
    Parsing and tokenizing run on the server's tokenizing thread, never on the event loop."""
    raw = await _read(server, request)

    def check() -> tuple[ParsedRequest, list[int], int]:
        parsed = parse(_parse_json(raw))
        return (parsed, *server.prepare(parsed))

    loop = asyncio.get_running_loop()
    parsed, ids, max_tokens = await loop.run_in_executor(server.tokenizing, check)
    events: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
    put = _bridge(loop, events)
    prefix = {"completion": "cmpl", "chat": "chatcmpl", "messages": "msg"}[kind]
    job = Job(
        request_id=f"{prefix}-{uuid.uuid4().hex}",
        kind=kind,
        prompt_ids=tuple(ids),
        decoding=Decoding(max_tokens, parsed.temperature, parsed.top_p, parsed.seed),
        on_tokens=lambda tokens: put("tokens", tokens),
        on_done=lambda result, error: put("done", result, error),
        log=_log_fields(parsed, server.config.log_prompts),
    )
    if not server.worker.submit(job):
        raise APIError(
            429,
            f"server busy: {server.worker.waiting} requests already waiting",
            type="rate_limit_error",
            code="rate_limit_exceeded",
        )
    return parsed, job, events, functools.partial(_watch_disconnect, request, job, put)


async def _generate(server: _Server, request: Request, kind: Kind) -> Response:
    server.authorize(request)
    model = server.engine.model_name
    parsed, job, events, watch = await _submit(server, request, lambda b: parse_request(b, kind, model), kind)
    if parsed.stream:
        return StreamingResponse(_stream(server, parsed, job, events, watch), media_type="text/event-stream")
    return await _complete(server, parsed, job, events, watch)


async def _messages(server: _Server, request: Request) -> Response:
    """Anthropic's Messages API: the same engine and queue, Anthropic's shapes and errors."""
    try:
        server.authorize(request, x_api_key=True)
        served = server.engine.model_name
        parse: Callable[[Any], ParsedRequest] = lambda b: parse_messages_request(b, served)  # noqa: E731
        parsed, job, events, watch = await _submit(server, request, parse, "messages")
        model = parsed.model
        if parsed.stream:
            return StreamingResponse(
                stream_message(server.engine, job, model, events, watch), media_type="text/event-stream"
            )
        result = await _result(job, events, watch)
    except APIError as e:
        return JSONResponse(error_body(e.status, e.message), status_code=e.status)
    if result is None:
        return Response(status_code=204)  # the client is gone: nobody will read it
    output = result.output_ids
    text = server.engine.decode(output)
    body = message_body(job.request_id, model, text, result.finish_reason, len(job.prompt_ids), len(output))
    return JSONResponse(body)


async def _result(job: Job, events: Events, watch: Watch) -> GenerationResult | None:
    """Wait for a job's end: its result, None when the client disconnected; APIError 500 when it failed."""
    watcher = asyncio.create_task(watch())
    try:
        while True:
            item = await events.get()
            if item[0] == "disconnect":
                return None
            if item[0] == "done":
                break
    finally:
        watcher.cancel()
    result, error = item[1], item[2]
    if error is not None or result is None:
        raise APIError(500, f"generation failed: {error}", type="server_error")
    return result  # type: ignore[no-any-return]


async def _complete(
    server: _Server, parsed: ParsedRequest, job: Job, events: Events, watch: Watch
) -> Response:
    result = await _result(job, events, watch)
    if result is None:
        return Response(status_code=204)  # nobody will read it
    text = server.engine.decode(result.output_ids)
    body = final_response(
        parsed.kind,
        job.request_id,
        int(time.time()),
        parsed.model,
        text,
        result,
        len(job.prompt_ids),
        server.engine.k,
        token_ids=parsed.return_token_ids,
        per_request_metrics=server.config.per_request_metrics,
    )
    return JSONResponse(body)


async def _stream(
    server: _Server, parsed: ParsedRequest, job: Job, events: Events, watch: Watch
) -> AsyncIterator[bytes]:
    created, model, rid = int(time.time()), parsed.model, job.request_id
    prompt_tokens, produced = len(job.prompt_ids), 0
    text = TextStream(server.engine.decode)
    chat = parsed.kind == "chat"
    ids_or_none: Callable[[list[int]], list[int] | None] = (
        (lambda ids: ids) if parsed.return_token_ids else (lambda ids: None)
    )

    def chunk(piece: str, finish: str | None, ids: list[int]) -> dict[str, Any]:
        content = ({"content": piece} if piece or finish is None else {}) if chat else piece
        body = stream_chunk(parsed.kind, rid, created, model, content, finish, ids_or_none(ids))
        if parsed.continuous_usage:
            body["usage"] = usage_of(prompt_tokens, produced)
        return body

    watcher = asyncio.create_task(watch())
    finished = False
    try:
        if chat:  # OpenAI's first chat chunk carries the role and no content
            first = stream_chunk(
                "chat", rid, created, model, {"role": "assistant", "content": ""}, None, ids_or_none([])
            )
            if parsed.continuous_usage:
                first["usage"] = usage_of(prompt_tokens, 0)
            yield encode_data(first)
        while True:
            item = await events.get()
            if item[0] == "disconnect":
                return
            if item[0] == "tokens":
                tokens: list[int] = item[1]
                produced += len(tokens)
                yield encode_data(chunk(text.push(tokens), None, tokens))
                continue
            finished = True
            result, error = item[1], item[2]
            if error is not None:
                yield encode_data(APIError(500, f"generation failed: {error}", type="server_error").body())
                yield encode_done()
                return
            if result is None or result.finish_reason == "interrupted":
                return
            last = chunk(text.push([], final=True), FINISH_REASONS[result.finish_reason], [])
            spec = spec_metrics_of(result, server.engine.k) if server.config.per_request_metrics else None
            if parsed.include_usage:
                yield encode_data(last)
                tail: dict[str, Any] = {
                    "id": rid,
                    "object": last["object"],
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": usage_of(prompt_tokens, produced),
                }
                if spec is not None:
                    tail["metrics"] = {"speculative_decoding": spec}
                yield encode_data(tail)
            else:
                if spec is not None:
                    last["metrics"] = {"speculative_decoding": spec}
                yield encode_data(last)
            yield encode_done()
            return
    finally:
        watcher.cancel()
        if not finished:
            job.cancelled.set()  # the response was abandoned (client gone): stop generating for nobody


def create_app(engine: ServingEngine, config: ServeConfig | None = None) -> Starlette:
    """The ASGI app; the worker thread starts and stops with the app's lifespan."""
    server = _Server(engine, config or ServeConfig())

    async def completions(request: Request) -> Response:
        return await _generate(server, request, "completion")

    async def chat(request: Request) -> Response:
        return await _generate(server, request, "chat")

    async def messages(request: Request) -> Response:
        return await _messages(server, request)

    async def models(request: Request) -> Response:
        server.authorize(request, x_api_key=True)
        card = {
            "id": engine.model_name,
            "object": "model",
            "created": server.created,
            "owned_by": "specmeter",
            "max_model_len": engine.context_length,
        }
        return JSONResponse({"object": "list", "data": [card]})

    async def health(request: Request) -> Response:
        return Response(status_code=200)

    async def metrics(request: Request) -> Response:
        return Response(server.metrics.text(), media_type=CONTENT_TYPE_LATEST)

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, APIError)
        return _error(exc)

    async def client_left(request: Request, exc: Exception) -> Response:
        # A client that disconnects before its request was read is an abort, in one line of the log.
        server.metrics.observe_abort(None)
        server_log.info(
            "%s %s: the client left before sending its whole request", request.method, request.url.path
        )
        return Response(status_code=499)  # nginx's "client closed request"; nobody reads it

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        kind = "NotFoundError" if exc.status_code == 404 else "invalid_request_error"
        return _error(
            APIError(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}", type=kind)
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        cfg = server.config
        server.sink = RequestSink(None, cfg.log_path) if cfg.log_path is not None else None
        server.worker.start()
        try:
            yield
        finally:
            server.worker.stop()
            server.tokenizing.shutdown(wait=False, cancel_futures=True)
            if server.sink is not None:
                server.sink.close()

    app = Starlette(
        routes=[
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
        ],
        exception_handlers={APIError: api_error, HTTPException: http_error, _ClientLeft: client_left},
        lifespan=lifespan,
    )
    app.state.server = server
    return app
