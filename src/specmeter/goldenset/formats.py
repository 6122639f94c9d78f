"""Reading prompts out of the logs teams already have, one :class:`LogPrompt` per usable record.

Formats (``--format``, or detected per file from its first recognisable record):

- ``openai``: JSONL of OpenAI request bodies — chat (``messages``), completions (``prompt``) or the
  Responses API (``input``, ``instructions``) — bare, wrapped as ``{"request": …, "response": …}`` (a
  gateway's log, optionally with the answer), or as Batch API input lines ``{"custom_id", "body": …}``.
  A chat request's history (earlier user and assistant messages) is production context and is kept as is.
- ``sharegpt``: ShareGPT conversations, ``{"id", "conversations": [{"from": "human"|"gpt"|"system",
  "value"}]}`` (``role``/``content`` also accepted), as a JSON array or JSONL. The first user turn is the
  prompt, later user turns its ``followups`` (replayed after the model's own answers); the recorded
  answers are dropped, because the model under test writes its own.
- ``csv``: a header row and a prompt column (``--prompt-column``, else the first of ``prompt``,
  ``question``, ``input``, ``query``, ``instruction``, ``text``); other columns are fields.
- ``specbench``: Spec-Bench ``question.jsonl`` (``question_id``, ``category``, ``turns``).
- ``specmeter``: specmeter's own golden sets and per-request logs that carry the prompt (``serve --log
  --log-prompts``): ``prompt`` or ``messages``, optional ``followups``, ``category``/``domain``.

A record that cannot be used is a :class:`Problem` naming file, line and reason; reading goes on. Lines
are numbered as an editor shows them (JSON-array elements by the line they start on, CSV rows by their
first line), so ``file:line`` is the provenance written on every golden-set line.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from specmeter import jsonsafe
from specmeter.goldenset import shapes
from specmeter.metrics.warmup import is_warmup
from specmeter.workloads.loader import Message

__all__ = [
    "FORMATS",
    "PROMPT_COLUMNS",
    "LogPrompt",
    "Problem",
    "ReadResult",
    "RecordError",
    "detect_format",
    "format_scores",
    "parse_record",
    "read_prompts",
]

Format = Literal["openai", "sharegpt", "csv", "specbench", "specmeter"]
FORMATS: tuple[Format, ...] = ("openai", "sharegpt", "csv", "specbench", "specmeter")
PROMPT_COLUMNS = ("prompt", "question", "input", "query", "instruction", "text")
# How many records detection looks at before giving up on a file.
_SNIFF_RECORDS = 50
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class _Bad(ValueError):
    """A record that cannot become a prompt; the message is the reason shown after ``file:line:``."""


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        return (
            f"{self.file}:{self.line}: {self.reason}"
            if self.line is not None
            else f"{self.file}: {self.reason}"
        )


@dataclass(frozen=True)
class LogPrompt:
    """One prompt read from a log: exactly one of ``text`` / ``messages``; ``record`` is the raw object."""

    file: str
    line: int
    format: Format
    text: str | None
    messages: tuple[Message, ...] | None
    followups: tuple[str, ...] = ()
    record: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    id: str | None = None
    max_tokens: int | None = None

    @property
    def source(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def content(self) -> str:
        """Every piece of text the prompt sends (messages and follow-ups), for dedupe, rules and lengths."""
        parts = [self.text] if self.text is not None else [m.content for m in self.messages or ()]
        return "\n".join([*parts, *self.followups])

    @property
    def dialogue(self) -> str:
        """:attr:`content` without system messages: what near-duplicate detection compares.

        An application sends one system prompt with most of its requests; left in, a long system prompt
        would make every short request look like a near-duplicate of every other.
        """
        parts = (
            [self.text]
            if self.text is not None
            else [m.content for m in self.messages or () if m.role != "system"]
        )
        return "\n".join([*parts, *self.followups])


@dataclass
class ReadResult:
    prompts: list[LogPrompt] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    records: int = 0  # records seen (lines with content, array elements, CSV rows)
    formats: dict[str, str] = field(default_factory=dict)  # file → format used
    warmup: int = 0  # `load`'s warm-up requests, left out (``metrics.warmup``): not traffic


# ------------------------------------------------------------------------------------------ helpers


def _text(value: object, where: str) -> str:
    """A message content: a string, or OpenAI content parts of which only text is accepted."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        pieces = []
        for i, part in enumerate(value):
            if isinstance(part, str):
                pieces.append(part)
                continue
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind in ("text", "input_text", "output_text") and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            else:
                shown = repr(kind) if kind else "non-text"
                raise _Bad(
                    f"field '{where}[{i}]': content part of type {shown} (only text prompts can be replayed)"
                )
        return "".join(pieces)
    raise _Bad(f"field '{where}': must be a string or a list of text parts")


