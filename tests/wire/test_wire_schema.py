"""Request validation: every mistake is a 4xx naming the field; accepted bodies parse to the right values."""

from __future__ import annotations

from typing import Any

import pytest

from specmeter.wire.openai import APIError, parse_request


def _error(body: Any, kind: str = "completion") -> APIError:
    with pytest.raises(APIError) as info:
        parse_request(body, kind, "m")  # type: ignore[arg-type]
    return info.value


@pytest.mark.parametrize(
    ("body", "param", "fragment"),
    [
        ({}, "prompt", "required"),
        ({"prompt": None}, "prompt", "required"),
        ({"prompt": 3}, "prompt", "must be a string"),
        ({"prompt": ["a", "b"]}, "prompt", "batched prompts"),
        ({"prompt": "x", "max_tokens": 0}, "max_tokens", "at least 1"),
        ({"prompt": "x", "max_tokens": "10"}, "max_tokens", "integer"),
        ({"prompt": "x", "max_tokens": True}, "max_tokens", "integer"),
        ({"prompt": "x", "temperature": -0.1}, "temperature", "between 0 and 2"),
        ({"prompt": "x", "temperature": 2.5}, "temperature", "between 0 and 2"),
        ({"prompt": "x", "temperature": "hot"}, "temperature", "between 0 and 2"),
        ({"prompt": "x", "top_p": 0}, "top_p", "(0, 1]"),
        ({"prompt": "x", "n": 2}, "n", "n = 1"),
        ({"prompt": "x", "stop": ["\n"]}, "stop", "not supported"),
        ({"prompt": "x", "logprobs": 1}, "logprobs", "not supported"),
        ({"prompt": "x", "stream": "yes"}, "stream", "boolean"),
        ({"prompt": "x", "stream_options": {"include_usage": 1}}, "stream_options.include_usage", "boolean"),
        ({"prompt": [1, -2]}, "prompt", "non-negative"),
    ],
)
def test_bad_completion_requests(body: dict[str, Any], param: str, fragment: str) -> None:
    error = _error(body)
    assert error.status == 400
    assert error.param == param
    assert fragment in error.message
    assert error.body()["error"]["type"] == "invalid_request_error"


def test_unknown_model_is_404_model_not_found() -> None:
    error = _error({"prompt": "x", "model": "gpt-9"})
    assert (error.status, error.code, error.param) == (404, "model_not_found", "model")
    assert "gpt-9" in error.message


def test_body_must_be_an_object() -> None:
    assert _error([1, 2]).status == 400


@pytest.mark.parametrize(
    ("messages", "param"),
    [
        (None, "messages"),
        ([], "messages"),
        (["hi"], "messages[0]"),
        ([{"role": "tool", "content": "x"}], "messages[0].role"),
        ([{"role": "user", "content": [{"type": "image_url"}]}], "messages[0].content"),
        ([{"role": "user", "content": 5}], "messages[0].content"),
    ],
)
def test_bad_chat_requests(messages: Any, param: str) -> None:
    body = {} if messages is None else {"messages": messages}
    assert _error(body, "chat").param == param


def test_accepted_bodies() -> None:
    p = parse_request(
        {
            "prompt": ["hello"],
            "max_tokens": 7,
            "temperature": 0,
            "top_p": 0.5,
            "seed": 3,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
            "return_token_ids": True,
            "user": "ignored",
            "presence_penalty": 0,
        },
        "completion",
        "m",
    )
    assert (p.prompt_text, p.max_tokens, p.temperature, p.top_p, p.seed) == ("hello", 7, 0.0, 0.5, 3)
    assert p.stream and p.include_usage and p.continuous_usage and p.return_token_ids
    ids = parse_request({"prompt": [[1, 2, 3]]}, "completion", "m")
    assert ids.prompt_ids == (1, 2, 3) and ids.prompt_text is None
    chat = parse_request(
        {
            "model": "m",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            ],
            "max_completion_tokens": 4,
            "max_tokens": 9,
        },
        "chat",
        "m",
    )
    assert chat.messages == (("system", "Be brief."), ("user", "ab"))
    assert chat.max_tokens == 4  # max_completion_tokens wins, as in OpenAI's API
    defaults = parse_request({"prompt": "x"}, "completion", "m")
    assert (defaults.temperature, defaults.max_tokens, defaults.stream) == (1.0, None, False)


@pytest.mark.parametrize("seed", [2**63, -(2**63) - 1, 1180591620717411303424, 1.5, "7", True])
def test_seed_outside_64_bits_is_a_400(seed: Any) -> None:
    # Issue 12: "seed": 1180591620717411303424 was an HTTP 500 (OverflowError in torch's manual_seed).
    error = _error({"prompt": "x", "seed": seed})
    assert (error.status, error.param) == (400, "seed") and "between" in error.message


def test_seed_at_the_64_bit_bounds_is_accepted() -> None:
    for seed in (2**63 - 1, -(2**63), 0):
        assert parse_request({"prompt": "x", "seed": seed}, "completion", "m").seed == seed
