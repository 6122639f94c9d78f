"""``load --trace FILE``: replay a production trace's arrival times and input/output lengths.

Two JSONL line formats, detected per line:

- specmeter's: ``{"t": 12.5, "input_tokens": 900, "output_tokens": 120, "prompt_id": "legal-0042",
  "temperature": 0.7}`` — ``t`` in seconds (required); the rest optional. ``prompt_id`` pins the golden-set
  prompt; otherwise the prompt is chosen by ``input_tokens``.
- Mooncake's public trace format (Mooncake, FAST '25; also read by NVIDIA AIPerf and Dynamo):
  ``{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, …]}`` —
  ``timestamp`` in milliseconds since the first request; ``hash_ids`` (prefix-cache blocks) are ignored.

Times are shifted so the first request is at 0 and the lines are replayed in time order (stable for
equal times). The trace fixes *when* requests leave and *how long* they are; *what* they say comes from the
golden set, because a trace carries no text (and acceptance depends on the text): each request takes the
golden-set prompt whose length is nearest its input length (ties rotate through the equally near ones so
one prompt is not sent every time), and ``max_tokens`` = its output length. Prompt lengths are counted
with the target's tokenizer when ``load --tokenizer`` gives one, else estimated as characters / 4; either
way the result records the prompt tokens the server reported, so length buckets use real counts.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from specmeter.load.limits import MAX_SECONDS, MAX_TRACE_BYTES, MAX_TRACE_LINE_BYTES, MAX_TRACE_LINES
from specmeter.workloads.loader import Prompt
from specmeter.workloads.render import plain_chat_text

__all__ = ["TraceEntry", "TraceError", "assign_prompts", "estimate_tokens", "load_trace", "trace_gaps"]

CHARS_PER_TOKEN = 4.0


class TraceError(ValueError):
    """The trace cannot be replayed; one line per problem, each naming file and line."""


@dataclass(frozen=True)
class TraceEntry:
    t: float  # seconds since the trace's first request
    line: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    prompt_id: str | None = None
    temperature: float | None = None
    prompt_index: int = -1  # the golden-set prompt it replays (assign_prompts)


def _count(obj: dict[str, Any], key: str, where: str, problems: list[str]) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        problems.append(f"{where}: field '{key}': must be a positive integer")
        return None
    return value


def _parse(obj: object, where: str, line: int, problems: list[str]) -> TraceEntry | None:
    if not isinstance(obj, dict):
        problems.append(f"{where}: expected a JSON object")
        return None
    mooncake = "timestamp" in obj
    key = "timestamp" if mooncake else "t"
    value = obj.get(key)
    scale = 1000.0 if mooncake else 1.0
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 <= value <= MAX_SECONDS * scale
    ):
        unit = "milliseconds" if mooncake else "seconds"
        problems.append(
            f"{where}: field '{key}': must be a number in [0, {MAX_SECONDS * scale:.0f}] ({unit}, a week at "
            "most; 't' or Mooncake's 'timestamp')"
        )
        return None
    before = len(problems)
    inputs = _count(obj, "input_length" if mooncake else "input_tokens", where, problems)
    outputs = _count(obj, "output_length" if mooncake else "output_tokens", where, problems)
    prompt_id = obj.get("prompt_id")
    if prompt_id is not None and not isinstance(prompt_id, (str, int)):
        problems.append(f"{where}: field 'prompt_id': must be a string")
    temperature = obj.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not 0 <= temperature <= 2
    ):
        problems.append(f"{where}: field 'temperature': must be a number in [0, 2]")
    if len(problems) > before:
        return None
    return TraceEntry(
        t=float(value) / 1000.0 if mooncake else float(value),
        line=line,
        input_tokens=inputs,
        output_tokens=outputs,
        prompt_id=None if prompt_id is None else str(prompt_id),
        temperature=None if temperature is None else float(temperature),
    )


def _json_line(raw: bytes) -> object:
    """One line's JSON; ValueError with a short reason (bad UTF-8 or JSON, nesting too deep, huge numbers)."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None
    except json.JSONDecodeError as e:
        raise ValueError(e.msg) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as e:  # an integer of more than 4300 digits
        raise ValueError(str(e).split(";")[0]) from None


