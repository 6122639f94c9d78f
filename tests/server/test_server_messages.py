"""Anthropic's Messages API both ways: the client against injected failures, serve's route, load on it.

The stream has no per-chunk token counts (only ``message_delta``'s cumulative total), so tokens are the
final usage spread over the text deltas, marked ``usage_distributed``; TTFT and chunk gaps stay exact.
"""

from __future__ import annotations

import asyncio
import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from messages_fakes import MessagesBehaviour, fake_messages
from specmeter.load.client import RequestOutcome, StreamRequest, stream_request
from specmeter.load.config import LoadConfig, Phase
from specmeter.load.messages_stream import MessagesStream
from specmeter.load.run import execute_load
from specmeter.monitoring.adapters import read_counters
from specmeter.monitoring.promtext import parse_metrics
from specmeter.server.app import ServeConfig, create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine
from specmeter.wire.messages import messages_headers, messages_payload, parse_messages_request
from specmeter.wire.openai import APIError
from specmeter.workloads.loader import Message, Prompt

# ------------------------------------------------------------------------------- the client, injected


@pytest.fixture
def fake() -> Iterator[tuple[MessagesBehaviour, str]]:
    behaviour = MessagesBehaviour()
    with ServerThread(fake_messages(behaviour), graceful_timeout=2) as server:
        yield behaviour, server.url


def _run(url: str, **kw: float) -> RequestOutcome:
    async def go() -> RequestOutcome:
        async with httpx.AsyncClient() as client:
            body = {
                "model": "m",
                "messages": [{"role": "user", "content": "x"}],
                "max_tokens": 7,
                "stream": True,
            }
            request = StreamRequest("p1", "cat", url + "/v1/messages", body)
            return await stream_request(client, request, state_type=MessagesStream, **kw)  # type: ignore[arg-type]

    return asyncio.run(go())


def test_events_give_ttft_chunks_and_the_final_usage(fake: tuple[MessagesBehaviour, str]) -> None:
    url = fake[1]
    out = _run(url)
    assert out.ok and out.error is None
    assert out.record.output_tokens == 7  # message_delta's cumulative usage, not the 3 deltas
    assert [e.tokens for e in out.record.emissions] == [3, 2, 2]  # spread, the earliest get the extra
    assert out.token_source == "usage_distributed"
    assert out.record.prompt_tokens == 9
    assert out.record.finish_reason == "length"  # stop_reason max_tokens
    assert out.raw_finish_reason == "max_tokens"
    assert 0 < out.record.ttft_s <= out.record.latency_s
    assert out.first_payload is not None and out.first_payload["delta"]["text"] == "Hel"  # not the ping
    assert out.malformed_lines == 0  # event: lines are part of SSE, not malformed