def _role(value: object, where: str) -> str:
    roles = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
    if isinstance(value, str) and value in roles:
        return roles[value]
    raise _Bad(f"field '{where}': role {value!r} cannot be replayed (system, user or assistant only)")


def _positive_int(obj: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _ident(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _chat(messages: object, where: str) -> tuple[Message, ...]:
    if not isinstance(messages, list) or not messages:
        raise _Bad(f"field '{where}': must be a non-empty list of messages")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise _Bad(f"field '{where}[{i}]': must be an object with 'role' and 'content'")
        role = _role(m.get("role"), f"{where}[{i}].role")
        content = _text(m.get("content"), f"{where}[{i}].content")
        if not content.strip():
            if role == "system":
                continue  # an empty system message says nothing
            raise _Bad(f"field '{where}[{i}].content': empty")
        out.append(Message(role, content))  # type: ignore[arg-type]
    if not out or out[-1].role != "user":
        last = out[-1].role if out else "nothing"
        raise _Bad(f"field '{where}': the last message is {last!r}; a prompt ends with a user turn")
    return tuple(out)


def _prompt_text(value: object, where: str) -> str:
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        value = value[0]  # a batch of one
    if isinstance(value, str):
        if not value.strip():
            raise _Bad(f"field '{where}': empty")
        return value
    if isinstance(value, list) and value and all(isinstance(t, int) for t in value):
        raise _Bad(f"field '{where}': token ids, not text (the tokenizer that made them is unknown)")
    raise _Bad(f"field '{where}': must be a string")


# ------------------------------------------------------------------------------------------ formats


def _openai(obj: Mapping[str, Any], file: str, line: int) -> LogPrompt:
    request: Mapping[str, Any] = obj
    prefix = ""
    for wrapper in ("body", "request"):
        inner = obj.get(wrapper)
        if isinstance(inner, Mapping) and any(k in inner for k in ("messages", "prompt", "input")):
            request, prefix = inner, wrapper + "."
            break
    ident = _ident(obj.get("custom_id")) or _ident(obj.get("id")) or _ident(request.get("id"))
    max_tokens = _positive_int(request, "max_completion_tokens", "max_tokens", "max_output_tokens")
    if "messages" in request:
        messages = _chat(request["messages"], prefix + "messages")
        return LogPrompt(file, line, "openai", None, messages, (), obj, ident, max_tokens)
    if "prompt" in request:
        text = _prompt_text(request["prompt"], prefix + "prompt")
        return LogPrompt(file, line, "openai", text, None, (), obj, ident, max_tokens)
    if "input" in request:  # the Responses API
        value = request["input"]
        if isinstance(value, str):
            items: list[Any] = [{"role": "user", "content": value}]
        elif isinstance(value, list):
            items = [
                i for i in value if not (isinstance(i, Mapping) and i.get("type") not in (None, "message"))
            ]
        else:
            raise _Bad(f"field '{prefix}input': must be a string or a list of messages")
        instructions = request.get("instructions")
        if isinstance(instructions, str) and instructions.strip():
            items = [{"role": "system", "content": instructions}, *items]
        messages = _chat(items, prefix + "input")
        return LogPrompt(file, line, "openai", None, messages, (), obj, ident, max_tokens)
    if "response" in obj:
        raise _Bad("a response without its request (nothing to replay)")
    raise _Bad("no 'messages', 'prompt' or 'input' (nor a 'request' or 'body' holding one)")


_HUMAN = {"human", "user"}
_MODEL = {"gpt", "assistant", "chatgpt", "bing", "bard", "model"}


def _sharegpt(obj: Mapping[str, Any], file: str, line: int) -> LogPrompt:
    key = "conversations" if "conversations" in obj else "conversation"
    turns = obj.get(key)
    if not isinstance(turns, list) or not turns:
        raise _Bad(f"field '{key}': must be a non-empty list of turns")
    system: str | None = None
    users: list[str] = []
    last_speaker = ""
    for i, turn in enumerate(turns):
        if not isinstance(turn, Mapping):
            raise _Bad(f"field '{key}[{i}]': must be an object with 'from' and 'value'")
        speaker = turn.get("from", turn.get("role"))
        value = turn.get("value", turn.get("content"))
        if not isinstance(speaker, str):
            raise _Bad(f"field '{key}[{i}].from': missing")
        text = _text(value, f"{key}[{i}].value")
        speaker = speaker.lower()
        if speaker == "system":
            if users:
                raise _Bad(f"field '{key}[{i}]': a system turn in the middle of the conversation")
            system = text if text.strip() else None
        elif speaker in _HUMAN:
            if not text.strip():
                raise _Bad(f"field '{key}[{i}].value': empty user turn")
            if last_speaker == "user":
                users[-1] += "\n" + text  # two user turns in a row are one turn to a chat client
            else:
                users.append(text)
            last_speaker = "user"
        elif speaker in _MODEL:
            if not users:
                raise _Bad(
                    f"field '{key}[{i}]': the conversation starts with the model ({speaker!r}), not a user"
                )
            last_speaker = "model"
        else:
            raise _Bad(f"field '{key}[{i}].from': unknown speaker {speaker!r}")
    if not users:
        raise _Bad(f"field '{key}': no user turn")
    first = (Message("system", system),) if system else ()
    messages = (*first, Message("user", users[0]))
    return LogPrompt(file, line, "sharegpt", None, messages, tuple(users[1:]), obj, _ident(obj.get("id")))


def _specbench(obj: Mapping[str, Any], file: str, line: int) -> LogPrompt:
    turns = obj.get("turns")
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) and t.strip() for t in turns):
        raise _Bad("field 'turns': must be a non-empty list of non-empty strings")
    ident = _ident(obj.get("question_id"))
    if ident is None:
        raise _Bad("field 'question_id': must be a non-empty string or an integer")
    return LogPrompt(
        file, line, "specbench", None, (Message("user", turns[0]),), tuple(turns[1:]), obj, ident
    )


