"""One streamed Anthropic Messages response, read event by event (the events: ``wire.messages``).

What the stream says, and what it does not:

- ``message_start`` carries the prompt's size: ``usage.input_tokens`` plus any ``cache_read_input_tokens``
  and ``cache_creation_input_tokens`` (Anthropic counts cached prompt tokens apart; vLLM subtracts its
  prefix-cache hits the same way), so the record's ``prompt_tokens`` is their sum.
- every ``content_block_delta`` with text (``text_delta``, ``thinking_delta``, ``input_json_delta``) is a
  chunk, time-stamped when its bytes arrive: TTFT and per-chunk gaps are exact. ``signature_delta`` carries
  no generated text and is not a chunk.
- tokens per chunk are *not* in the stream: the only count is ``message_delta``'s cumulative
  ``usage.output_tokens`` at the end. So the total is exact and is spread over the chunks as the OpenAI
  path does for servers without per-chunk counts (``token_source = "usage_distributed"``); per-token gaps
  are approximate.
- ``message_delta.delta.stop_reason`` is the finish reason, ``message_stop`` the end; ``ping`` and event
  types this reader does not know are skipped, as the reference tells clients to; an ``error`` event ends
  the measurement with its type and message. A stream cut before any stop reason is interrupted, with the
  chunks that arrived kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from specmeter.load.client import StreamState, TooDeep, impossible_count, parse_json
from specmeter.metrics.records import FinishReason
from specmeter.wire.messages import STOP_REASONS

__all__ = ["MessagesStream"]

_COUNTS = ("output_tokens", "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_TEXT_FIELDS = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class MessagesStream(StreamState):
    FINISH: ClassVar[Mapping[str, FinishReason]] = STOP_REASONS
    UNFINISHED: ClassVar[str] = (
        "stream ended without stop_reason or message_stop (server closed the connection)"
    )

    def handle(self, data: bytes, now: float) -> bool:
        """Process one event's JSON; True when the stream is over."""
        try:
            obj = parse_json(data)
        except TooDeep as e:  # valid JSON the client cannot read: the request fails, saying why
            self.error = f"unreadable event in stream: {e}"
            return True
        except ValueError:
            self.malformed += 1
            return False
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            self.malformed += 1
            return False
        kind = obj["type"]
        if kind == "content_block_delta":
            delta = obj.get("delta")
            field = _TEXT_FIELDS.get(delta.get("type", "")) if isinstance(delta, dict) else None
            if field is not None and delta is not None and delta.get(field):
                if field == "text":
                    self.content.append(str(delta["text"]))  # the answer a conversation's next turn holds
                self.chunks.append([now, None])
                if self.first_payload is None:
                    self.first_payload = obj
        elif kind == "content_block_start":
            block = obj.get("content_block")
            if isinstance(block, dict) and (block.get("text") or block.get("thinking")):
                if block.get("text"):
                    self.content.append(str(block["text"]))
                self.chunks.append([now, None])  # a block may open with text already in it
                if self.first_payload is None:
                    self.first_payload = obj
        elif kind == "message_start":
            message = obj.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
            if self._impossible(usage):
                return True
            if isinstance(usage, dict):
                self._prompt(usage)
        elif kind == "message_delta":
            delta, usage = obj.get("delta"), obj.get("usage")
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self.finish = str(delta["stop_reason"])
            if self._impossible(usage):
                return True
            if isinstance(usage, dict):
                self._output(usage)
                if any(k in usage for k in ("input_tokens", "cache_read_input_tokens")):
                    self._prompt(usage)
        elif kind == "message_stop":
            self.done = True
            return True
        elif kind == "error":
            err = obj.get("error")
            if isinstance(err, dict):
                what = f"{err.get('type') or 'error'}: {err.get('message')}"
            else:
                what = str(err)
            self.error = f"error event in stream: {what}"
            return True
        return False  # ping, content_block_stop and unknown types carry nothing to measure

    def _impossible(self, usage: object) -> bool:
        """A negative (or absurd) count in ``usage`` fails the request with the reason (issue 29)."""
        why = impossible_count(usage, "usage", _COUNTS)
        if why is not None:
            self.error = why
        return why is not None

    def _prompt(self, usage: dict[str, Any]) -> None:
        parts = [
            _int(usage.get(k))
            for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
        ]
        if parts[0] is not None:
            self.prompt_tokens = sum(p or 0 for p in parts)

    def _output(self, usage: dict[str, Any]) -> None:
        total = _int(usage.get("output_tokens"))
        if total is not None:
            self.usage_total = total
