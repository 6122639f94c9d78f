"""From a logged request to the token ids replay walks, and the log's honesty checks.

Replay is valid only for responses the target produced, tokenized as the target tokenized them:

- **prompt**: the logged ``prompt_ids`` when there are any (``serve --log-output``), else the prompt or
  messages rendered as ``serve`` renders them (``workloads.render.render_prompt``: the chat template, or
  the plain rendering of a template-less tokenizer).
- **response**: the logged ``output_ids`` when there are any; their text, when logged too, must decode
  from them (else the ids are another tokenizer's: the request is set aside as ``tokenizer``). Without
  ids the text is encoded and must decode back to itself (else ``tokenizer``); a text that re-encodes to
  other ids than the logged ones is counted as ``not_canonical`` (the model produced a tokenization the
  tokenizer would not: a text-only log of such responses is replayed on slightly different tokens).
- **model**: a request naming a model other than the one replayed (``--model``, else the target
  directory's name) is set aside as ``other_model``.
- **end**: a response that ended at EOS gets the tokenizer's EOS id when the log left it out (text logs
  do); its limit is the logged ``max_tokens`` (none: never reached); one that ended by length has its own
  length as the limit.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from specmeter.replay.logs import LoggedRequest
from specmeter.workloads.loader import Prompt
from specmeter.workloads.render import render_prompt

__all__ = ["Flag", "Prepared", "TokenChecks", "prepare"]

Flag = Literal["other_model", "tokenizer", "empty", "context"]


@dataclass(frozen=True)
class Prepared:
    """A request ready to walk: prompt ids, the response as committed (cut at EOS), its token limit."""

    request: LoggedRequest
    prompt: tuple[int, ...]
    response: tuple[int, ...]
    max_tokens: int
    not_canonical: bool


@dataclass(frozen=True)
class TokenChecks:
    """What a request is checked against: the tokenizer, its EOS ids, the model the log must name."""

    tokenizer: Any
    eos_ids: frozenset[int]
    model: str
    vocab_size: int
    k_max: int
    # With a method that runs a model: the target's context (a request walked needs prompt + response +
    # k + 1 positions); None for model-free methods, which hold any length.
    context: int | None = None

    @property
    def eos_id(self) -> int | None:
        own = getattr(self.tokenizer, "eos_token_id", None)
        if isinstance(own, int) and own in self.eos_ids:
            return own
        return min(self.eos_ids) if self.eos_ids else None


def _decode(tokenizer: Any, ids: Collection[int]) -> str:
    return str(tokenizer.decode(list(ids), skip_special_tokens=True))


def _encode(tokenizer: Any, text: str) -> list[int]:
    return [int(t) for t in tokenizer(text, add_special_tokens=False)["input_ids"]]


def _cut(ids: tuple[int, ...], eos_ids: Collection[int]) -> tuple[int, ...]:
    for i, t in enumerate(ids):
        if t in eos_ids:
            return ids[: i + 1]
    return ids


def prepare(request: LoggedRequest, checks: TokenChecks) -> Prepared | tuple[Flag, str]:
    """The request's ids, or (flag, reason) when the log cannot stand for the target's own response."""
    if request.model is not None and request.model != checks.model:
        return "other_model", f"names model {request.model!r}, not {checks.model!r}"
    tok, eos = checks.tokenizer, checks.eos_ids
    if request.prompt_ids is not None:
        prompt = request.prompt_ids
    else:
        assert request.prompt is not None
        p = request.prompt
        rendered = Prompt(request.id, request.category, p.text, p.messages, p.max_tokens, request.line)
        prompt = tuple(render_prompt(rendered, tok))
    if not prompt:
        return "empty", "the prompt renders to no tokens"
    beyond = f"token ids beyond the vocabulary ({checks.vocab_size})"
    if any(t >= checks.vocab_size for t in prompt):
        return "tokenizer", "prompt " + beyond
    not_canonical = False
    text = request.output_text
    if request.output_ids is not None:
        response = request.output_ids
        if any(t >= checks.vocab_size for t in response):
            return "tokenizer", "response " + beyond
        if text is not None:
            if _decode(tok, response) != text:
                return "tokenizer", "the logged ids do not decode to the logged text with this tokenizer"
            body = response[:-1] if response and response[-1] in eos else response
            not_canonical = tuple(_encode(tok, text)) != body
    else:
        assert text is not None
        response = tuple(_encode(tok, text))
        if _decode(tok, response) != text:
            return "tokenizer", "the response text does not survive encoding and decoding with this tokenizer"
    if request.end == "eos" and (not response or response[-1] not in eos):
        eos_id = checks.eos_id
        if eos_id is None:
            return "tokenizer", "the response ended at EOS, and the tokenizer names no EOS token"
        response = (*response, eos_id)
    response = _cut(response, eos)
    if not response:
        return "empty", "the response has no tokens"
    if request.end == "length":
        limit = len(response)
    elif request.max_tokens is not None and request.max_tokens >= len(response):
        limit = request.max_tokens
    elif request.end == "eos":
        limit = len(response) + checks.k_max + 1  # the limit was never near
    else:
        limit = len(response)
    response = response[:limit]
    if checks.context is not None and len(prompt) + len(response) + checks.k_max + 1 > checks.context:
        return "context", (
            f"{len(prompt)} prompt and {len(response)} response tokens (+ k {checks.k_max} + 1) exceed the "
            f"context of {checks.context} (the target's, or a draft's)"
        )
    return Prepared(request, tuple(prompt), tuple(response), limit, not_canonical)