def _specmeter(obj: Mapping[str, Any], file: str, line: int) -> LogPrompt:
    ident = _ident(obj.get("id"))
    max_tokens = _positive_int(obj, "max_tokens")
    followups = obj.get("followups") or []
    if not isinstance(followups, list) or not all(isinstance(f, str) and f.strip() for f in followups):
        raise _Bad("field 'followups': must be a list of non-empty strings")
    if "messages" in obj and obj["messages"] is not None:
        messages = _chat(obj["messages"], "messages")
        return LogPrompt(file, line, "specmeter", None, messages, tuple(followups), obj, ident, max_tokens)
    if "prompt" in obj and obj["prompt"] is not None:
        if followups:
            raise _Bad("field 'followups': needs 'messages', not 'prompt'")
        return LogPrompt(
            file, line, "specmeter", _prompt_text(obj["prompt"], "prompt"), None, (), obj, ident, max_tokens
        )
    if "accepted_tokens" in obj or "drafted_tokens" in obj:
        raise _Bad("a per-request log line without the prompt (log it with `serve --log-prompts`)")
    raise _Bad("field 'prompt': missing (give 'prompt' or 'messages')")


_PARSERS = {"openai": _openai, "sharegpt": _sharegpt, "specbench": _specbench, "specmeter": _specmeter}
_OWN_KEYS = frozenset({"id", "prompt", "messages", "category", "max_tokens", "followups", "source"})
# Fields only specmeter's own per-request log writes (``serve --log``, ``load --requests``).
_LOG_KEYS = frozenset(
    {"accepted_tokens", "drafted_tokens", "output_ids", "prompt_ids", "run", "steps_detail"}
)
# Fields many logs carry (a gateway's latency, a timestamp): they say nothing about the format.
_PROMPT_KEYS = ("messages", "prompt", "input")


def format_scores(obj: Mapping[str, Any]) -> dict[Format, int]:
    """How strongly a record looks like each format: the distinctive fields it has, weighed.

    A field common to several shapes (``latency_ms``, ``model``, a timestamp) weighs nothing, so one extra
    field never flips a record from one format to another; a wrapper holding a request (``request`` or
    ``body`` with messages, prompt or input) outweighs any count of loose fields.
    """
    keys = set(obj)
    scores: dict[Format, int] = dict.fromkeys(FORMATS, 0)
    if keys & {"conversations", "conversation"}:
        scores["sharegpt"] += 10
    if "question_id" in keys:
        scores["specbench"] += 10
    elif "turns" in keys and not keys & {"messages", "prompt"}:
        scores["specbench"] += 5
    for wrapper in ("request", "body"):
        inner = obj.get(wrapper)
        if isinstance(inner, Mapping) and any(k in inner for k in _PROMPT_KEYS):
            scores["openai"] += 10
        elif wrapper in keys:
            scores["openai"] += 2
    scores["openai"] += 3 * ("custom_id" in keys) + 2 * isinstance(obj.get("response"), Mapping)
    scores["openai"] += any(k in keys for k in _PROMPT_KEYS) + ("model" in keys and not keys & _LOG_KEYS)
    scores["specmeter"] += 3 * len(keys & _LOG_KEYS)
    if "id" in keys and keys & {"prompt", "messages"} and keys <= _OWN_KEYS:
        scores["specmeter"] += 5
    return scores


