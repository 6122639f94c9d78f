"""``serve``'s limits (issue 29): one request cannot fail the requests batched with it, bodies are bounded
and tokenized off the event loop, bad text is the client's 400, a client that leaves is one log line."""

from __future__ import annotations

import json
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


@pytest.fixture(scope="module", params=["constant-k", "k-schedule"])
def batching(tiny: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    schedule = KSchedule.parse([[1, 2, 4], [3, 16, 2]]) if request.param == "k-schedule" else None
    engine = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu", schedule=schedule, model_name="tiny")
    with ServerThread(create_app(engine, ServeConfig(max_batch=4))) as server:
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
