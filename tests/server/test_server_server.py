"""``serve`` on the tiny models: OpenAI shapes, streaming bursts, vLLM-named counters, errors, disconnects."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from specmeter.monitoring.adapters import DRAFTS, read_counters
from specmeter.monitoring.promtext import parse_metrics
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine


@pytest.fixture(scope="module", params=[1, 4], ids=["one-at-a-time", "batch-4"])
def servers(
    tiny: Any, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[dict[str, Any]]:
    """Every test runs against single-stream servers and against continuous-batching ones."""
    log = tmp_path_factory.mktemp("serve") / "requests.jsonl"
    batch = request.param
    spec = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu")
    base = LocalEngine.load(tiny.target, None, 0, device="cpu")
    with (
        ServerThread(create_app(spec, ServeConfig(log_path=log, max_batch=batch))) as s,
        ServerThread(create_app(base, ServeConfig(max_batch=batch))) as b,
        ServerThread(create_app(spec, ServeConfig(api_key="sekrit", max_batch=batch))) as a,
    ):
        yield {"spec": s.url, "base": b.url, "auth": a.url, "log": log, "model": spec.model_name}


def _counters(url: str) -> dict[str, float]:
    reading = read_counters(parse_metrics(httpx.get(url + "/metrics").text))
    return {name: sum(series.values()) for name, series in reading.counters.items()}


def _stream(url: str, path: str, body: dict[str, Any]) -> list[Any]:
    events: list[Any] = []
    with httpx.stream("POST", url + path, json=body, timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                data = line[len("data: ") :]
                events.append(data if data == "[DONE]" else json.loads(data))
    return events


def test_models_health_and_metrics_before_traffic(servers: dict[str, Any]) -> None:
    models = httpx.get(servers["spec"] + "/v1/models").json()
    assert models["data"][0]["id"] == servers["model"]
    assert httpx.get(servers["spec"] + "/health").status_code == 200
    text = httpx.get(servers["base"] + "/metrics").text
    assert "vllm:generation_tokens_total" in text
    assert "spec_decode" not in text  # a server without a draft exports no spec-decode family, as vLLM
    spec_text = httpx.get(servers["spec"] + "/metrics").text
    for position in range(4):  # every position exists from start-up, so rate() has a first sample
        assert f'position="{position}"' in spec_text


def test_completion_counters_and_per_request_report_agree(servers: dict[str, Any]) -> None:
    before = _counters(servers["spec"])
    body = {"prompt": "The lighthouse keeper", "max_tokens": 40, "temperature": 0}
    spec = httpx.post(servers["spec"] + "/v1/completions", json=body, timeout=30).json()
    after = _counters(servers["spec"])
    report = spec["metrics"]["speculative_decoding"]
    assert spec["object"] == "text_completion"
    usage = spec["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert 1 <= usage["completion_tokens"] <= 40
    assert after[DRAFTS] - before[DRAFTS] == report["num_spec_steps"]
    assert after["draft_tokens"] - before["draft_tokens"] == report["num_draft_tokens"]
    assert after["accepted"] - before["accepted"] == report["num_accepted_draft_tokens"]
    assert after["generation_tokens"] - before["generation_tokens"] == spec["usage"]["completion_tokens"]
    hist = report["acceptance_histogram"]
    assert sum(hist) == report["num_spec_steps"]
    assert after["accepted_pos:0"] - before["accepted_pos:0"] == sum(hist[1:])
    # Greedy speculative decoding must produce exactly the target's own greedy output.
    base = httpx.post(servers["base"] + "/v1/completions", json=body, timeout=30).json()
    assert spec["choices"][0]["text"] == base["choices"][0]["text"]
    assert "metrics" not in base


def test_streaming_chunks_carry_one_step_each(servers: dict[str, Any]) -> None:
    body = {
        "prompt": "The lighthouse keeper",
        "max_tokens": 40,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        "return_token_ids": True,
    }
    events = _stream(servers["spec"], "/v1/completions", body)
    assert events[-1] == "[DONE]"
    final = events[-2]
    assert final["choices"] == [] and "speculative_decoding" in final["metrics"]
    chunks = [e for e in events[:-2] if e["choices"]]
    sizes = [len(c["choices"][0]["token_ids"]) for c in chunks]
    assert sum(sizes) == final["usage"]["completion_tokens"]
    assert max(sizes) > 1  # speculation: several tokens per chunk
    running = [c["usage"]["completion_tokens"] for c in chunks]
    assert running == sorted(running) and running[-1] == final["usage"]["completion_tokens"]
    assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")
    text = "".join(c["choices"][0]["text"] for c in chunks)
    whole = httpx.post(servers["spec"] + "/v1/completions", json={**body, "stream": False}, timeout=30).json()
    assert text == whole["choices"][0]["text"]


def test_chat_stream_shape(servers: dict[str, Any]) -> None:
    body = {
        "messages": [{"role": "user", "content": "Define force majeure."}],
        "max_tokens": 12,
        "temperature": 0,
        "stream": True,
    }
    events = _stream(servers["spec"], "/v1/chat/completions", body)
    assert events[0]["object"] == "chat.completion.chunk"
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    finish = [e for e in events[:-1] if e["choices"][0]["finish_reason"]]
    assert len(finish) == 1 and "speculative_decoding" in finish[0]["metrics"]  # no usage chunk requested
    assert events[-1] == "[DONE]"


@pytest.mark.parametrize(
    ("path", "body", "status", "param", "code"),
    [
        ("/v1/completions", {"max_tokens": 5}, 400, "prompt", None),
        ("/v1/completions", {"prompt": "x", "max_tokens": -1}, 400, "max_tokens", None),
        ("/v1/completions", {"prompt": "x", "model": "nope"}, 404, "model", "model_not_found"),
        ("/v1/completions", {"prompt": "x", "temperature": 9}, 400, "temperature", None),
        ("/v1/completions", {"prompt": "word " * 2000}, 400, "prompt", "context_length_exceeded"),
        ("/v1/completions", {"prompt": "x", "max_tokens": 5000}, 400, "prompt", "context_length_exceeded"),
        ("/v1/completions", {"prompt": [99999]}, 400, "prompt", None),
        ("/v1/chat/completions", {"messages": []}, 400, "messages", None),
    ],
)
def test_bad_requests_get_openai_errors(
    servers: dict[str, Any], path: str, body: dict[str, Any], status: int, param: str, code: str | None
) -> None:
    response = httpx.post(servers["spec"] + path, json=body)
    assert response.status_code == status
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["param"], error["code"]) == (param, code)


def test_unparseable_body_and_unknown_route(servers: dict[str, Any]) -> None:
    bad = httpx.post(
        servers["spec"] + "/v1/completions", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert bad.status_code == 400 and "JSON" in bad.json()["error"]["message"]
    missing = httpx.get(servers["spec"] + "/v1/embeddings")
    assert missing.status_code == 404 and "error" in missing.json()


def test_api_key(servers: dict[str, Any]) -> None:
    url = servers["auth"]
    body = {"prompt": "x", "max_tokens": 2}
    denied = httpx.post(url + "/v1/completions", json=body)
    assert denied.status_code == 401 and denied.json()["error"]["code"] == "invalid_api_key"
    wrong = httpx.post(url + "/v1/completions", json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    ok = httpx.post(
        url + "/v1/completions", json=body, headers={"Authorization": "Bearer sekrit"}, timeout=30
    )
    assert ok.status_code == 200
    assert httpx.get(url + "/health").status_code == 200  # health and metrics stay open, as in vLLM
    assert httpx.get(url + "/metrics").status_code == 200


def _abort_count(url: str) -> float:
    snapshot = parse_metrics(httpx.get(url + "/metrics").text)
    return sum(
        s.value
        for s in snapshot.samples
        if s.name == "vllm:request_success_total" and s.label("finished_reason") == "abort"
    )


def test_client_disconnect_stops_generation(servers: dict[str, Any]) -> None:
    url = servers["spec"]
    aborts, generated = _abort_count(url), _counters(url)["generation_tokens"]
    body = {
        "prompt": "It was the last train",
        "max_tokens": 900,
        "temperature": 1.0,
        "seed": 1,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    with httpx.stream("POST", url + "/v1/completions", json=body, timeout=30) as response:
        seen = 0
        for line in response.iter_lines():
            if line.startswith("data: {"):
                seen += 1
                if seen == 2:
                    break  # leaving the block closes the connection mid-stream
    deadline = time.monotonic() + 20
    while _abort_count(url) == aborts and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _abort_count(url) == aborts + 1
    assert _counters(url)["generation_tokens"] - generated < 900


def test_request_log_has_the_three_fields(servers: dict[str, Any]) -> None:
    httpx.post(
        servers["spec"] + "/v1/completions",
        json={"prompt": "Log me", "max_tokens": 6, "temperature": 0},
        timeout=30,
    )
    rows = [json.loads(line) for line in Path(servers["log"]).read_text().splitlines()]
    assert rows, "every finished request is logged"
    last = rows[-1]
    # No domain in the request: no category (golden's rules, monitor's "all"); the API has its own field.
    assert last["run"] == "serve" and last["k"] == 4 and last["category"] is None
    assert last["endpoint"] == "completion" and "domain" not in last
    assert last["output_tokens"] >= 1 and last["latency_ms"] >= last["ttft_ms"] > 0
    assert last["drafted_tokens"] >= last["accepted_tokens"] >= 0


def test_request_log_category_is_the_domain_the_request_names(servers: dict[str, Any]) -> None:
    """What golden, monitor and drift read as the category is the request's metadata.domain (issue 32)."""
    httpx.post(
        servers["spec"] + "/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "Log my domain"}], "max_tokens": 4, "temperature": 0,
              "metadata": {"domain": "legal/nda", "tenant": "acme"}},
        timeout=30,
    )  # fmt: skip
    rows = [json.loads(line) for line in Path(servers["log"]).read_text().splitlines()]
    last = rows[-1]
    assert last["category"] == last["domain"] == "legal/nda" and last["endpoint"] == "chat"
    assert last["tenant"] == "acme"


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b'{"prompt": "x", "max_tokens": 2, "seed": 1180591620717411303424}', "seed"),
        (b'{"prompt": "x", "max_tokens": 2, "temperature": NaN}', "temperature"),  # Python's json reads NaN
        (b'{"prompt": "x", "max_tokens": 2, "top_p": Infinity}', "top_p"),
        (b'{"prompt": [1, 99999999999999999999999999]}', "prompt"),
        (b'{"prompt": "x", "max_tokens": 100000000000000000000000}', "prompt"),
        (b"[" * 100_000 + b"]" * 100_000, None),  # deeper than json's recursion limit
    ],
)
def test_every_field_is_range_checked(servers: dict[str, Any], raw: bytes, param: str | None) -> None:
    # Issue 12: a value out of range must be the client's 400, never the server's 500.
    response = httpx.post(
        servers["spec"] + "/v1/completions", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param


def test_context_length_messages_count_what_they_say(servers: dict[str, Any]) -> None:
    import re

    for url, k in ((servers["spec"], 4), (servers["base"], 0)):
        response = httpx.post(url + "/v1/completions", json={"prompt": "hello there", "max_tokens": 1020})
        assert response.status_code == 400
        message = response.json()["error"]["message"]
        match = re.search(
            r"maximum context length is (\d+) tokens\. However, you requested (\d+) tokens \((\d+) in the "
            r"prompt, (\d+) in the completion, (\d+) reserved",
            message,
        )
        assert match is not None, message
        context, total, prompt, completion, reserved = map(int, match.groups())
        assert total == prompt + completion + reserved > context and completion == 1020
        assert reserved == k + 1