def detect_format(obj: Mapping[str, Any]) -> Format | None:
    """The format a JSON record looks like most (:func:`format_scores`), or None when it looks like none."""
    scores = format_scores(obj)
    best = max(FORMATS, key=lambda f: scores[f])
    return best if scores[best] > 0 else None


# ------------------------------------------------------------------------------------------ reading


def _json_records(data: str, file: str) -> Iterator[tuple[int, Any | _Bad]]:
    """(line, object or _Bad) for a JSON array file or JSONL, lines numbered as an editor shows them."""
    stripped = data.lstrip()
    if stripped.startswith("["):
        yield from _json_array(data, file)
        return
    # Split on \n, \r\n and \r only: str.splitlines would also split on U+2028, legal inside JSON strings.
    for number, text in enumerate(_LINE_BREAK.split(data), start=1):
        if not text.strip():
            continue
        try:
            yield number, jsonsafe.loads(text)
        except json.JSONDecodeError as e:
            yield number, _Bad(f"invalid JSON ({e.msg} at column {e.colno})")


def _json_array(data: str, file: str) -> Iterator[tuple[int, Any | _Bad]]:
    pos = data.index("[") + 1
    line = data.count("\n", 0, pos) + 1

    def skip(p: int) -> int:
        while p < len(data) and data[p] in " \t\r\n":
            p += 1
        return p

    while True:
        pos = skip(pos)
        if pos >= len(data):
            yield data.count("\n", 0, pos) + 1, _Bad("the JSON array is not closed (file truncated?)")
            return
        if data[pos] == "]":
            return
        line = data.count("\n", 0, pos) + 1
        try:
            obj, end = jsonsafe.raw_decode(data, pos)
        except jsonsafe.JSONLimitError as e:
            if e.end is None:  # nested past Python's recursion limit: where it ends is unknown
                yield (
                    e.lineno,
                    _Bad(f"invalid JSON ({e.msg} at column {e.colno}); the rest of the array is skipped"),
                )
                return
            yield e.lineno, _Bad(f"invalid JSON ({e.msg} at column {e.colno})")  # one element; go on
            obj, end = None, e.end
        except json.JSONDecodeError as e:
            # One broken element breaks the array's syntax: nothing after it can be located reliably.
            yield (
                e.lineno,
                _Bad(f"invalid JSON ({e.msg} at column {e.colno}); the rest of the array is skipped"),
            )
            return
        else:
            yield line, obj
        pos = skip(end)
        if pos < len(data) and data[pos] == ",":
            pos += 1
        elif pos < len(data) and data[pos] != "]":
            yield (
                data.count("\n", 0, pos) + 1,
                _Bad("expected ',' or ']' between array elements; the rest is skipped"),
            )
            return


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(
        type(value), type(value).__name__
    )


def _read_json(file: str, data: str, fmt: str, out: ReadResult) -> None:
    records = list(_json_records(data, file))
    chosen: Format | None = None if fmt == "auto" else fmt  # type: ignore[assignment]
    if chosen is None:
        for _, obj in records[:_SNIFF_RECORDS]:
            if not isinstance(obj, Mapping):
                continue
            chosen = detect_format(obj) or ("openai" if shapes.detect_shape(obj) else None)
            if chosen is not None:
                break
    if chosen is None:
        out.problems.append(
            Problem(file, None, "cannot tell the format from its first records; pass --format")
        )
        out.records += len(records)
        return
    out.formats[file] = chosen
    parse = _PARSERS[chosen]
    for line, obj in records:
        out.records += 1
        if isinstance(obj, _Bad):
            out.problems.append(Problem(file, line, str(obj)))
        elif not isinstance(obj, Mapping):
            out.problems.append(Problem(file, line, f"expected a JSON object, got {_json_type(obj)}"))
        elif is_warmup(obj):
            out.warmup += 1
        else:
            try:
                for record, record_parse in _shaped(obj, fmt, parse):
                    out.prompts.append(record_parse(record, file, line))
            except _Bad as e:
                out.problems.append(Problem(file, line, str(e)))


