"""The OpenAI request bodies ``serve`` accepts, checked field by field, and OpenAI-style errors.

Validation is written out by hand rather than left to a schema library so that every mistake yields the
one-sentence message and the ``param`` an OpenAI client expects (``{"error": {"message", "type", "param",
"code"}}``). Unknown fields are ignored, as OpenAI-compatible servers do (clients send ``user``,
``presence_penalty`` and the like); fields whose meaning ``serve`` cannot honour (``n`` > 1, ``stop``,
``logprobs``, ``echo``) are refused rather than silently ignored, because ignoring them would change the
output the client thinks it asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["APIError", "ParsedRequest", "parse_request", "surrogate_path"]

ROLES = ("system", "user", "assistant")
MAX_TEMPERATURE = 2.0  # OpenAI's documented range
SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1  # a 64-bit integer, as vLLM takes it (torch.long)


class APIError(Exception):
    """An error response: HTTP status plus OpenAI's error object."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


@dataclass(frozen=True)
class ParsedRequest:
    kind: Literal["completion", "chat"]
    model: str
    prompt_text: str | None = None
    prompt_ids: tuple[int, ...] | None = None
    messages: tuple[tuple[str, str], ...] | None = None
    max_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    stream: bool = False
    include_usage: bool = False
    continuous_usage: bool = False
    return_token_ids: bool = False
    metadata: tuple[tuple[str, str], ...] = ()  # OpenAI's string key-value pairs (the request log keeps them)
    user: str | None = None


