"""OpenAI response bodies and stream chunks, plus incremental detokenization for streaming text.

Shapes follow the OpenAI API as vLLM serves it: ``text_completion`` / ``chat.completion(.chunk)`` objects,
``usage`` with prompt/completion/total tokens, vLLM's ``token_ids`` per choice when the client sent
``return_token_ids``, and vLLM's per-request ``metrics.speculative_decoding`` object (vLLM PR #48915) so
``specmeter load`` can read per-request acceptance from ``serve`` exactly as from vLLM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specmeter.server.engine import GenerationResult

__all__ = [
    "FINISH_REASONS",
    "TextStream",
    "final_response",
    "spec_metrics",
    "stream_chunk",
    "usage",
]

FINISH_REASONS = {"eos": "stop", "length": "length", "interrupted": "abort"}


class TextStream:
    """Turns a growing list of token ids into text deltas that concatenate to the full decoded text.

    Decoding token by token is wrong for byte-level and SentencePiece tokenizers (a character can span
    tokens, spaces attach to the next token), so the whole output is decoded and the new suffix is sent.
    A trailing U+FFFD means an incomplete UTF-8 sequence: it is held back until the next tokens complete it.
    """

    def __init__(self, decode: Callable[[Sequence[int]], str]) -> None:
        self._decode = decode
        self.ids: list[int] = []
        self.sent = ""

    def push(self, tokens: Sequence[int], *, final: bool = False) -> str:
        self.ids.extend(tokens)
        text = self._decode(self.ids)
        if text.endswith("\ufffd") and not final:
            return ""
        if text.startswith(self.sent):
            delta = text[len(self.sent) :]
        else:  # the tokenizer revised earlier text (rare); sent text cannot be taken back, so send what's new
            common = 0
            for a, b in zip(text, self.sent, strict=False):
                if a != b:
                    break
                common += 1
            delta = text[max(common, len(self.sent)) :]
        self.sent = text
        return delta


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def spec_metrics(result: GenerationResult, k: int) -> dict[str, Any] | None:
    """vLLM's per-request ``metrics.speculative_decoding`` object; None without speculation."""
    if k < 1:
        return None
    steps = [s for s in result.steps if s.drafted >= 1]
    drafted = sum(s.drafted for s in steps)
    accepted = sum(s.accepted for s in steps)
    histogram = [0] * (k + 1)  # index j: steps that accepted exactly j drafted tokens
    by_length: dict[str, list[int]] = {}  # the same per draft length (drafts near the limit are shorter)
    for s in steps:
        histogram[min(s.accepted, k)] += 1
        by_length.setdefault(str(s.drafted), [0] * (s.drafted + 1))[s.accepted] += 1
    return {
        "mean_acceptance_length": 1.0 + accepted / len(steps) if steps else None,
        "draft_acceptance_rate": accepted / drafted if drafted else None,
        "acceptance_histogram": histogram,
        "num_spec_steps": len(steps),
        "num_accepted_draft_tokens": accepted,
        "num_draft_tokens": drafted,
        "num_spec_tokens": k,
        # Proposed upstream in vLLM PR #56278; lets a client rebuild the request's steps exactly.
        "acceptance_histogram_by_draft_length": dict(sorted(by_length.items(), key=lambda kv: int(kv[0]))),
    }


def _base(request_id: str, obj: str, created: int, model: str) -> dict[str, Any]:
    return {"id": request_id, "object": obj, "created": created, "model": model}


def stream_chunk(
    kind: str,
    request_id: str,
    created: int,
    model: str,
    content: str | dict[str, str],
    finish_reason: str | None = None,
    token_ids: Sequence[int] | None = None,
) -> dict[str, Any]:
    """A streamed chunk: ``content`` is a chat's delta (``kind == "chat"``), else the completion's text."""
    chat = kind == "chat"
    choice: dict[str, Any] = {
        "index": 0, "delta" if chat else "text": content, "logprobs": None, "finish_reason": finish_reason
    }  # fmt: skip
    if token_ids is not None:
        choice["token_ids"] = list(token_ids)
    obj = "chat.completion.chunk" if chat else "text_completion"
    return {**_base(request_id, obj, created, model), "choices": [choice]}


def final_response(
    kind: str,
    request_id: str,
    created: int,
    model: str,
    text: str,
    result: GenerationResult,
    prompt_tokens: int,
    k: int,
    *,
    token_ids: bool,
    per_request_metrics: bool,
) -> dict[str, Any]:
    """The non-streaming response body."""
    finish = FINISH_REASONS[result.finish_reason]
    choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": finish}
    if kind == "chat":
        choice["message"] = {"role": "assistant", "content": text}
        body = _base(request_id, "chat.completion", created, model)
    else:
        choice["text"] = text
        body = _base(request_id, "text_completion", created, model)
    if token_ids:
        choice["token_ids"] = list(result.output_ids)
    body["choices"] = [choice]
    body["usage"] = usage(prompt_tokens, len(result.output_ids))
    spec = spec_metrics(result, k) if per_request_metrics else None
    if spec is not None:
        body["metrics"] = {"speculative_decoding": spec}
    return body