def _shaped(
    obj: Mapping[str, Any], fmt: str, parse: Callable[[Mapping[str, Any], str, int], LogPrompt]
) -> list[tuple[Mapping[str, Any], Callable[[Mapping[str, Any], str, int], LogPrompt]]]:
    """The records a line holds: a gateway's, tracer's or engine's shape (``goldenset.shapes``) becomes
    OpenAI request lines; any other record is read by the file's format."""
    shape = shapes.detect_shape(obj) if fmt == "auto" else None
    if shape is None:
        return [(obj, parse)]
    try:
        return [(record, _openai) for record in shapes.normalize(obj, shape)]
    except shapes.ShapeError as e:
        raise _Bad(str(e)) from None


def _read_csv(file: str, data: str, prompt_column: str | None, out: ReadResult) -> None:
    out.formats[file] = "csv"
    dialect: type[csv.Dialect] = csv.excel_tab if file.endswith(".tsv") else csv.excel
    reader = csv.reader(io.StringIO(data, newline=""), dialect)
    try:
        header = next(reader)
    except StopIteration:
        out.problems.append(Problem(file, None, "empty file (no header row)"))
        return
    except csv.Error as e:
        out.problems.append(Problem(file, 1, f"unreadable CSV header ({e})"))
        return
    names = [h.strip() for h in header]
    lowered = {n.lower(): i for i, n in enumerate(names)}
    if prompt_column is not None:
        column = names.index(prompt_column) if prompt_column in names else lowered.get(prompt_column.lower())
        if column is None:
            out.problems.append(
                Problem(file, 1, f"no column {prompt_column!r} (columns: {', '.join(names)})")
            )
            return
    else:
        column = next((lowered[c] for c in PROMPT_COLUMNS if c in lowered), None)
        if column is None:
            out.problems.append(
                Problem(file, 1, f"no prompt column among {', '.join(names)}; pass --prompt-column")
            )
            return
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            out.records += 1
            out.problems.append(Problem(file, start, f"unreadable CSV row ({e})"))
            return
        if not any(cell.strip() for cell in row):
            continue
        out.records += 1
        if len(row) != len(names):
            out.problems.append(Problem(file, start, f"{len(row)} cells, the header has {len(names)}"))
            continue
        record = dict(zip(names, row, strict=True))
        text = row[column]
        if not text.strip():
            out.problems.append(Problem(file, start, f"column '{names[column]}': empty"))
            continue
        max_tokens = record.get("max_tokens", "").strip()
        out.prompts.append(
            LogPrompt(
                file,
                start,
                "csv",
                text,
                None,
                (),
                record,
                _ident(record.get("id")),
                int(max_tokens) if max_tokens.isdigit() and int(max_tokens) > 0 else None,
            )
        )


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
    return [path]


def read_prompts(
    sources: Sequence[str | os.PathLike[str]], *, fmt: str = "auto", prompt_column: str | None = None
) -> ReadResult:
    """Every prompt of every source (files, or directories read recursively), with every problem."""
    if fmt != "auto" and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    out = ReadResult()
    for source in sources:
        root = Path(source)
        if not root.exists():
            out.problems.append(Problem(os.fspath(source), None, "no such file or directory"))
            continue
        for path in _files(root):
            file = os.fspath(path) if path != root else os.fspath(source)
            try:
                raw = path.read_bytes()
            except OSError as e:
                out.problems.append(Problem(file, None, f"cannot read ({e.strerror or e})"))
                continue
            try:
                data = raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
            except UnicodeDecodeError as e:
                line = raw[: e.start].count(b"\n") + 1
                out.problems.append(
                    Problem(file, line, f"not valid UTF-8 (byte 0x{raw[e.start]:02x}), the whole file")
                )
                continue
            is_csv = fmt == "csv" or (fmt == "auto" and path.suffix.lower() in (".csv", ".tsv"))
            if is_csv:
                _read_csv(file, data, prompt_column, out)
            else:
                _read_json(file, data, fmt, out)
    return out


class RecordError(_Bad):
    """A record that cannot become a prompt (the public name of the readers' error, for streamed reads)."""


def parse_record(obj: Mapping[str, Any], file: str, line: int, fmt: str = "auto") -> LogPrompt:
    """One JSON record as a prompt, the way :func:`read_prompts` reads each record (``fmt``: a format, or
    ``auto`` to detect it from this record); :class:`RecordError` with the reason when it cannot be used.
    For readers that stream a log line by line instead of reading it whole (``specmeter replay``)."""
    chosen = detect_format(obj) if fmt == "auto" else fmt
    if chosen is None or chosen not in _PARSERS:
        raise RecordError("no 'messages', 'prompt' or 'input' (nor a 'request' or 'body' holding one)")
    try:
        return _PARSERS[chosen](obj, file, line)
    except RecordError:
        raise
    except _Bad as e:
        raise RecordError(str(e)) from None