def _unicode(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def surrogate_path(body: object) -> str | None:
    """Where the first string of a parsed JSON body holding a lone surrogate is, as a ``param`` path
    (``messages[0].content``; an object's path for one of its keys, ``""`` for the body itself), or None.

    ``"\\ud800"`` is valid JSON but no Unicode text: it cannot be tokenized, logged or echoed as UTF-8, so
    such a request is the client's 400 (issue 29). Walked with a stack: the depth is the parser's.
    """
    stack: list[tuple[object, str]] = [(body, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if not _unicode(value):
                return path
        elif isinstance(value, Mapping):
            for key, item in reversed(list(value.items())):
                if isinstance(key, str) and not _unicode(key):
                    return path
                stack.append((item, f"{path}.{key}" if path else str(key)))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{i}]") for i, item in reversed(list(enumerate(value))))
    return None


def _metadata(body: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    value = body.get("metadata")
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise _bad("'metadata' must be an object of string keys and string values", "metadata")
    return tuple(value.items())


def _bad(message: str, param: str | None) -> APIError:
    return APIError(400, message, param=param)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bool(body: Mapping[str, Any], key: str, default: bool = False, where: str | None = None) -> bool:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _bad(f"'{key}' must be a boolean, got {value!r}", where or key)
    return value


def _positive_int(body: Mapping[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if not _is_int(value):
        raise _bad(f"'{key}' must be an integer, got {value!r}", key)
    if value < 1:
        raise _bad(f"'{key}' must be at least 1, got {value}", key)
    return int(value)


def _prompt(body: Mapping[str, Any]) -> tuple[str | None, tuple[int, ...] | None]:
    if "prompt" not in body or body["prompt"] is None:
        raise _bad("'prompt' is a required property", "prompt")
    prompt = body["prompt"]
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        return prompt, None
    if isinstance(prompt, list) and prompt and all(_is_int(t) for t in prompt):
        if any(t < 0 for t in prompt):
            raise _bad("'prompt' token ids must be non-negative", "prompt")
        return None, tuple(int(t) for t in prompt)
    if isinstance(prompt, list) and len(prompt) > 1:
        raise _bad("batched prompts are not supported; send one prompt per request", "prompt")
    raise _bad("'prompt' must be a string, a list of token ids, or a list holding one of them", "prompt")


def _content(value: object, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if not (
                isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str)
            ):
                raise _bad(f"'{where}' supports text parts only ({{'type': 'text', 'text': ...}})", where)
            parts.append(part["text"])
        return "".join(parts)
    raise _bad(f"'{where}' must be a string or a list of text parts", where)


def _messages(body: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    messages = body.get("messages")
    if messages is None:
        raise _bad("'messages' is a required property", "messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' must be a non-empty list", "messages")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise _bad(f"'messages[{i}]' must be an object with 'role' and 'content'", f"messages[{i}]")
        role = m.get("role")
        if role not in ROLES:
            raise _bad(
                f"'messages[{i}].role' must be one of {', '.join(ROLES)}, got {role!r}", f"messages[{i}].role"
            )
        out.append((str(role), _content(m.get("content"), f"messages[{i}].content")))
    return tuple(out)


def _refuse_unsupported(body: Mapping[str, Any]) -> None:
    n = body.get("n")
    if n is not None and n != 1:
        raise _bad("only n = 1 is supported", "n")
    best_of = body.get("best_of")
    if best_of is not None and best_of != 1:
        raise _bad("only best_of = 1 is supported", "best_of")
    if body.get("stop"):
        raise _bad("stop sequences are not supported by specmeter serve", "stop")
    if body.get("logprobs") or body.get("top_logprobs"):
        raise _bad("logprobs are not supported by specmeter serve; use return_token_ids", "logprobs")
    if body.get("echo"):
        raise _bad("echo is not supported by specmeter serve", "echo")


def parse_request(body: object, kind: Literal["completion", "chat"], served_model: str) -> ParsedRequest:
    """Check an OpenAI request body; raises APIError (4xx) naming the offending field."""
    if not isinstance(body, Mapping):
        raise _bad("the request body must be a JSON object", None)
    model = body.get("model")
    if model is not None and model != served_model:
        raise APIError(404, f"The model `{model}` does not exist.", param="model", code="model_not_found")
    _refuse_unsupported(body)

    prompt_text = prompt_ids = messages = None
    if kind == "completion":
        prompt_text, prompt_ids = _prompt(body)
        max_tokens = _positive_int(body, "max_tokens")
    else:
        messages = _messages(body)
        max_tokens = _positive_int(body, "max_completion_tokens") or _positive_int(body, "max_tokens")

    temperature = body.get("temperature", 1.0)
    if temperature is None:
        temperature = 1.0
    if not _is_number(temperature) or not 0.0 <= temperature <= MAX_TEMPERATURE:
        raise _bad(
            f"'temperature' must be a number between 0 and {MAX_TEMPERATURE:g}, got {temperature!r}",
            "temperature",
        )
    top_p = body.get("top_p", 1.0)
    if top_p is None:
        top_p = 1.0
    if not _is_number(top_p) or not 0.0 < top_p <= 1.0:
        raise _bad(f"'top_p' must be a number in (0, 1], got {top_p!r}", "top_p")
    seed = body.get("seed")
    if seed is not None and not (_is_int(seed) and SEED_MIN <= seed <= SEED_MAX):
        shown = repr(seed) if len(repr(seed)) <= 40 else repr(seed)[:37] + "..."
        raise _bad(f"'seed' must be an integer between {SEED_MIN} and {SEED_MAX}, got {shown}", "seed")

    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise _bad(f"'user' must be a string, got {user!r}", "user")
    stream = _bool(body, "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, Mapping):
        raise _bad("'stream_options' must be an object", "stream_options")
    return ParsedRequest(
        kind=kind,
        model=served_model,
        prompt_text=prompt_text,
        prompt_ids=prompt_ids,
        messages=messages,
        max_tokens=max_tokens,
        temperature=float(temperature),
        top_p=float(top_p),
        seed=None if seed is None else int(seed),
        stream=stream,
        include_usage=_bool(options, "include_usage", where="stream_options.include_usage"),
        continuous_usage=_bool(
            options, "continuous_usage_stats", where="stream_options.continuous_usage_stats"
        ),
        return_token_ids=_bool(body, "return_token_ids"),
        metadata=_metadata(body),
        user=user,
    )