def test_cached_prompt_tokens_are_part_of_the_prompt(fake: tuple[MessagesBehaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "cached"
    assert _run(url).record.prompt_tokens == 9 + 20 + 3


def test_thinking_deltas_are_chunks_and_signatures_are_not(fake: tuple[MessagesBehaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "thinking"
    out = _run(url)
    assert out.ok and len(out.record.emissions) == 3


def test_error_event_ends_the_stream_keeping_what_arrived(fake: tuple[MessagesBehaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "error_event"
    out = _run(url)
    assert not out.ok and out.record.finish_reason == "interrupted"
    assert out.error == "error event in stream: overloaded_error: Overloaded"
    assert len(out.record.emissions) == 0 and out.record.output_tokens == 0  # no usage came: counts unknown


def test_stream_cut_before_the_stop_reason(fake: tuple[MessagesBehaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "cut"
    out = _run(url)
    assert not out.ok and out.record.finish_reason == "interrupted"
    assert out.error is not None and "without stop_reason or message_stop" in out.error


def test_connection_dropped_mid_stream(fake: tuple[MessagesBehaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "close_midway"
    out = _run(url)
    assert not out.ok and out.error is not None and "closed" in out.error


def test_stall_times_out(fake: tuple[MessagesBehaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "stall"
    out = _run(url, stall_timeout=0.3)
    assert out.error == "stalled: no data for 0.3s"
    assert out.record.finish_reason == "interrupted"


def test_http_error_in_anthropics_shape(fake: tuple[MessagesBehaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "status"
    out = _run(url)
    assert out.status == 529 and out.error == "HTTP 529: Overloaded"


def test_malformed_and_unknown_events(fake: tuple[MessagesBehaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "malformed"
    out = _run(url)
    assert out.ok and out.record.output_tokens == 7
    assert out.malformed_lines == 2  # the bad JSON and the line without a field; the unknown event is fine


def test_refusal_is_not_a_normal_finish(fake: tuple[MessagesBehaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "refusal"
    out = _run(url)
    assert not out.ok and out.error == "server finished with reason 'refusal'"


def test_message_stop_is_optional_once_the_stop_reason_arrived(fake: tuple[MessagesBehaviour, str]) -> None:
    behaviour, url = fake
    behaviour.mode = "no_stop_event"
    assert _run(url).ok


# ---------------------------------------------------------------------------------- the wire format


def test_payload_moves_system_messages_to_the_top_level() -> None:
    prompt = Prompt(
        "a",
        "legal",
        None,
        (Message("system", "Be brief."), Message("user", "Define 'force majeure'.")),
        None,
        0,
    )
    body = messages_payload(prompt, "m", max_tokens=32, temperature=0.0, top_p=1.0)
    assert body == {
        "model": "m",
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "Define 'force majeure'."}],
        "max_tokens": 32,
        "temperature": 0.0,
        "stream": True,
    }  # no top_p at 1.0: the reference asks for temperature or top_p, not both; no seed: not in the API
    text = messages_payload(
        Prompt("b", "g", "契約の解除", None, None, 1), None, max_tokens=8, temperature=0.5, top_p=0.9
    )
    assert text["messages"] == [{"role": "user", "content": "契約の解除"}] and text["top_p"] == 0.9
    assert "system" not in text
    assert messages_headers("k") == {
        "anthropic-version": "2023-06-01",
        "x-api-key": "k",
        "Authorization": "Bearer k",
    }


GOOD: dict[str, Any] = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("change", "status", "needle"),
    [
        ({"max_tokens": None}, 400, "max_tokens: Field required"),
        ({"model": None}, 400, "model: Field required"),
        ({"model": "other"}, 404, "model: other"),
        ({"max_tokens": 0}, 400, "max_tokens: must be an integer >= 1"),
        ({"messages": []}, 400, "messages: must be a non-empty list"),
        ({"messages": [{"role": "system", "content": "x"}]}, 400, "top-level 'system'"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]},
            400,
            "messages.0.content.0",
        ),
        ({"temperature": 1.5}, 400, "temperature: must be a number between 0 and 1"),
        ({"top_p": 0}, 400, "top_p"),
        ({"stop_sequences": ["\n"]}, 400, "stop_sequences"),
        ({"tools": [{"name": "t"}]}, 400, "tools"),
        ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, 400, "thinking"),
        ({"stream": "yes"}, 400, "stream: must be a boolean"),
    ],
)
def test_request_checks_follow_the_reference(change: dict[str, Any], status: int, needle: str) -> None:
    with pytest.raises(APIError) as err:
        parse_messages_request({**GOOD, **change}, "m")
    assert err.value.status == status and needle in err.value.message


def test_request_with_system_blocks_and_history() -> None:
    body = {
        **GOOD,
        "system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
            {"role": "user", "content": "again"},
        ],
        "metadata": {"user_id": "u"},
        "thinking": {"type": "disabled"},
        "temperature": 0,
        "stream": True,
    }
    parsed = parse_messages_request(body, "m")
    assert parsed.messages == (
        ("system", "Be brief."),
        ("user", "hi"),
        ("assistant", "hello"),
        ("user", "again"),
    )
    assert parsed.kind == "chat" and parsed.stream and parsed.temperature == 0.0 and parsed.max_tokens == 8


# --------------------------------------------------------------------------------- serve, end to end


@pytest.fixture(scope="module")
def served(tiny: Any) -> Iterator[dict[str, Any]]:
    spec = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu")
    with (
        # One server batches (serve's default on a CPU is 16), the other decodes one request at a time:
        # the Messages API behaves the same in both modes.
        ServerThread(create_app(spec, ServeConfig(max_batch=4))) as s,
        ServerThread(create_app(spec, ServeConfig(api_key="sekrit", max_batch=1))) as a,
    ):
        yield {"spec": s.url, "auth": a.url, "model": spec.model_name}


def _events(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> list[tuple[str, Any]]:
    """(event name, payload) pairs of a streamed response, checked to agree with each other."""
    out: list[tuple[str, Any]] = []
    name = None
    with httpx.stream("POST", url + "/v1/messages", json=body, headers=headers, timeout=30) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith(
            "text/event-stream"
        )
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                payload = json.loads(line[len("data: ") :])
                assert payload["type"] == name  # the reference repeats the event name as the payload's type
                out.append((name, payload))
    return out


def _counters(url: str) -> dict[str, float]:
    reading = read_counters(parse_metrics(httpx.get(url + "/metrics").text))
    return {name: sum(series.values()) for name, series in reading.counters.items()}


def test_serve_streams_the_reference_event_sequence(served: dict[str, Any]) -> None:
    question = [{"role": "user", "content": "Define force majeure."}]
    body = {"model": served["model"], "max_tokens": 24, "temperature": 0, "stream": True,
            "system": "Be brief.", "messages": question}  # fmt: skip
    before = _counters(served["spec"])
    events = _events(served["spec"], body)
    after = _counters(served["spec"])
    names = [n for n, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(names[3:-3]) == {"content_block_delta"}
    start, delta = events[0][1]["message"], events[-2][1]
    assert start["role"] == "assistant" and start["content"] == [] and start["stop_reason"] is None
    output = delta["usage"]["output_tokens"]
    assert delta["delta"]["stop_reason"] in ("end_turn", "max_tokens") and 1 <= output <= 24
    assert after["generation_tokens"] - before["generation_tokens"] == output
    assert after["prompt_tokens"] - before["prompt_tokens"] == start["usage"]["input_tokens"]
    text = "".join(p["delta"]["text"] for n, p in events if n == "content_block_delta")
    # The same conversation through the chat API renders to the same tokens: same text, same counts.
    whole = httpx.post(served["spec"] + "/v1/messages", json={**body, "stream": False}, timeout=30).json()
    assert whole["type"] == "message" and whole["content"] == [{"type": "text", "text": text}]
    assert whole["usage"] == {"input_tokens": start["usage"]["input_tokens"], "output_tokens": output}
    chat = {"messages": [{"role": "system", "content": "Be brief."}, *body["messages"]], "max_tokens": 24,
            "temperature": 0}  # fmt: skip
    reply = httpx.post(served["spec"] + "/v1/chat/completions", json=chat, timeout=30).json()
    assert reply["choices"][0]["message"]["content"] == text
    assert reply["usage"]["prompt_tokens"] == start["usage"]["input_tokens"]


def test_serve_errors_in_anthropics_shape(served: dict[str, Any]) -> None:
    post = httpx.post(
        served["spec"] + "/v1/messages", json={"model": served["model"], "messages": []}, timeout=10
    )
    assert post.status_code == 400
    assert post.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
    }
    missing = httpx.post(served["spec"] + "/v1/messages", json={**GOOD, "model": "nope"}, timeout=10)
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found_error"
    long = {**GOOD, "model": served["model"], "max_tokens": 100_000}
    too_long = httpx.post(served["spec"] + "/v1/messages", json=long, timeout=10)
    assert too_long.status_code == 400 and "maximum context length" in too_long.json()["error"]["message"]
    bad_json = httpx.post(served["spec"] + "/v1/messages", content=b"{", timeout=10)
    assert bad_json.status_code == 400 and bad_json.json()["type"] == "error"


def test_serve_takes_the_key_as_x_api_key_or_bearer(served: dict[str, Any]) -> None:
    body = {**GOOD, "model": served["model"], "max_tokens": 4, "temperature": 0}
    none = httpx.post(served["auth"] + "/v1/messages", json=body, timeout=10)
    assert none.status_code == 401 and none.json()["error"]["type"] == "authentication_error"
    for headers in (messages_headers("sekrit"), {"x-api-key": "sekrit"}, {"Authorization": "Bearer sekrit"}):
        assert (
            httpx.post(served["auth"] + "/v1/messages", json=body, headers=headers, timeout=30).status_code
            == 200
        )
    wrong = httpx.post(served["auth"] + "/v1/messages", json=body, headers={"x-api-key": "nope"}, timeout=10)
    assert wrong.status_code == 401
    models = httpx.get(served["auth"] + "/v1/models", headers={"x-api-key": "sekrit"}, timeout=10)
    assert models.status_code == 200


PROMPTS = (
    Prompt("a", "general", "The lighthouse keeper had not seen a ship", None, None, 1),
    Prompt(
        "b",
        "legal",
        None,
        (Message("system", "Be brief."), Message("user", "Define force majeure.")),
        None,
        2,
    ),
    Prompt("c", "legal", "This agreement shall be governed by", None, 12, 3),
)


def test_load_messages_against_serve_equals_its_counters(served: dict[str, Any], tmp_path: Path) -> None:
    url = served["spec"]
    before = _counters(url)
    cfg = LoadConfig(endpoint=url, prompts=PROMPTS, api="messages", max_tokens=16, warmup=0, api_key="unused",
                     phases=[Phase(concurrency=2)], warmup_per_level=0)  # fmt: skip
    result = asyncio.run(execute_load(cfg, config={"api": "messages"}, csv_out=tmp_path / "r.csv"))
    after = _counters(url)
    (level,) = result["candidates"]
    assert level["load"]["completed"] == 3 and level["load"]["failed"] == 0
    assert level["load"]["token_sources"] == {"usage_distributed": 3}
    summary = level["summary"]
    assert summary["emitted_tokens"] == after["generation_tokens"] - before["generation_tokens"]
    with open(tmp_path / "r.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sum(int(r["prompt_tokens"]) for r in rows) == after["prompt_tokens"] - before["prompt_tokens"]
    # No per-request reports in this API: acceptance comes from the /metrics counter deltas, exactly.
    assert level["server"]["used"] == "metrics"
    assert level["server"]["metrics"]["drafted_tokens"] == after["draft_tokens"] - before["draft_tokens"]
    assert level["server"]["metrics"]["accepted_tokens"] == after["accepted"] - before["accepted"]
    assert summary["ttft_ms"]["mean"] > 0


def test_conversations_over_the_messages_api_carry_the_streamed_answers(
    fake: tuple[MessagesBehaviour, str],
) -> None:
    behaviour, url = fake
    first = (Message("system", "Be brief."), Message("user", "Define lien."))
    chat = Prompt("c", "legal", None, first, None, 1, followups=("And a pledge?",))
    cfg = LoadConfig(endpoint=url, prompts=(chat,), api="messages", model="m", warmup=0, scrape_metrics=False,
                     warmup_per_level=0)  # fmt: skip  # the request bodies are read by position
    result = asyncio.run(execute_load(cfg, config={"api": "messages"}))
    assert result["candidates"][0]["load"]["completed"] == 2  # c and c#2
    second = behaviour.bodies[1]
    assert second["system"] == "Be brief."
    assert second["messages"] == [
        {"role": "user", "content": "Define lien."},
        {"role": "assistant", "content": "Hello, world"},  # the first turn's text deltas, joined
        {"role": "user", "content": "And a pledge?"},
    ]
