"""Anthropic's Messages API on the wire: the request ``load`` sends, the bodies and events ``serve`` answers.

Checked against Anthropic's published reference (read 2026 through the search tool):

- *Create a Message*, ``POST /v1/messages`` (https://platform.claude.com/docs/en/api/messages/create; the
  SDK pages https://platform.claude.com/docs/en/api/java/messages/create show the same parameters):
  ``model``, ``messages`` and ``max_tokens`` are required; a message is ``{"role": "user" | "assistant",
  "content": string | [content blocks]}`` — there is no ``system`` role, the system prompt is the top-level
  ``system`` (a string or a list of text blocks); ``temperature`` ranges over 0.0–1.0 (default 1.0);
  ``top_p``, ``top_k``, ``stop_sequences``, ``stream``, ``metadata``, ``tools``, ``tool_choice`` and
  ``thinking`` are optional. Requests carry ``anthropic-version`` (``2023-06-01``) and ``x-api-key``.
- The response: ``{"id", "type": "message", "role": "assistant", "content": [{"type": "text", "text"}],
  "model", "stop_reason": "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "pause_turn" |
  "refusal", "stop_sequence", "usage": {"input_tokens", "output_tokens"}}``.
- *Streaming Messages* (https://platform.claude.com/docs/en/build-with-claude/streaming): server-sent
  events, each named by ``event:`` and repeating the name as ``type`` in its JSON — ``message_start`` (a
  message with empty ``content`` and the ``usage`` so far), then per content block ``content_block_start``,
  ``content_block_delta`` (``text_delta``, ``input_json_delta``, ``thinking_delta``, ``signature_delta``)
  and ``content_block_stop``, then ``message_delta`` (``stop_reason`` and ``usage``, whose counts are
  cumulative: the SDK's ``MessageDeltaUsage.output_tokens`` is "the cumulative number of output tokens
  which were used"), then ``message_stop``; ``ping`` events may come anywhere, an ``error`` event
  (``{"type": "error", "error": {"type": "overloaded_error", "message"}}``) may end a stream that already
  answered 200, and clients must skip event types they do not know.
- *Errors* (https://docs.claude.com/en/api/errors): ``{"type": "error", "error": {"type", "message"}}``
  with the type following the status: 400 ``invalid_request_error``, 401 ``authentication_error``, 403
  ``permission_error``, 404 ``not_found_error``, 413 ``request_too_large``, 429 ``rate_limit_error``, 500
  ``api_error``, 529 ``overloaded_error``.

vLLM 0.32 serves the same route (``vllm/entrypoints/anthropic``) by converting it to a chat completion, and
also takes ``Authorization: Bearer`` (its only API-key check), so ``load`` sends the key both ways.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specmeter.metrics.records import FinishReason
from specmeter.wire.openai import APIError, ParsedRequest
from specmeter.workloads.loader import Prompt

__all__ = [
    "ANTHROPIC_VERSION",
    "ERROR_TYPES",
    "STOP_REASONS",
    "Event",
    "delta_event",
    "error_body",
    "error_event",
    "finish_events",
    "message_body",
    "messages_headers",
    "messages_payload",
    "parse_messages_request",
    "start_events",
]

ANTHROPIC_VERSION = "2023-06-01"
MAX_TEMPERATURE = 1.0  # the reference's range
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
# The reference's stop reasons as the records' finish reasons: a natural end of turn, a stop sequence and a
# tool call are the model stopping by itself; pause_turn and refusal end a turn the client must resume.
STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "eos",
    "stop_sequence": "eos",
    "tool_use": "eos",
    "max_tokens": "length",
}
_SERVED_STOP = {"eos": "end_turn", "length": "max_tokens"}
_REFUSED = {
    "stop_sequences": "stop sequences are not supported by specmeter serve",
    "top_k": "top_k is not supported by specmeter serve (temperature and top_p are)",
    "tools": "tools are not supported by specmeter serve",
    "tool_choice": "tool_choice is not supported by specmeter serve",
}


# ----------------------------------------------------------------------------------------- client side


def messages_payload(
    prompt: Prompt, model: str | None, *, max_tokens: int, temperature: float, top_p: float
) -> dict[str, Any]:
    """The streaming request body for one golden-set prompt.

    System messages go to the top-level ``system`` (joined by blank lines when there are several), the
    rest keep their order; a text prompt becomes one user message. ``top_p`` is sent only when it is not
    1.0: the reference asks clients to alter temperature or top_p, not both. The Messages API has no
    ``seed``, so requests at temperature > 0 are not reproducible through it.
    """
    messages = [m for m in prompt.messages or () if m.role != "system"]
    system = [m.content for m in prompt.messages or () if m.role == "system"]
    payload: dict[str, Any] = {"model": model}
    if system:
        payload["system"] = "\n\n".join(system)
    payload["messages"] = (
        [m.as_dict() for m in messages] if messages else [{"role": "user", "content": prompt.text or ""}]
    )
    payload.update(max_tokens=max_tokens, temperature=temperature, stream=True)
    if top_p != 1.0:
        payload["top_p"] = top_p
    return payload


def messages_headers(api_key: str | None) -> dict[str, str]:
    headers = {"anthropic-version": ANTHROPIC_VERSION}
    if api_key:
        headers.update({"x-api-key": api_key, "Authorization": f"Bearer {api_key}"})
    return headers


# ----------------------------------------------------------------------------------------- server side


def error_body(status: int, message: str, error_type: str | None = None) -> dict[str, Any]:
    """Anthropic's error shape; the type follows the status unless given."""
    kind = error_type or ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def error_event(message: str, error_type: str = "api_error") -> dict[str, Any]:
    return error_body(500, message, error_type)


