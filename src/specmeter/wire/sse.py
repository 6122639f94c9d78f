"""Server-sent events both ways: encoding the server's ``data:`` frames, an incremental parser for the client.

The parser follows the SSE rules that matter for OpenAI-style streams — events end at a blank line,
``data:`` lines of one event are joined with newlines, ``:`` lines are comments, ``event``/``id``/``retry``
fields are ignored — and counts every other line as malformed instead of failing: one garbled line must not
cost the measurement of a whole stream. It works on bytes because that is what arrives; ``json.loads``
takes bytes directly, so payloads are never decoded twice.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["DONE", "SSEParser", "encode_data", "encode_done", "encode_event"]

DONE = b"[DONE]"
_KNOWN_FIELDS = (b"event", b"id", b"retry")


def encode_data(payload: dict[str, Any]) -> bytes:
    """One SSE event carrying ``payload`` as compact JSON."""
    return (
        b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n\n"
    )


def encode_event(name: str, payload: dict[str, Any]) -> bytes:
    """One named SSE event (``event: NAME`` then the ``data:`` line), as Anthropic's Messages API streams."""
    return b"event: " + name.encode("utf-8") + b"\n" + encode_data(payload)


def encode_done() -> bytes:
    return b"data: [DONE]\n\n"


class SSEParser:
    """Feed raw bytes as they arrive; get back the ``data`` payload of every completed event."""

    __slots__ = ("_buffer", "_data", "malformed")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []
        self.malformed = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        events: list[bytes] = []
        buffer = self._buffer + chunk if self._buffer else chunk
        lines = buffer.split(b"\n")
        self._buffer = lines.pop()  # an incomplete last line waits for more bytes
        for line in lines:
            self._line(line[:-1] if line.endswith(b"\r") else line, events)
        return events

    def close(self) -> list[bytes]:
        """End of stream: a final event without its blank line still counts (servers that skip it exist)."""
        events: list[bytes] = []
        if self._buffer:
            line, self._buffer = self._buffer, b""
            self._line(line[:-1] if line.endswith(b"\r") else line, events)
        if self._data:
            events.append(b"\n".join(self._data))
            self._data = []
        return events

    def _line(self, line: bytes, events: list[bytes]) -> None:
        if not line:
            if self._data:
                events.append(b"\n".join(self._data))
                self._data = []
            return
        if line.startswith(b"data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(b" ") else value)
        elif line.startswith(b":"):
            return  # comment / keep-alive
        else:
            name = line.split(b":", 1)[0]
            if name not in _KNOWN_FIELDS:
                self.malformed += 1
