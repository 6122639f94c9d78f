"""What ``load`` sends: one streamed OpenAI request per (prompt, index), shaped for the server under test.

Request ``index`` takes prompt ``index mod len(prompts)``, so a level longer than the golden set cycles
through it and two endpoints given the same indices receive the same prompts (which is what pairs their
requests for E_meas). The chat or completions API follows the prompt (``--api auto``) or the option. A
conversation's later turns carry the server's own earlier answers (``loadlevel`` sends them in order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from specmeter.serving.client import StreamRequest
from specmeter.serving.loadconfig import Endpoint, LoadConfig
from specmeter.workloads.loader import Prompt
from specmeter.workloads.render import plain_chat_text, turn_id, turn_messages

__all__ = ["build_request", "prompt_of"]

# Which request fields make each server kind report tokens per chunk (see serving.client).
_EXTRAS: dict[str, dict[str, Any]] = {
    "vllm": {"continuous_usage_stats": True, "return_token_ids": True},
    "sglang": {"continuous_usage_stats": True},
    "llamacpp": {"timings_per_token": True},
}


def prompt_of(cfg: LoadConfig, index: int) -> Prompt:
    """The golden-set prompt request ``index`` sends: the trace line's, else ``index mod len(prompts)``."""
    if cfg.trace is not None:
        return cfg.prompts[cfg.trace[index % len(cfg.trace)].prompt_index]
    return cfg.prompts[index % len(cfg.prompts)]


def build_request(cfg: LoadConfig, ep: Endpoint, index: int, answers: Sequence[str] = ()) -> StreamRequest:
    """Request ``index`` of a level against ``ep``; for turn t of a conversation, ``answers`` holds the
    server's own answers to turns 0..t−1 (``workloads.turn_messages``: a chat client's history)."""
    entry = cfg.trace[index % len(cfg.trace)] if cfg.trace is not None else None
    prompt = prompt_of(cfg, index)
    turn = len(answers)
    if turn:
        prompt = dataclasses.replace(prompt, messages=turn_messages(prompt, answers), followups=())
    chat = prompt.is_chat if cfg.api == "auto" else cfg.api == "chat"
    payload: dict[str, Any] = {"model": ep.model}
    if chat:
        messages = prompt.messages or ()
        payload["messages"] = (
            [m.as_dict() for m in messages] if messages else [{"role": "user", "content": prompt.text}]
        )
    else:
        payload["prompt"] = prompt.text if prompt.text is not None else plain_chat_text(prompt.messages or ())
    payload.update(
        max_tokens=(entry.output_tokens if entry is not None else None)
        or prompt.max_tokens
        or cfg.max_tokens,
        temperature=cfg.temperature_of(index),
        top_p=cfg.top_p,
        seed=cfg.seed + index + 7919 * turn,
        stream=True,
        stream_options={"include_usage": True},
    )
    extras = dict(_EXTRAS.get(ep.kind, {}))
    if extras.pop("continuous_usage_stats", False):
        payload["stream_options"]["continuous_usage_stats"] = True
    payload.update(extras)
    payload.update(cfg.extra_body)
    path = "/v1/chat/completions" if chat else "/v1/completions"
    return StreamRequest(turn_id(prompt.id, turn), prompt.category, ep.url + path, payload)