def _lines(path: str | os.PathLike[str], shown: str) -> Iterator[tuple[int, bytes]]:
    """The trace's lines, read as a stream within the bounds of ``load.limits`` (TraceError beyond them)."""
    try:
        with open(path, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise TraceError(f"{shown}: not a regular file (a trace is a JSONL file)")
            if info.st_size > MAX_TRACE_BYTES:
                raise TraceError(
                    f"{shown}: {info.st_size} bytes, more than a trace may hold ({MAX_TRACE_BYTES} bytes)"
                )
            for number, raw in enumerate(iter(lambda: fh.readline(MAX_TRACE_LINE_BYTES + 1), b""), start=1):
                if len(raw) > MAX_TRACE_LINE_BYTES:
                    raise TraceError(f"{shown}:{number}: line longer than {MAX_TRACE_LINE_BYTES} bytes")
                if number > MAX_TRACE_LINES:
                    raise TraceError(f"{shown}: more than {MAX_TRACE_LINES} lines")
                yield number, raw.removeprefix(b"\xef\xbb\xbf") if number == 1 else raw
    except OSError as e:
        raise TraceError(f"{shown}: cannot read ({e.strerror or e})") from None


def load_trace(path: str | os.PathLike[str]) -> list[TraceEntry]:
    """Every line of the trace, in time order from t = 0; TraceError listing every bad line.

    A trace is a regular file within ``load.limits``' bounds (size, line length, lines, times up to a week).
    """
    shown = os.fspath(path)
    problems: list[str] = []
    entries: list[TraceEntry] = []
    for number, raw in _lines(path, shown):
        if not raw.strip():
            continue
        where = f"{shown}:{number}"
        try:
            obj = _json_line(raw)
        except ValueError as e:
            problems.append(f"{where}: invalid JSON ({e})")
            continue
        entry = _parse(obj, where, number, problems)
        if entry is not None:
            entries.append(entry)
    if not entries and not problems:
        problems.append(f"{shown}: empty trace")
    if problems:
        raise TraceError("\n".join(problems))
    entries.sort(key=lambda e: e.t)
    first = entries[0].t
    return [replace(e, t=e.t - first) for e in entries]


def estimate_tokens(prompt: Prompt) -> int:
    """Characters / 4 of what the prompt sends (all messages): a tokenizer-free length estimate."""
    text = prompt.text if prompt.text is not None else plain_chat_text(prompt.messages or ())
    return max(1, round(len(text) / CHARS_PER_TOKEN))


def assign_prompts(
    trace: Sequence[TraceEntry],
    prompts: Sequence[Prompt],
    count_tokens: Callable[[Prompt], int] = estimate_tokens,
    *,
    where: str = "trace",
) -> list[TraceEntry]:
    """Each entry with the index of the golden-set prompt it replays (see the module docstring)."""
    if not prompts:
        raise TraceError("the golden set is empty")
    by_id = {p.id: i for i, p in enumerate(prompts)}
    lengths = sorted((count_tokens(p), i) for i, p in enumerate(prompts))
    keys = [n for n, _ in lengths]
    turn: dict[int, int] = {}
    out, problems = [], []
    for n, entry in enumerate(trace):
        if entry.prompt_id is not None:
            if entry.prompt_id not in by_id:
                problems.append(
                    f"{where}:{entry.line}: prompt_id {entry.prompt_id!r} is not in the golden set"
                )
                continue
            index = by_id[entry.prompt_id]
        elif entry.input_tokens is not None:
            pos = bisect.bisect_left(keys, entry.input_tokens)
            # The nearest length below or above (the shorter one on a tie), then every prompt that long.
            nearest = min(
                (keys[c] for c in (pos - 1, pos) if 0 <= c < len(keys)),
                key=lambda length: (abs(length - entry.input_tokens), length),  # type: ignore[operator]
            )
            lo, hi = bisect.bisect_left(keys, nearest), bisect.bisect_right(keys, nearest)
            tied = [lengths[j][1] for j in range(lo, hi)]
            index = tied[turn.get(nearest, 0) % len(tied)]
            turn[nearest] = turn.get(nearest, 0) + 1
        else:
            index = n % len(prompts)
        out.append(replace(entry, prompt_index=index))
    if problems:
        raise TraceError("\n".join(problems))
    return out


def trace_gaps(trace: Sequence[TraceEntry], indices: Sequence[int], speed: float = 1.0) -> list[float]:
    """Seconds between consecutive sends of ``indices`` (trace positions), time scaled by 1/``speed``."""
    times = [trace[i % len(trace)].t for i in indices]
    return [max(b - a, 0.0) / speed for a, b in itertools.pairwise(times)] + [0.0]
