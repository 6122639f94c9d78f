"""``serve``'s limits (issue 29): one request cannot fail the requests batched with it, bodies are bounded
and tokenized off the event loop, bad text is the client's 400, a client that leaves is one log line."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import torch

import specmeter.server.local_engine as local_engine
from specmeter.engine.schedule import KSchedule
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine

PATHS = {"completion": "/v1/completions", "chat": "/v1/chat/completions", "messages": "/v1/messages"}


def _body(api: str, text: str, **sampling: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"max_tokens": 6, **sampling}
    if api == "completion":
        return {"prompt": text, **base}
    return {"model": "tiny", "messages": [{"role": "user", "content": text}], **base}


def _ask(url: str, api: str, body: dict[str, Any]) -> tuple[int, str]:
    """(status, what the request produced or the error it met); streams are read to their end."""
    if not body.get("stream"):
        r = httpx.post(url + PATHS[api], json=body, timeout=60)
        return r.status_code, r.text
    events = []
    with httpx.stream("POST", url + PATHS[api], json=body, timeout=60) as r:
        status = r.status_code
        for line in r.iter_lines():
            if line.startswith("data: {"):
                events.append(json.loads(line[6:]))
    errors = [e for e in events if "error" in e or e.get("type") == "error"]
    return (500 if errors else status), json.dumps(errors or events[-1:])


@pytest.fixture(scope="module", params=["batch-4", "k-schedule", "one-at-a-time"])
def batching(tiny: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    schedule = KSchedule.parse([[1, 2, 4], [3, 16, 2]]) if request.param == "k-schedule" else None
    engine = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu", schedule=schedule, model_name="tiny")
    batch = 1 if request.param == "one-at-a-time" else 4
    with ServerThread(create_app(engine, ServeConfig(max_batch=batch))) as server:
        yield server.url


EXTREMES = [
    {"temperature": 1e-300},
    {"temperature": 1.0, "top_p": 5e-324},
    {"temperature": 1e-6, "top_p": 1e-9},
]


@pytest.mark.parametrize("api", list(PATHS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_extreme_sampling_values_in_range_fail_nobody(batching: str, api: str, stream: bool) -> None:
    # Issue 29.1: temperature 1e-300 (greedy: below 1e-5) or top_p 5e-324 (the top token is always kept)
    # used to make a NaN distribution that failed every request of the batch with a 500.
    normal = [_body(api, p, temperature=0, stream=stream) for p in ("The Supplier", "She walked", "Preheat")]
    odd = [_body(api, "x", stream=stream, **extreme) for extreme in EXTREMES]
    with ThreadPoolExecutor(len(normal) + len(odd)) as pool:
        answers = list(pool.map(lambda body: _ask(batching, api, body), normal + odd))
    for status, text in answers:
        assert status == 200, text


def test_a_row_that_fails_fails_alone(tiny: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Whatever one row does, the others finish: a request whose sampling raises (here: a generator that is
    # not one) gets its own 500, the three batched with it their answers.
    real = local_engine._generator

    def generator(device: Any, seed: int | None) -> torch.Generator:
        return "not a generator" if seed == 666 else real(device, seed)  # type: ignore[return-value]

    monkeypatch.setattr(local_engine, "_generator", generator)
    engine = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu")
    normal = [_body("completion", p, temperature=0, max_tokens=24) for p in ("The Supplier", "She walked")]
    normal.append(_body("completion", "Preheat", temperature=1.0, seed=1, max_tokens=24))
    bad = _body("completion", "x", temperature=1.0, seed=666, max_tokens=24)
    with ServerThread(create_app(engine, ServeConfig(max_batch=4))) as server:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda body: _ask(server.url, "completion", body), [bad, *normal]))
            streamed = pool.submit(_ask, server.url, "completion", {**bad, "stream": True})
            again = list(pool.map(lambda body: _ask(server.url, "completion", body), normal))
        assert answers[0][0] == 500 and "generation failed" in answers[0][1]
        assert [status for status, _ in answers[1:] + again] == [200] * 6
        assert streamed.result()[0] == 500
        assert httpx.get(server.url + "/health").status_code == 200


def test_tiny_temperature_is_greedy_and_tiny_top_p_keeps_the_top_token() -> None:
    from specmeter.engine.sampling import GREEDY_TEMPERATURE, SamplingParams, probs

    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    top = torch.nn.functional.one_hot(logits.argmax(-1), 50).float()
    assert SamplingParams(1e-300).greedy and not SamplingParams(GREEDY_TEMPERATURE).greedy
    for params in (SamplingParams(1e-300), SamplingParams(1.0, 5e-324), SamplingParams(2.0, 1e-30)):
        assert torch.equal(probs(logits, params), top), params
    # Just above the threshold the distribution is finite and still sums to one.
    p = probs(logits * 50, SamplingParams(GREEDY_TEMPERATURE, 0.5))
    assert torch.isfinite(p).all() and torch.allclose(p.sum(-1), torch.ones(3))


@pytest.fixture(scope="module")
def served(tiny: Any) -> Iterator[str]:
    engine = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu", model_name="tiny")
    with ServerThread(create_app(engine, ServeConfig(max_batch=4))) as server:
        yield server.url


@pytest.mark.parametrize("api", list(PATHS))
@pytest.mark.parametrize("where", ["text", "metadata key"])
def test_lone_surrogates_are_the_clients_400_in_each_apis_shape(served: str, api: str, where: str) -> None:
    # Issue 29.8: "\ud800" is valid JSON but not Unicode; it used to reach the tokenizer and come back as a
    # plain-text 500.
    body = _body(api, "fine")
    if where == "text":
        body = _body(api, "\ud800x")
    else:
        body["metadata"] = {"\udfffkey": "v"}
    raw = json.dumps(body).encode()  # ensure_ascii: the surrogate travels as the escape \ud800
    r = httpx.post(served + PATHS[api], content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    error = r.json()
    if api == "messages":
        assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
        assert "surrogate" in error["error"]["message"]
    else:
        assert set(error["error"]) == {"message", "type", "param", "code"}
        assert "surrogate" in error["error"]["message"]
        param = (
            "metadata" if where != "text" else ("prompt" if api == "completion" else "messages[0].content")
        )
        assert error["error"]["param"] == param


@pytest.mark.parametrize("api", list(PATHS))
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_body_over_the_limit_is_413(tiny: Any, api: str, declared: bool) -> None:
    # Issue 29.2: there was no limit; a 5 MB prompt was read, parsed and tokenized on the event loop.
    engine = LocalEngine.load(tiny.target, None, 0, device="cpu", model_name="tiny")
    with ServerThread(create_app(engine, ServeConfig(max_body_bytes=4096))) as server:
        raw = json.dumps(_body(api, "word " * 2000)).encode()
        content: Any = raw if declared else iter([raw[:3000], raw[3000:]])  # an iterator goes chunked
        r = httpx.post(server.url + PATHS[api], content=content, headers={"content-type": "application/json"})
        assert r.status_code == 413, r.text
        error = r.json()
        if api == "messages":
            assert error["type"] == "error" and error["error"]["type"] == "request_too_large"
        else:
            assert "4096 bytes" in error["error"]["message"] and error["error"]["code"] == "request_too_large"
        small = httpx.post(server.url + PATHS[api], json=_body(api, "word"), timeout=30)
        assert small.status_code == 200, small.text


def test_the_default_body_limit_follows_the_context() -> None:
    assert ServeConfig().body_limit(None) == ServeConfig().body_limit(1024) == 2**20
    assert ServeConfig().body_limit(131072) == 32 * 131072
    assert ServeConfig(max_body_bytes=5000).body_limit(131072) == 5000
    with pytest.raises(ValueError, match="max_body_bytes"):
        ServeConfig(max_body_bytes=10)


def test_health_answers_while_a_big_request_is_tokenized(tiny: Any) -> None:
    # Tokenizing runs off the event loop: while one request's prompt is being tokenized (held here until
    # /health has answered), /health and the other routes answer.
    engine = LocalEngine.load(tiny.target, None, 0, device="cpu", model_name="tiny")
    entered, release = threading.Event(), threading.Event()
    encode = engine.encode_text

    def slow_encode(text: str) -> list[int]:
        entered.set()
        release.wait(30)
        return encode(text)

    engine.encode_text = slow_encode  # type: ignore[method-assign]
    with ServerThread(create_app(engine, ServeConfig(max_body_bytes=2**20))) as server:
        big = {"prompt": "word " * 50_000, "max_tokens": 2}  # under the body limit, over the context
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(httpx.post, server.url + "/v1/completions", json=big, timeout=60)
            try:
                assert entered.wait(30)
                health = httpx.get(server.url + "/health", timeout=20)
                assert health.status_code == 200 and not answer.done()
            finally:
                release.set()
            assert answer.result().status_code == 400  # over the context: still the client's 400


def _until_closed(sock: socket.socket) -> bytes:
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


def test_half_sent_requests_are_timed_out(tiny: Any) -> None:
    # Issue 29.3: uvicorn arms no timer before a request's head is complete; serve's protocol does, and the
    # app bounds the body.
    engine = LocalEngine.load(tiny.target, None, 0, device="cpu", model_name="tiny")
    app = create_app(engine, ServeConfig(body_timeout_s=0.5))
    with ServerThread(app, head_timeout_s=0.5) as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")
            time.sleep(0.3)
            sock.sendall(b"X-Slow: 1\r\n")  # trickling bytes does not keep it open
            # Answered and closed by the server, well before the socket's own 20 s.
            assert _until_closed(sock).startswith(b"HTTP/1.1 408")
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
            sock.sendall(b'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{"pro')
            reply = b""
            while b"did not arrive" not in reply and (chunk := sock.recv(4096)):
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 408") and b"did not arrive" in reply, reply
        # A connection kept alive after a response is bounded the same way while the next head trickles in.
        with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
            sock.sendall(b"GET /health HTTP/1.1\r\n")
            assert _until_closed(sock).startswith(b"HTTP/1.1 408")
        assert httpx.get(server.url + "/health").status_code == 200


def test_a_client_that_leaves_mid_body_is_one_log_line(tiny: Any, caplog: pytest.LogCaptureFixture) -> None:
    engine = LocalEngine.load(tiny.target, None, 0, device="cpu", model_name="tiny")
    server = ServerThread(create_app(engine, ServeConfig()))  # configures uvicorn's logging: hook in after
    uvicorn_log = logging.getLogger("uvicorn")  # uvicorn's loggers do not propagate to the root
    uvicorn_log.addHandler(caplog.handler)
    caplog.set_level(logging.INFO, logger="uvicorn.error")
    try:
        with server:
            with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
                sock.sendall(b'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{"p')
                time.sleep(0.2)
            deadline = time.monotonic() + 10
            while (
                "left" not in caplog.text and "Exception" not in caplog.text and time.monotonic() < deadline
            ):
                time.sleep(0.05)
            assert httpx.get(server.url + "/health").status_code == 200
            metrics = httpx.get(server.url + "/metrics").text.splitlines()
            aborts = [m for m in metrics if m.startswith("vllm:request_success_total") and '"abort"' in m]
    finally:
        uvicorn_log.removeHandler(caplog.handler)
    assert "Traceback" not in caplog.text and "Exception in ASGI" not in caplog.text, caplog.text
    lines = [r for r in caplog.records if "left" in r.getMessage()]
    assert len(lines) == 1 and "/v1/completions" in lines[0].getMessage()
    assert len(aborts) == 1 and aborts[0].endswith(" 1.0")
