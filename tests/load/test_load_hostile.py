"""A server (or a golden set) that sends what no well-behaved one would (issue 29, items 7, 8, 9 and 14):
every such request is recorded with a reason, the run goes on, and its files are written — never a
traceback, never a negative count."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from specmeter.load.config import LoadConfig, LoadError, Phase
from specmeter.load.run import execute_load
from specmeter.load.trace import TraceError, load_trace
from specmeter.server.hosting import ServerThread
from specmeter.workloads.loader import Prompt

DEEP = b"[" * 100_000
PROMPTS = tuple(Prompt(f"p{i}", "general", f"prompt number {i}", None, None, 4) for i in range(4))


def event(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def good_stream(text: str = " w", tokens: int = 2) -> list[bytes]:
    usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}
    return [
        event({"choices": [{"index": 0, "text": text, "finish_reason": None}]}),
        event({"choices": [{"index": 0, "text": "", "finish_reason": "length"}]}),
        event({"choices": [], "usage": usage}),
        b"data: [DONE]\n\n",
    ]


def good_messages(text: str = " w", tokens: int = 2) -> list[bytes]:
    return [
        event({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
        event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "max_tokens"},
                "usage": {"output_tokens": tokens},
            }
        ),
        event({"type": "message_stop"}),
    ]


@dataclass
class Hostile:
    """What the fake sends: request i gets ``streams[i % len]`` (raw SSE), or ``status`` with ``body``."""

    streams: list[list[bytes]] = field(default_factory=lambda: [good_stream()])
    status: int = 200
    body: bytes = b""
    models: bytes = b'{"data": [{"id": "m"}]}'
    requests: int = 0
    media: str = "text/event-stream"
    endless: bytes = b""  # sent for ever (with ``status``): a body that never ends


def hostile_app(h: Hostile) -> Starlette:
    async def completions(request: Request) -> Response:
        index = h.requests
        h.requests += 1
        await request.body()
        if h.endless:

            async def forever() -> Iterator[bytes]:  # type: ignore[misc]
                while True:
                    yield h.endless
                    await asyncio.sleep(0)

            return StreamingResponse(forever(), status_code=h.status, media_type=h.media)  # type: ignore[arg-type]
        if h.status != 200:
            return Response(h.body, status_code=h.status, media_type="application/json")
        parts = h.streams[index % len(h.streams)]

        async def body() -> Iterator[bytes]:  # type: ignore[misc]
            for part in parts:
                yield part

        return StreamingResponse(body(), media_type=h.media)  # type: ignore[arg-type]

    async def models(request: Request) -> Response:
        return Response(h.models, media_type="application/json")

    return Starlette(
        routes=[
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/v1/messages", completions, methods=["POST"]),
            Route("/v1/models", models),
        ]
    )


def run_load(
    h: Hostile, tmp_path: Path, prompts: tuple[Prompt, ...] = PROMPTS, **fields: Any
) -> dict[str, Any]:
    with ServerThread(hostile_app(h), graceful_timeout=2) as server:
        cfg = LoadConfig(endpoint=server.url, prompts=prompts, phases=[Phase(concurrency=1)],
                         limit=len(prompts), warmup=0, warmup_per_level=0, scrape_metrics=False,
                         **fields)  # fmt: skip
        result = asyncio.run(
            execute_load(
                cfg, config={}, json_out=tmp_path / "r.json", csv_out=tmp_path / "r.csv", hygiene=False
            )
        )
    assert json.loads((tmp_path / "r.json").read_text())["complete"] is True
    return result


def level_load(result: dict[str, Any]) -> dict[str, Any]:
    block: dict[str, Any] = result["candidates"][0]["load"]
    return block


# --- item 7: JSON nested beyond the parser's depth ------------------------------------------------------


@pytest.mark.parametrize("api", ["completions", "messages"])
def test_a_stream_event_nested_too_deeply_fails_that_request_with_a_reason(tmp_path: Path, api: str) -> None:
    good = good_messages() if api == "messages" else good_stream()
    h = Hostile(streams=[good, [b"data: " + DEEP + b"\n\n"]])
    load = level_load(run_load(h, tmp_path, api=api))
    assert load["requests_sent"] == 4 and load["failed"] == 2 and load["completed"] == 2
    reasons = {f["error"] for f in load["failures"]}
    assert "unreadable event in stream: JSON nested too deeply to read" in reasons, reasons


def test_an_error_body_nested_too_deeply_is_an_http_error(tmp_path: Path) -> None:
    h = Hostile(status=500, body=DEEP)
    load = level_load(run_load(h, tmp_path))
    assert load["failed"] == 4 and load["failures"][0]["error"].startswith("HTTP 500: [[[")


def test_a_model_list_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    h = Hostile(models=DEEP)
    with pytest.raises(LoadError) as caught:
        run_load(h, tmp_path)
    message = str(caught.value)
    assert message.endswith("/v1/models lists no model; pass --model") and "\n" not in message


def test_a_trace_line_nested_too_deeply_is_that_lines_problem(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"t": 0}\n' + DEEP + b"\n" + b'{"t": 1e' + b"9" * 5000 + b"}\n" + b"1" * 5000 + b"\n")
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    lines = str(caught.value).splitlines()
    assert lines[0] == f"{path}:2: invalid JSON (nested too deeply)"
    assert lines[1].startswith(f"{path}:3: field 't'") and lines[2].startswith(
        f"{path}:4: invalid JSON (Exceeds"
    )
    assert len(lines) == 3


# --- item 8: lone surrogates ---------------------------------------------------------------------------


def test_a_prompt_with_a_lone_surrogate_is_a_failed_request_and_the_run_goes_on(tmp_path: Path) -> None:
    # Issue 29: load stopped after 2 requests (httpx could not encode the body) and never wrote its JSON.
    prompts = (*PROMPTS[:2], Prompt("p\ud800", "c\udc00", "bad \ud800x", None, None, 4), PROMPTS[3])
    load = level_load(run_load(Hostile(), tmp_path, prompts))
    assert load["requests_sent"] == 4 and load["completed"] == 3 and load["failed"] == 1
    (failure,) = load["failures"]
    assert (
        failure["error"]
        == "not sent: the request holds a lone surrogate (\\ud800), which UTF-8 cannot encode"
    )
    rows = (tmp_path / "r.csv").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 5 and any("p\\ud800" in row and "c\\udc00" in row for row in rows)


def test_lone_surrogates_from_the_server_are_recorded_escaped(tmp_path: Path) -> None:
    text = [
        b'data: {"choices":[{"index":0,"text":"\\ud800x","finish_reason":null}]}\n\n',
        b'data: {"choices":[{"index":0,"text":"","finish_reason":"\\udc00"}]}\n\n',
        b"data: [DONE]\n\n",
    ]
    error_event = [b'data: {"error": {"message": "bad \\ud800 thing"}}\n\n']
    h = Hostile(streams=[good_stream(), text, error_event], models=b'{"data": [{"id": "m\\ud800"}]}')
    result = run_load(h, tmp_path)
    load = level_load(result)
    assert load["requests_sent"] == 4 and load["completed"] == 2, load
    errors = sorted(f["error"] for f in load["failures"])
    assert errors == ["error event in stream: bad \\ud800 thing", "server finished with reason '\\udc00'"]
    assert result["candidates"][0]["draft"].startswith("m\\ud800 @ ")
    assert len((tmp_path / "r.csv").read_text(encoding="utf-8").splitlines()) == 5
    # An HTTP error's message with one.
    h = Hostile(status=400, body=b'{"error": {"message": "no \\ud800 way"}}')
    load = level_load(run_load(h, tmp_path))
    assert {f["error"] for f in load["failures"]} == {"HTTP 400: no \\ud800 way"}


# --- item 9: impossible counts --------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["completions", "messages"])
def test_a_negative_token_count_fails_its_request_never_a_negative_rate(tmp_path: Path, api: str) -> None:
    # Issue 29: usage.completion_tokens = -551 gave tokens/s of −551 and exit 0; report then refused the file.
    bad = good_messages(tokens=-551) if api == "messages" else good_stream(tokens=-551)
    good = good_messages() if api == "messages" else good_stream()
    result = run_load(Hostile(streams=[good, bad]), tmp_path, api=api)
    load = level_load(result)
    assert load["completed"] == 2 and load["failed"] == 2
    key = "output_tokens" if api == "messages" else "completion_tokens"
    assert {f["error"] for f in load["failures"]} == {f"impossible count from the server: usage.{key} = -551"}
    assert load["output_tokens_per_s"] > 0
    from specmeter.report.validate import validate_result

    assert validate_result(json.loads((tmp_path / "r.json").read_text())) == []


def test_a_negative_prompt_or_timings_count_fails_its_request(tmp_path: Path) -> None:
    stream = [
        event(
            {"choices": [{"index": 0, "text": "w", "finish_reason": None}], "timings": {"predicted_n": -3}}
        ),
        b"data: [DONE]\n\n",
    ]
    prompt = [event({"choices": [], "usage": {"prompt_tokens": -5, "completion_tokens": 2}})]
    load = level_load(run_load(Hostile(streams=[stream, prompt]), tmp_path))
    assert {f["error"] for f in load["failures"]} == {
        "impossible count from the server: timings.predicted_n = -3",
        "impossible count from the server: usage.prompt_tokens = -5",
    }


# --- item 14: a timeout says it timed out ---------------------------------------------------------------


def test_a_model_lookup_that_times_out_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Issue 29: "cannot reach …/v1/models: " — httpx's timeouts carry no message, and the reason was empty.
    monkeypatch.setattr("specmeter.load.readings.MODEL_LOOKUP_TIMEOUT", 0.3)
    with socket.socket() as listener:  # the kernel accepts the connection; nobody ever answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        cfg = LoadConfig(endpoint=url, prompts=PROMPTS, limit=1, warmup=0, scrape_metrics=False)
        with pytest.raises(LoadError) as caught:
            asyncio.run(execute_load(cfg, config={}, hygiene=False))
    assert str(caught.value) == f"cannot reach {url}/v1/models: timed out after 0.3 s"


# --- a server that never stops sending: the client's memory stays bounded --------------------------------


def test_an_endless_event_or_error_body_is_read_within_bounds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("specmeter.load.client.MAX_EVENT_BYTES", 1 << 20)
    # request_timeout only guards the test: before the bounds, both ran until it.
    load = level_load(run_load(Hostile(endless=b"x" * 65536), tmp_path, request_timeout=30.0))
    assert {f["error"] for f in load["failures"]} == {"unreadable stream: an event longer than 1048576 bytes"}
    load = level_load(run_load(Hostile(endless=b"y" * 65536, status=500), tmp_path, request_timeout=30.0))
    assert {f["error"] for f in load["failures"]} == {"HTTP 500: " + "y" * 200}