def _bad(message: str) -> APIError:
    return APIError(400, message)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value: object, where: str) -> str:
    """A string, or the text of a list of text blocks; other blocks (images, tool results) are refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for i, block in enumerate(value):
            if not (
                isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ):
                kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
                raise _bad(f"{where}.{i}: only text blocks are supported by specmeter serve, got {kind!r}")
            parts.append(block["text"])
        return "".join(parts)
    raise _bad(f"{where}: must be a string or a list of text blocks")


def parse_messages_request(body: object, served_model: str) -> ParsedRequest:
    """Check a Messages request body; APIError (4xx) names the offending field in Anthropic's wording."""
    if not isinstance(body, Mapping):
        raise _bad("the request body must be a JSON object")
    for name in ("model", "messages", "max_tokens"):
        if body.get(name) is None:
            raise _bad(f"{name}: Field required")
    model = body["model"]
    if model != served_model:
        raise APIError(404, f"model: {model}")
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise _bad(f"max_tokens: must be an integer >= 1, got {max_tokens!r}")
    for name, why in _REFUSED.items():
        if body.get(name):
            raise _bad(f"{name}: {why}")
    thinking = body.get("thinking")
    if thinking is not None and not (isinstance(thinking, Mapping) and thinking.get("type") == "disabled"):
        raise _bad("thinking: extended thinking is not supported by specmeter serve")
    raw = body["messages"]
    if not isinstance(raw, list) or not raw:
        raise _bad("messages: must be a non-empty list")
    conversation: list[tuple[str, str]] = []
    if body.get("system") is not None:
        conversation.append(("system", _text(body["system"], "system")))
    for i, m in enumerate(raw):
        if not isinstance(m, Mapping):
            raise _bad(f"messages.{i}: must be an object with 'role' and 'content'")
        role = m.get("role")
        if role not in ("user", "assistant"):
            hint = " (the system prompt is the top-level 'system' field)" if role == "system" else ""
            raise _bad(f"messages.{i}.role: must be 'user' or 'assistant', got {role!r}{hint}")
        conversation.append((str(role), _text(m.get("content"), f"messages.{i}.content")))
    temperature = body.get("temperature", 1.0)
    if not _number(temperature) or not 0.0 <= temperature <= MAX_TEMPERATURE:
        raise _bad(f"temperature: must be a number between 0 and {MAX_TEMPERATURE:g}, got {temperature!r}")
    top_p = body.get("top_p", 1.0)
    if not _number(top_p) or not 0.0 < top_p <= 1.0:
        raise _bad(f"top_p: must be a number in (0, 1], got {top_p!r}")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _bad(f"stream: must be a boolean, got {stream!r}")
    return ParsedRequest(
        kind="chat",
        model=served_model,
        messages=tuple(conversation),
        max_tokens=max_tokens,
        temperature=float(temperature),
        top_p=float(top_p),
        stream=stream,
    )


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens}


def message_body(
    message_id: str, model: str, text: str, finish: FinishReason, input_tokens: int, output_tokens: int
) -> dict[str, Any]:
    """The non-streaming response."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": _SERVED_STOP.get(finish),
        "stop_sequence": None,
        "usage": _usage(input_tokens, output_tokens),
    }


Event = tuple[str, dict[str, Any]]  # (SSE event name, JSON payload)


def start_events(message_id: str, model: str, input_tokens: int) -> list[Event]:
    """``message_start`` (usage so far: the prompt), the text block's ``content_block_start``, a ``ping``."""
    message = {**message_body(message_id, model, "", "eos", input_tokens, 0), "content": []}
    message["stop_reason"] = None
    block = {"type": "text", "text": ""}
    return [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("ping", {"type": "ping"}),
    ]


def delta_event(text: str) -> Event:
    delta = {"type": "text_delta", "text": text}
    return ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})


def finish_events(finish: FinishReason, total: int) -> list[Event]:
    """``content_block_stop``, ``message_delta`` (stop reason, cumulative usage), ``message_stop``."""
    delta = {"stop_reason": _SERVED_STOP.get(finish), "stop_sequence": None}
    return [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": total}}),
        ("message_stop", {"type": "message_stop"}),
    ]
