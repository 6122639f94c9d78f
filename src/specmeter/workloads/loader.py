"""Golden sets: the prompts a team measures speculative decoding on, loaded and validated.

A golden set is a JSONL file, one prompt per line; blank lines are skipped. Each line is detected on
its own, so one file may mix the two formats:

specmeter's own format::

    {"id": "q1", "prompt": "Summarise the clause below ...", "category": "legal/definitions"}
    {"id": 2, "messages": [{"role": "system", "content": "Be brief."},
                           {"role": "user", "content": "Define 'force majeure'."}],
     "max_tokens": 128}

``id`` (string or integer, stored as a string) and exactly one of ``prompt`` (plain text, encoded
as is) or ``messages`` (chat messages, rendered with the tokenizer's chat template; the last message
must come from the user, since generation continues with a new assistant turn) are required;
``category`` defaults to ``"default"``; ``max_tokens`` (positive integer) caps this prompt's output.
A chat prompt may carry ``followups``: the user's later turns of a multi-turn conversation, each replayed
after the model's own answer to the turn before, as a chat client would. ``source`` records where the
line came from (``specmeter golden`` writes ``file:line`` of the log it was taken from); it is carried
along, never interpreted. Unknown keys are errors, so a typo does not silently drop a field.

Spec-Bench's ``question.jsonl`` (``{"question_id": 81, "category": "writing", "turns": [...]}``): a
line is Spec-Bench when it has ``question_id`` or ``turns`` and none of ``id``/``prompt``/``messages``.
The first turn is the prompt, as a single user message; later turns become its ``followups`` (follow-ups
to the model's own previous answer). Other keys (``reference``, ...) are ignored.

Validation collects every problem in the file before failing, so a user fixes a file in one pass:
:class:`WorkloadError` carries one line per problem, each naming file, line and field, e.g.
``golden.jsonl:7: field 'prompt': must be a non-empty string``. The file is named as the caller
passed it, like a compiler does, so the line can be pasted into an editor.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from specmeter import jsonsafe
from specmeter.workloads.schema import MessageLine, OwnLine, Role, SpecBenchLine, describe_errors

DEFAULT_CATEGORY = "default"
# Enough to see the pattern of what is wrong without drowning the terminal.
MAX_LISTED_PROBLEMS = 50

_OWN_KEYS = frozenset({"id", "prompt", "messages"})
_SPEC_BENCH_KEYS = frozenset({"question_id", "turns"})

_Model = TypeVar("_Model", bound=BaseModel)


class WorkloadError(ValueError):
    """A golden set could not be loaded; ``problems`` lists every problem found (uncapped).

    The message shows one problem per line, at most :data:`MAX_LISTED_PROBLEMS` of them followed by
    ``... and N more problems``.
    """

    def __init__(self, problems: list[str] | tuple[str, ...]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        listed = list(self.problems[:MAX_LISTED_PROBLEMS])
        hidden = len(self.problems) - len(listed)
        if hidden:
            listed.append(f"... and {hidden} more problem{'s' if hidden > 1 else ''}")
        super().__init__("\n".join(listed))

    def __reduce__(self) -> tuple[type[WorkloadError], tuple[tuple[str, ...]]]:
        # The default would call WorkloadError(message) and lose the problem list across processes.
        return (type(self), (self.problems,))


@dataclass(frozen=True)
class Message:
    """One chat message of a prompt."""

    role: Role
    content: str

    def as_dict(self) -> dict[str, str]:
        """The ``{"role", "content"}`` mapping chat templates expect."""
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Prompt:
    """One golden-set prompt: exactly one of ``text`` (plain text) or ``messages`` (chat) is set.

    ``line`` is the 1-based line in the source file, so later stages can point back at it. ``followups``
    are the user's later turns of a conversation (chat prompts only), ``source`` the provenance the line
    carried (``file:line`` of the log a golden set was built from), if any.
    """

    id: str
    category: str
    text: str | None
    messages: tuple[Message, ...] | None
    max_tokens: int | None
    line: int
    followups: tuple[str, ...] = ()
    source: str | None = None

    def __post_init__(self) -> None:
        # Prompts are also built in code (tests, the CLI); keep the invariant the renderer relies on.
        if (self.text is None) == (self.messages is None):
            raise ValueError(f"prompt {self.id!r}: exactly one of text or messages must be set")
        if self.followups and self.messages is None:
            raise ValueError(f"prompt {self.id!r}: followups need a chat prompt (messages)")

    @property
    def turns(self) -> int:
        """How many user turns the conversation has (1 + followups)."""
        return 1 + len(self.followups)

    @property
    def is_chat(self) -> bool:
        return self.messages is not None


@dataclass(frozen=True)
class Workload:
    """The prompts of one golden set, in file order (or of several, file after file: :func:`load_workloads`).

    ``files`` names the file each prompt came from, as the caller passed it (parallel to ``prompts``;
    empty: every prompt is from ``path``), so a problem found later still points at ``file:line``.
    """

    path: Path
    prompts: tuple[Prompt, ...]
    files: tuple[str, ...] = field(default=(), compare=False)

    def where(self, index: int) -> str:
        """``file:line`` of prompt ``index``."""
        file = self.files[index] if self.files else os.fspath(self.path)
        return f"{file}:{self.prompts[index].line}"

    def __len__(self) -> int:
        return len(self.prompts)

    def __iter__(self) -> Iterator[Prompt]:
        return iter(self.prompts)

    @property
    def categories(self) -> tuple[str, ...]:
        """Distinct categories in order of first appearance."""
        return tuple(dict.fromkeys(p.category for p in self.prompts))

    def limit(self, n: int, top_up: Mapping[str, int] | None = None) -> Workload:
        """The first ``n`` prompts, in order (all of them if there are fewer); with ``top_up``, then the
        prompts after them of each category it names, in file order, until that category holds its number.

        # categories [a, r, b, r, c, r, r], n 3, top_up {r: 3} -> the first 3 [a, r, b] + [r, r] at 3 and 5
        """
        if n < 0:
            raise ValueError(f"limit must be >= 0, got {n}")
        held = Counter(p.category for p in self.prompts[:n])
        keep = list(range(min(n, len(self.prompts))))
        for i in range(n, len(self.prompts)):
            category = self.prompts[i].category
            if top_up and held[category] < top_up.get(category, 0):
                held[category] += 1
                keep.append(i)
        return Workload(path=self.path, prompts=tuple(self.prompts[i] for i in keep),
                        files=tuple(self.files[i] for i in keep) if self.files else ())  # fmt: skip

    def by_category(self) -> dict[str, tuple[Prompt, ...]]:
        """Prompts grouped by category; categories in order of first appearance, prompts in file order."""
        groups: dict[str, list[Prompt]] = {}
        for prompt in self.prompts:
            groups.setdefault(prompt.category, []).append(prompt)
        return {category: tuple(prompts) for category, prompts in groups.items()}


def _json_type(value: object) -> str:
    names: dict[type[Any], str] = {
        list: "array",
        str: "string",
        bool: "boolean",
        int: "number",
        float: "number",
    }
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _validate(model: type[_Model], obj: dict[str, Any], where: str, problems: list[str]) -> _Model | None:
    """``model.model_validate(obj)``, or None after appending one problem per bad field."""
    try:
        return model.model_validate(obj)
    except ValidationError as error:
        problems.extend(f"{where}: {message}" for message in describe_errors(error, model))
        return None


def _parse_own(obj: dict[str, Any], where: str, line: int, problems: list[str]) -> Prompt | None:
    parsed = _validate(OwnLine, obj, where, problems)
    if parsed is None:
        return None
    if parsed.prompt is not None and parsed.messages is not None:
        problems.append(f"{where}: field 'messages': give either 'prompt' or 'messages', not both")
        return None
    if parsed.prompt is None and parsed.messages is None:
        problems.append(f"{where}: field 'prompt': missing (give 'prompt' or 'messages')")
        return None
    messages: tuple[Message, ...] | None = None
    if parsed.messages is not None:
        last = len(parsed.messages) - 1
        if parsed.messages[last].role != "user":
            # add_generation_prompt opens a new assistant turn; after a non-user message that is
            # not a prompt any chat model was trained on, and some templates reject it outright.
            problems.append(f"{where}: field 'messages[{last}].role': the last message must be from 'user'")
            return None
        messages = tuple(_message(m) for m in parsed.messages)
    if parsed.followups is not None and messages is None:
        problems.append(f"{where}: field 'followups': needs a chat prompt ('messages'), not 'prompt'")
        return None
    return Prompt(
        id=str(parsed.id),
        category=parsed.category or DEFAULT_CATEGORY,
        text=parsed.prompt,
        messages=messages,
        max_tokens=parsed.max_tokens,
        line=line,
        followups=tuple(parsed.followups or ()),
        source=parsed.source,
    )


def _message(line: MessageLine) -> Message:
    return Message(role=line.role, content=line.content)


def _parse_spec_bench(obj: dict[str, Any], where: str, line: int, problems: list[str]) -> Prompt | None:
    parsed = _validate(SpecBenchLine, obj, where, problems)
    if parsed is None:
        return None
    return Prompt(
        id=str(parsed.question_id),
        category=parsed.category or DEFAULT_CATEGORY,
        text=None,
        messages=(Message(role="user", content=parsed.turns[0]),),
        max_tokens=None,
        line=line,
        followups=tuple(parsed.turns[1:]),
    )


def _is_spec_bench(obj: dict[str, Any]) -> bool:
    keys = obj.keys()
    return bool(keys & _SPEC_BENCH_KEYS) and not (keys & _OWN_KEYS)


def _refuse_json_document(data: bytes, shown: str) -> None:
    """A JSON array, or one object spread over several lines, is a JSON document rather than JSONL: one
    line saying what is expected instead of an error for every line of it."""
    head = data.lstrip()
    if head.startswith(b"["):
        what, fix = "a JSON array", "jq -c '.[]' turns it into JSONL"
    elif head.startswith(b"{") and b"\n" in head.strip():
        try:
            jsonsafe.loads(head)
        except ValueError:
            return  # JSONL (one object per line) or broken lines: each line is reported on its own
        what, fix = "one JSON object over several lines", "jq -c . puts it on one line"
    else:
        return
    raise WorkloadError([f"{shown}: {what}; a golden set is JSONL, one JSON object per line ({fix})"])


def _read_lines(path: Path, shown: str) -> list[bytes]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise WorkloadError([f"{shown}: file not found"]) from None
    except IsADirectoryError:
        raise WorkloadError([f"{shown}: is a directory, not a file"]) from None
    except OSError as error:
        raise WorkloadError([f"{shown}: cannot read file ({error.strerror or error})"]) from None
    # Editors on Windows like to start UTF-8 files with a byte-order mark; json.loads rejects it.
    data = data.removeprefix(b"\xef\xbb\xbf")
    _refuse_json_document(data, shown)
    # bytes.splitlines splits on \n, \r\n and \r only, so line numbers match what an editor shows;
    # str.splitlines would also split on U+2028 and friends, which may sit inside a JSON string.
    return data.splitlines()


def load_workload(path: str | os.PathLike[str]) -> Workload:
    """Load and validate a golden set (own JSONL or Spec-Bench ``question.jsonl``, detected per line).

    Raises :class:`WorkloadError` listing every problem in the file, one ``file:line: ...`` per line.
    """
    shown = os.fspath(path)
    file = Path(path)
    problems: list[str] = []
    prompts: list[Prompt] = []
    first_seen: dict[str, int] = {}
    saw_content = False

    for number, raw in enumerate(_read_lines(file, shown), start=1):
        where = f"{shown}:{number}"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            problems.append(
                f"{where}: not valid UTF-8 (byte 0x{raw[error.start]:02x} at column {error.start + 1})"
            )
            saw_content = True
            continue
        if not text.strip():
            continue
        saw_content = True
        try:
            obj = jsonsafe.loads(text)
        except json.JSONDecodeError as error:
            problems.append(f"{where}: invalid JSON ({error.msg} at column {error.colno})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: expected a JSON object, got {_json_type(obj)}")
            continue

        spec_bench = _is_spec_bench(obj)
        parse = _parse_spec_bench if spec_bench else _parse_own
        prompt = parse(obj, where, number, problems)
        if prompt is None:
            continue
        if prompt.id in first_seen:
            id_field = "question_id" if spec_bench else "id"
            problems.append(
                f"{where}: field '{id_field}': duplicate id '{prompt.id}' "
                f"(first seen on line {first_seen[prompt.id]})"
            )
            continue
        first_seen[prompt.id] = number
        prompts.append(prompt)

    if not saw_content:
        problems.append(f"{shown}: empty file (no prompts)")
    if problems:
        raise WorkloadError(problems)
    return Workload(path=file, prompts=tuple(prompts))


def load_workloads(
    paths: Sequence[str | os.PathLike[str]], limit: int | None = None, top_up: Mapping[str, int] | None = None
) -> Workload:
    """Several golden sets as one workload: file after file, the first ``limit`` prompts of each (all
    without; ``top_up`` as :meth:`Workload.limit` takes it), their categories together. Every problem of
    every file is collected before failing, as :func:`load_workload` does for one; a file given twice, or an
    id that two files both use, is a problem (an id names one request in every result, log and comparison).
    One path is :func:`load_workload`.
    """
    if not paths:
        raise WorkloadError(["no golden set given"])
    problems: list[str] = []
    prompts: list[Prompt] = []
    files: list[str] = []
    first: dict[str, str] = {}
    seen: dict[Path, str] = {}
    for path in paths:
        shown = os.fspath(path)
        key = Path(path).resolve()
        if key in seen:
            problems.append(f"{shown}: given twice (also as {seen[key]})")
            continue
        seen[key] = shown
        try:
            workload = load_workload(path)
        except WorkloadError as e:
            problems.extend(e.problems)
            continue
        if limit is not None:
            workload = workload.limit(limit, top_up)
        for i, prompt in enumerate(workload.prompts):
            where = workload.where(i)
            if prompt.id in first:
                problems.append(
                    f"{where}: field 'id': id '{prompt.id}' is also in {first[prompt.id]}; "
                    "ids must be unique across the --prompts files"
                )
                continue
            first[prompt.id] = where
            prompts.append(prompt)
            files.append(shown)
    if problems:
        raise WorkloadError(problems)
    return Workload(path=Path(paths[0]), prompts=tuple(prompts), files=tuple(files))
