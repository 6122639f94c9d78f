"""What ``load`` sends: one streamed request per (prompt, index), shaped for the server under test.

Request ``index`` takes prompt ``index mod len(prompts)``, so a level longer than the golden set cycles
through it and two endpoints given the same indices receive the same prompts (which is what pairs their
requests for E_meas). The chat or completions API follows the prompt (``--api auto``) or the option;
``--api messages`` sends Anthropic's Messages request instead (``wire.messages.messages_payload``). A
conversation's later turns carry the server's own earlier answers (``load.level`` sends them in order).

**Every field costs the server something**, and a load generator that makes the server work harder than
production traffic does reports latencies its users will not see (issue 19; docs/serving.md, "What each
request field costs"). So a request carries only what correct counting needs:

- ``stream: true`` and ``stream_options.include_usage`` — the stream itself and one final ``usage`` chunk
  with the exact output token count. Always sent.
- one per-chunk token count (``--chunk-counts``, ``CHUNK_COUNT_FIELDS``): a speculative server sends up to
  k + 1 tokens per chunk, and per-token gaps need to know how many. ``auto`` picks the one field of the
  server kind that is cheapest to produce; ``none`` sends nothing extra and the client spreads the final
  usage over the chunks (``usage_distributed``: TTFT, chunk gaps and TPOT stay exact, per-token gaps become
  approximate).
- ``metadata.domain`` (``--domain-metadata``, on by default; chat and completions APIs only): the prompt's
  golden-set category, a few bytes, so a server's request log (``serve --log``) knows each request's domain.
  Servers without the field ignore it (vLLM's ``OpenAIBaseModel`` logs each ignored field at warning
  level, one line per request, vllm/entrypoints/openai/protocol.py); ``--no-domain-metadata`` leaves it
  out. Not sent on the Messages API, whose ``metadata`` takes ``user_id`` only, nor for a golden set
  without categories.
- ``seed`` only with ``--request-seeds``: it makes sampled outputs repeatable, but on vLLM a seeded request
  gets its own generator and leaves the batched sampling path, so it is opt-in.

Never sent: SGLang's ``return_meta_info``. It is what would bring SGLang's per-request speculative counts
(``meta_info``), but its ``/v1/chat/completions`` refuses a streamed request that sets it and its
``/v1/completions`` has no such field (``monitoring.adapters.sglang_meta`` cites the source), so sending it
would fail every request rather than cost something. Against SGLang, ``load`` reads acceptance from its
/metrics gauges; a gateway or build that adds ``meta_info`` to the stream is still read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from specmeter.load.client import StreamRequest
from specmeter.load.config import ChunkCounts, Endpoint, LoadConfig
from specmeter.metrics.warmup import WARMUP_METADATA
from specmeter.monitoring.adapters import ServerKind
from specmeter.wire.messages import messages_payload
from specmeter.workloads.loader import DEFAULT_CATEGORY, Prompt
from specmeter.workloads.render import plain_chat_text, turn_id, turn_messages

__all__ = [
    "CHUNK_COUNTS", "CHUNK_COUNT_FIELDS", "ChunkCounts", "build_request", "chunk_count_source", "prompt_of",
]  # fmt: skip

CHUNK_COUNTS: tuple[ChunkCounts, ...] = ("auto", "usage", "token_ids", "timings", "none")

# The request fields behind each per-chunk token count (load.client reads the answers).
CHUNK_COUNT_FIELDS: Mapping[str, Mapping[str, Any]] = {
    # A running usage total on every chunk: a few integers per chunk (vLLM, SGLang, specmeter serve).
    "usage": {"stream_options": {"continuous_usage_stats": True}},
    # The chunk's token ids (vLLM ≥ 0.10.2, specmeter serve); vLLM adds the prompt's ids to the first chunk.
    "token_ids": {"return_token_ids": True},
    # llama.cpp's timings object, with the running predicted_n, on every chunk.
    "timings": {"timings_per_token": True},
    "none": {},
}

# ``--chunk-counts auto``: the cheapest per-chunk count each server kind gives. vLLM's ``return_token_ids``
# would do too, but it also sends every prompt token id in the first chunk; continuous usage is a few ints.
_AUTO: Mapping[ServerKind, str] = {"vllm": "usage", "sglang": "usage", "llamacpp": "timings"}


def chunk_count_source(kind: ServerKind, chunk_counts: ChunkCounts) -> str:
    """The per-chunk token count asked of a server of ``kind``: a key of ``CHUNK_COUNT_FIELDS``."""
    return _AUTO.get(kind, "none") if chunk_counts == "auto" else chunk_counts


def prompt_of(cfg: LoadConfig, index: int) -> Prompt:
    """The golden-set prompt request ``index`` sends: the trace line's, else ``index mod len(prompts)``."""
    if cfg.trace is not None:
        return cfg.prompts[cfg.trace[index % len(cfg.trace)].prompt_index]
    return cfg.prompts[index % len(cfg.prompts)]


