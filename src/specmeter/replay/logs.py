"""Logged requests with their responses, read one line at a time (a 1 GB log is never held whole).

A log is JSONL, one request a line, in one of the shapes ``specmeter golden`` reads (``goldenset.formats``:
the prompt side, and the categories of ``--category-field`` and ``--rules``), with the response beside it:

- ``serve --log --log-output``: specmeter's own request log; ``output_ids`` (the target's tokens, EOS
  included when the request ended there), ``output`` (their text), ``prompt_ids``, ``finish_reason``,
  ``max_tokens`` and ``model``; with ``--log-prompts`` also ``prompt`` or ``messages``.
- a gateway's ``{"request": …, "response": …}`` lines: OpenAI chat completions
  (``choices[0].message.content``), completions (``choices[0].text``) or Anthropic Messages (``content``
  text blocks, ``stop_reason``; the request's ``system`` becomes the first message). The model is the
  response's ``model``, else the request's.

- the shapes of ``goldenset.shapes`` (LiteLLM, Langfuse, Portkey, OpenTelemetry GenAI spans, SGLang's JSON
  request log), each turned into gateway lines; OpenAI Batch output lines joined on ``custom_id`` with their
  input lines (either order, any file of ``--from``); and vLLM's own server log (text, not JSON: its request
  logger's prompt, params and ``Generated response`` lines joined on the request id).

Lines marked as `load`'s warm-up (``metrics.warmup``) are read with ``warmup`` set; replay leaves them out.

A line that cannot be replayed is a :class:`~specmeter.goldenset.formats.Problem` (file, line, reason) and
reading goes on. A log whose first usable record holds no response at all is :class:`NoResponses`: one
error naming the file and the line, since nothing in it can be replayed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from specmeter import inputs, jsonsafe
from specmeter.goldenset import shapes
from specmeter.goldenset.categorize import CategoryRules, categorize, field_value
from specmeter.goldenset.formats import LogPrompt, Problem, RecordError, parse_record
from specmeter.metrics.warmup import is_warmup

__all__ = ["End", "LoggedRequest", "NoResponses", "iter_log", "log_files"]

# How the response ended: at EOS, at max_tokens, or unknown (cut short, or a stop string).
End = Literal["eos", "length", "other"]

# A longer line is a bad line, read past without being held: parsed, its ids would take over 100 times its
# size in memory (a 50 MB line peaked at 6 GB).
MAX_LINE_BYTES = 8 * 2**20
# vLLM's log writes a request's lines apart (prompt, params, ids, deltas, text), interleaved with others':
# at most this many requests wait for their response line, and this many lines a request (deltas).
MAX_PENDING = 100_000
MAX_VLLM_PARTS = 100_000
_EOS_REASONS = frozenset({"eos", "stop", "end_turn", "stop_sequence", "eos_token"})
_LENGTH_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})


class NoResponses(ValueError):
    """The log holds prompts but no responses: replay has nothing to compare a draft with."""


@dataclass(frozen=True)
class LoggedRequest:
    """One logged request: its prompt (ids, or text/messages to render), its response, how it ended."""

    index: int  # position in the log order (0-based over every line with content, bad ones included)
    file: str
    line: int
    id: str
    prompt: LogPrompt | None  # the prompt as text or messages (None: only ids were logged)
    prompt_ids: tuple[int, ...] | None
    output_ids: tuple[int, ...] | None  # the target's tokens, EOS included when logged
    output_text: str | None
    end: End
    max_tokens: int | None
    model: str | None
    temperature: float | None
    category: str
    category_found: bool = True  # --category-field found a value (always True without the option)
    warmup: bool = False  # `load`'s warm-up request (``serve --log`` writes ``"warmup": true``)
    engine_spec: Mapping[str, Any] | None = None  # the engine's own per-request speculative figures

    @property
    def source(self) -> str:
        return f"{self.file}:{self.line}"


def log_files(sources: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files of ``sources`` (a directory: its files, recursively, sorted), in the order given."""
    out: list[Path] = []
    for source in sources:
        path = Path(source)
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")))
        else:
            out.append(path)
    return out


def _ids(value: object, where: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, list) and all(
        isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in value
    ):
        return tuple(value)
    raise RecordError(f"field '{where}': must be a list of token ids (non-negative integers)")


def _end(value: object) -> End:
    text = str(value).lower() if isinstance(value, str) else ""
    if text in _EOS_REASONS:
        return "eos"
    if text in _LENGTH_REASONS:
        return "length"
    return "other"