def build_request(
    cfg: LoadConfig, ep: Endpoint, index: int, answers: Sequence[str] = (), *, warmup: bool = False
) -> StreamRequest:
    """Request ``index`` of a level against ``ep``; for turn t of a conversation, ``answers`` holds the
    server's own answers to turns 0..t−1 (``workloads.turn_messages``: a chat client's history)."""
    entry = cfg.trace[index % len(cfg.trace)] if cfg.trace is not None else None
    prompt = prompt_of(cfg, index)
    turn = len(answers)
    if turn:
        prompt = dataclasses.replace(prompt, messages=turn_messages(prompt, answers), followups=())
    max_tokens = (entry.output_tokens if entry is not None else None) or prompt.max_tokens or cfg.max_tokens
    if cfg.api == "messages":
        body = messages_payload(
            prompt, ep.model, max_tokens=max_tokens, temperature=cfg.temperature_of(index), top_p=cfg.top_p
        )
        body.update(cfg.extra_body)
        return StreamRequest(turn_id(prompt.id, turn), prompt.category, ep.url + "/v1/messages", body)
    chat = prompt.is_chat if cfg.api == "auto" else cfg.api == "chat"
    payload: dict[str, Any] = {"model": ep.model}
    if chat:
        messages = prompt.messages or ()
        payload["messages"] = (
            [m.as_dict() for m in messages] if messages else [{"role": "user", "content": prompt.text}]
        )
    else:
        payload["prompt"] = prompt.text if prompt.text is not None else plain_chat_text(prompt.messages or ())
    stream_options: dict[str, Any] = {"include_usage": True}
    payload.update(
        max_tokens=max_tokens,
        temperature=cfg.temperature_of(index),
        top_p=cfg.top_p,
        stream=True,
        stream_options=stream_options,
    )
    if cfg.request_seeds:
        payload["seed"] = cfg.seed + index + 7919 * turn
    for name, value in CHUNK_COUNT_FIELDS[chunk_count_source(ep.kind, cfg.chunk_counts)].items():
        if name == "stream_options":
            stream_options.update(value)
        else:
            payload[name] = value
    extra = dict(cfg.extra_body)
    if cfg.domain_metadata and prompt.category != DEFAULT_CATEGORY:
        # The golden set's category travels with the request (serve --log writes it as the domain); an
        # --extra-body metadata object keeps its own keys beside it.
        given = extra.get("metadata")
        payload["metadata"] = {"domain": prompt.category, **(given if isinstance(given, Mapping) else {})}
        if isinstance(given, Mapping):
            del extra["metadata"]
    if warmup:  # marked even with --no-domain-metadata: a warm-up request is never traffic (metrics.warmup)
        given = payload.get("metadata", extra.pop("metadata", None))
        payload["metadata"] = {**(given if isinstance(given, Mapping) else {}), WARMUP_METADATA: "true"}
    payload.update(extra)
    path = "/v1/chat/completions" if chat else "/v1/completions"
    return StreamRequest(turn_id(prompt.id, turn), prompt.category, ep.url + path, payload)