def _blocks_text(value: object, where: str) -> str:
    """Anthropic content: a string, or blocks of which the text ones are joined (tool use is refused)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for i, block in enumerate(value):
            if (
                isinstance(block, Mapping)
                and block.get("type") == "text"
                and isinstance(block.get("text"), str)
            ):
                parts.append(block["text"])
            elif isinstance(block, Mapping) and block.get("type") in ("thinking", "redacted_thinking"):
                raise RecordError(
                    f"field '{where}[{i}]': a thinking block (its tokens were not logged as text)"
                )
            else:
                kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
                raise RecordError(
                    f"field '{where}[{i}]': a {kind!s} block (only text responses can be replayed)"
                )
        return "".join(parts)
    raise RecordError(f"field '{where}': must be a string or a list of content blocks")


def _gateway_response(response: Mapping[str, Any]) -> tuple[str, End]:
    """The text and ending of an OpenAI (chat or completions) or Anthropic Messages response body."""
    choices = response.get("choices")
    if isinstance(choices, list):
        if not choices or not isinstance(choices[0], Mapping):
            raise RecordError("field 'response.choices': empty (no answer logged)")
        if len(choices) > 1:
            raise RecordError("field 'response.choices': several answers (n > 1); replay reads one")
        choice = choices[0]
        message = choice.get("message")
        if isinstance(message, Mapping):
            content = message.get("content")
            if not isinstance(content, str):
                raise RecordError("field 'response.choices[0].message.content': no text (a tool call?)")
            return content, _end(choice.get("finish_reason"))
        if isinstance(choice.get("text"), str):
            return choice["text"], _end(choice.get("finish_reason"))
        raise RecordError("field 'response.choices[0]': neither 'message.content' nor 'text'")
    if "content" in response and response.get("type", "message") == "message":
        return _blocks_text(response["content"], "response.content"), _end(response.get("stop_reason"))
    if response.get("type") == "error" or "error" in response:
        raise RecordError("the response is an error (nothing was generated)")
    raise RecordError("field 'response': neither OpenAI 'choices' nor Anthropic 'content'")


def _anthropic_request(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Messages request's top-level ``system`` as the first message, so the prompt reader keeps it."""
    request = obj.get("request")
    if not isinstance(request, Mapping) or "system" not in request or "messages" not in request:
        return obj
    system = request["system"]
    text = _blocks_text(system, "request.system") if system is not None else ""
    messages = request["messages"]
    if not text.strip() or not isinstance(messages, list):
        return obj
    return {**obj, "request": {**request, "messages": [{"role": "system", "content": text}, *messages]}}


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _positive(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def parse_logged(
    obj: Mapping[str, Any],
    file: str,
    line: int,
    index: int,
    *,
    fmt: str,
    category_field: str | None,
    rules: CategoryRules | None,
) -> LoggedRequest:
    """One log record as a :class:`LoggedRequest`; :class:`RecordError` when it cannot be replayed,
    :class:`NoResponses` when it holds a prompt but no response."""
    prompt_ids = _ids(obj.get("prompt_ids"), "prompt_ids")
    prompt: LogPrompt | None = None
    try:
        prompt = parse_record(_anthropic_request(obj), file, line, fmt)
    except RecordError:
        if prompt_ids is None:
            raise
    if prompt_ids is not None and prompt is None:
        prompt = LogPrompt(file, line, "specmeter", None, None, (), obj, None, None)
    assert prompt is not None
    response = obj.get("response")
    model: str | None = None
    temperature = _number(obj.get("temperature"))
    max_tokens = _positive(obj.get("max_tokens"))
    text: str | None
    if isinstance(response, Mapping):  # a gateway line
        text, end = _gateway_response(response)
        output_ids = _ids(response.get("output_ids"), "response.output_ids")
        choices = response.get("choices")
        if output_ids is None and isinstance(choices, list) and isinstance(choices[0], Mapping):
            # vLLM's return_token_ids (vllm/entrypoints/openai/protocol.py): the choice's token_ids
            output_ids = _ids(choices[0].get("token_ids"), "response.choices[0].token_ids")
        if prompt_ids is None:
            prompt_ids = _ids(response.get("prompt_token_ids"), "response.prompt_token_ids")
        request = obj.get("request") if isinstance(obj.get("request"), Mapping) else {}
        assert isinstance(request, Mapping)
        model = response.get("model") or request.get("model")
        temperature = _number(request.get("temperature")) if temperature is None else temperature
        max_tokens = max_tokens or prompt.max_tokens
    else:
        output_ids = _ids(obj.get("output_ids"), "output_ids")
        logged = obj.get("output")
        if logged is not None and not isinstance(logged, str):
            raise RecordError("field 'output': must be text (the response)")
        text = logged
        if output_ids is None and text is None:
            if response is not None:
                raise RecordError("field 'response': must be an object (a response body)")
            raise NoResponses(
                "no response logged (neither 'output_ids' nor 'output', nor a gateway 'response'): "
                "replay compares drafts with the responses the target gave; log them with "
                "`serve --log-output`, or give a gateway log of request and response"
            )
        end = _end(obj.get("finish_reason"))
        model = obj.get("model")
        max_tokens = max_tokens or prompt.max_tokens
    if output_ids is not None and not output_ids:
        raise RecordError("field 'output_ids': empty (nothing was generated)")
    if output_ids is None and not text:
        raise RecordError("the response is empty (nothing to replay)")
    category = categorize(prompt, category_field=category_field, rules=rules)
    found = category_field is None or field_value(prompt.record, category_field) is not None
    ident = prompt.id or (str(obj["id"]) if isinstance(obj.get("id"), (str, int)) else f"{file}:{line}")
    return LoggedRequest(
        index=index,
        file=file,
        line=line,
        id=ident,
        prompt=prompt if prompt.text is not None or prompt.messages is not None else None,
        prompt_ids=prompt_ids,
        output_ids=output_ids,
        output_text=text,
        end=end,
        max_tokens=max_tokens,
        model=model if isinstance(model, str) and model else None,
        temperature=temperature,
        category=category,
        category_found=found,
        warmup=is_warmup(obj),
        engine_spec=obj["engine_spec"] if isinstance(obj.get("engine_spec"), Mapping) else None,
    )


_UNJOINED_INPUT = "an OpenAI Batch input line whose output line is not in --from (give the output file too)"
_UNJOINED_OUTPUT = "an OpenAI Batch output line whose input line is not in --from (give the input file too)"


def _batch_input(obj: Mapping[str, Any]) -> bool:
    return (
        isinstance(obj.get("custom_id"), str)
        and isinstance(obj.get("body"), Mapping)
        and "response" not in obj
        and bool(obj.keys() & {"url", "method"})
    )


class _Reader:
    """The state of one read over every source: the batch halves and vLLM lines waiting for their other
    half (joined in whichever order they come, across files), and the records' running index."""

    def __init__(self, fmt: str, category_field: str | None, rules: CategoryRules | None) -> None:
        self.fmt, self.category_field, self.rules = fmt, category_field, rules
        self.index = 0
        self.inputs: dict[str, tuple[str, int, Mapping[str, Any]]] = {}
        self.outputs: dict[str, tuple[str, int, Mapping[str, Any]]] = {}
        # vLLM requests waiting for their response line: where each was first seen, and its lines so far
        self.vllm: dict[str, tuple[str, int, list[shapes.VllmLine]]] = {}

    def parse(self, obj: Mapping[str, Any], file: str, line: int, fmt: str) -> LoggedRequest:
        position = self.index
        self.index += 1
        return parse_logged(
            obj, file, line, position, fmt=fmt, category_field=self.category_field, rules=self.rules
        )

    def records(self, obj: Mapping[str, Any], file: str, line: int) -> list[tuple[Mapping[str, Any], str]]:
        """The records one JSON line holds, each with the format to read it as (joined halves included)."""
        shape = shapes.detect_shape(obj) if self.fmt == "auto" else self.fmt
        if shape == "batch" or (self.fmt in ("auto", "batch") and _batch_input(obj)):
            if _batch_input(obj):
                key = str(obj["custom_id"])
                problem = shapes.batch_input_problem(obj)
                if problem is not None:
                    self.outputs.pop(key, None)  # its output, if read first, is no request either
                    raise shapes.ShapeError(problem)
                if key not in self.outputs:
                    self.inputs[key] = (file, line, obj)
                    return []
                body = self.outputs.pop(key)[2]
                request = obj["body"]
            else:
                key, body = shapes.batch_output(obj)
                if key not in self.inputs:
                    self.outputs[key] = (file, line, body)
                    return []
                request = self.inputs.pop(key)[2]["body"]
            return [({"custom_id": key, "request": request, "response": body}, "openai")]
        if shape in shapes.SHAPES:
            return [(r, "openai") for r in shapes.normalize(obj, shape)]  # type: ignore[arg-type]
        return [(obj, self.fmt)]

    def leftovers(self) -> Iterator[Problem]:
        for file, line, _ in self.inputs.values():
            yield Problem(file, line, _UNJOINED_INPUT)
        for file, line, _ in self.outputs.values():
            yield Problem(file, line, _UNJOINED_OUTPUT)
        for file, line, _ in self.vllm.values():
            yield Problem(file, line, shapes.NO_VLLM_OUTPUT)


def iter_log(
    sources: Sequence[str | os.PathLike[str]],
    *,
    fmt: str = "auto",
    category_field: str | None = None,
    rules: CategoryRules | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> Iterator[LoggedRequest | Problem]:
    """Every record of every source in order, as a request or a problem, read line by line.

    A JSON line may be any format of the module docstring, or a shape of ``goldenset.shapes`` (detected
    from the fields it has, or ``fmt``); a file whose first line is not JSON is read as vLLM's server log.
    Raises :class:`NoResponses` (naming file and line) when a file's first usable record has no response,
    and ``OSError`` when a file cannot be opened.
    """
    reader = _Reader(fmt, category_field, rules)
    for path in log_files(sources):
        file = os.fspath(path)
        seen_response = False
        text_log: bool | None = None if fmt in ("auto", "vllm") else False
        vllm_lines = 0
        with inputs.open_input(path) as fh:
            for number, (raw, size) in enumerate(inputs.bounded_lines(fh, MAX_LINE_BYTES), start=1):
                if on_bytes is not None:
                    on_bytes(size)
                if raw is None:
                    reader.index += 1
                    yield Problem(file, number, f"a line of {size:,} bytes, more than {MAX_LINE_BYTES:,}")
                    continue
                if not raw.strip():
                    continue
                try:
                    text = raw.decode("utf-8").removeprefix("\ufeff")
                except UnicodeDecodeError as e:
                    reader.index += 1
                    yield Problem(file, number, f"not valid UTF-8 (byte 0x{raw[e.start]:02x})")
                    continue
                if text_log is None:
                    text_log = fmt == "vllm" or not shapes.is_json_text(text)
                if text_log:
                    vline = shapes.vllm_log_line(text)
                    if vline is None:
                        continue  # a startup or metrics line: not a request
                    vllm_lines += 1
                    if vline.request_id not in reader.vllm:
                        if len(reader.vllm) >= MAX_PENDING:  # the oldest waits no longer
                            where_file, where_line, _ = reader.vllm.pop(next(iter(reader.vllm)))
                            reader.index += 1
                            yield Problem(where_file, where_line, shapes.NO_VLLM_OUTPUT)
                        reader.vllm[vline.request_id] = (file, number, [])
                    parts = reader.vllm[vline.request_id][2]
                    if len(parts) < MAX_VLLM_PARTS:
                        parts.append(vline)
                    if vline.kind != "output":
                        continue
                    del reader.vllm[vline.request_id]
                    try:
                        items: list[tuple[Mapping[str, Any], str]] = [(shapes.vllm_record(parts), "openai")]
                    except shapes.ShapeError as e:
                        reader.index += 1
                        yield Problem(file, number, str(e))
                        continue
                else:
                    if number == 1 and text.lstrip().startswith("["):
                        reader.index += 1
                        yield Problem(
                            file,
                            None,
                            "a JSON array; replay reads JSONL, one record a line (jq -c '.[]' converts)",
                        )
                        break
                    try:
                        obj = jsonsafe.loads(text)
                    except json.JSONDecodeError as e:
                        reader.index += 1
                        yield Problem(file, number, f"invalid JSON ({e.msg} at column {e.colno})")
                        continue
                    if not isinstance(obj, Mapping):
                        reader.index += 1
                        yield Problem(file, number, "expected a JSON object")
                        continue
                    try:
                        items = reader.records(obj, file, number)
                    except (RecordError, shapes.ShapeError) as e:
                        reader.index += 1
                        yield Problem(file, number, str(e))
                        continue
                for record, record_fmt in items:
                    try:
                        request = reader.parse(record, file, number, record_fmt)
                    except NoResponses as e:
                        if not seen_response:
                            raise NoResponses(f"{file}:{number}: {e}") from None
                        yield Problem(file, number, str(e).split(":")[0])
                        continue
                    except RecordError as e:
                        yield Problem(file, number, str(e))
                        continue
                    seen_response = True
                    yield request
        if text_log and not vllm_lines:
            yield Problem(file, None, "neither JSONL nor vLLM's request log (no 'Generated response' line)")
    yield from reader.leftovers()
