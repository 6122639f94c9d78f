"""On-disk schema of one golden-set line, and the translation of its errors into one-liners.

Two line formats are accepted (see :mod:`specmeter.workloads.loader` for detection):

* specmeter's own JSONL (:class:`OwnLine`), strict: unknown keys are errors, so a typo such as ``promt``
  is caught instead of silently producing a prompt-less line;
* Spec-Bench's ``question.jsonl`` (:class:`SpecBenchLine`), lenient about extra keys, because those
  files are written by other tools (MT-bench rows carry ``reference``, for instance) and are not ours
  to police.

Pydantic does the type checking; :func:`describe_errors` turns its structured errors into short
``field '<path>': <what is expected>`` messages. The expectation is keyed by field rather than by
pydantic's error type, so every way of getting a field wrong yields the same sentence (and a union such
as ``id: str | int`` yields one message instead of one per union member).

``null`` for an optional field means "absent": tools such as pandas write ``null`` for missing columns.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

Role = Literal["system", "user", "assistant"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant")


def _non_blank(value: str) -> str:
    # Whitespace-only text is almost certainly a mistake; the value itself is kept verbatim because
    # leading and trailing whitespace changes tokenization.
    if not value.strip():
        raise ValueError("blank string")
    return value


NonEmptyStr = Annotated[StrictStr, AfterValidator(_non_blank)]
# bool is a subclass of int in Python; StrictInt (strict mode) rejects true/false.
Identifier = NonEmptyStr | StrictInt
PositiveInt = Annotated[StrictInt, Field(gt=0)]


class MessageLine(BaseModel):
    """One chat message as written in a golden set."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    role: Role
    content: NonEmptyStr


class OwnLine(BaseModel):
    """A line of specmeter's own golden-set format; exactly one of ``prompt`` / ``messages`` is set
    (checked by the loader, which reports it as a friendly problem)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: Identifier
    prompt: NonEmptyStr | None = None
    messages: Annotated[list[MessageLine], Field(min_length=1)] | None = None
    category: NonEmptyStr | None = None
    max_tokens: PositiveInt | None = None
    followups: Annotated[list[NonEmptyStr], Field(min_length=1)] | None = None
    source: NonEmptyStr | None = None


class SpecBenchLine(BaseModel):
    """A line of Spec-Bench's ``question.jsonl``; keys other than these are ignored."""

    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)

    question_id: Identifier
    turns: Annotated[list[NonEmptyStr], Field(min_length=1)]
    category: NonEmptyStr | None = None


# What each field must look like, keyed by its path with list indices blanked ("messages[].role").
_EXPECTATIONS: dict[str, str] = {
    "id": "must be a non-empty string or an integer",
    "question_id": "must be a non-empty string or an integer",
    "prompt": "must be a non-empty string",
    "category": "must be a non-empty string",
    "max_tokens": "must be a positive integer",
    "messages": "must be a non-empty list of {role, content} objects",
    "messages[]": "must be an object with 'role' and 'content'",
    "messages[].role": "must be one of " + ", ".join(repr(r) for r in ROLES),
    "messages[].content": "must be a non-empty string",
    "turns": "must be a non-empty list of strings",
    "followups": "must be a non-empty list of strings",
    "followups[]": "must be a non-empty string",
    "source": "must be a non-empty string",
    "turns[]": "must be a non-empty string",
}


def _field_path(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic location as ``messages[2].role``.

    A string segment that directly follows another string segment is a union-member tag
    (``('id', 'str')``), not a field, so it is dropped.
    """
    path = ""
    previous: int | str | None = None
    for segment in loc:
        if isinstance(segment, int):
            path += f"[{segment}]"
        elif previous is None or isinstance(previous, int):
            path += segment if previous is None else f".{segment}"
        else:
            continue
        previous = segment
    return path


def _unknown_field(path: str, known: tuple[str, ...]) -> str:
    name = path.rsplit(".", 1)[-1]
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"field '{path}': unknown field{hint}"


def describe_errors(error: ValidationError, model: type[BaseModel]) -> list[str]:
    """One ``field '<path>': <problem>`` message per distinct problem, in pydantic's order."""
    messages: list[str] = []
    for detail in error.errors():
        path = _field_path(tuple(detail["loc"]))
        if detail["type"] == "extra_forbidden":
            is_message_key = "[" in path
            known = tuple(MessageLine.model_fields) if is_message_key else tuple(model.model_fields)
            message = _unknown_field(path, known)
        elif detail["type"] == "missing":
            message = f"field '{path}': missing"
        else:
            expectation = _EXPECTATIONS.get(re.sub(r"\[\d+\]", "[]", path), "has an invalid value")
            message = f"field '{path}': {expectation}"
        if message not in messages:
            messages.append(message)
    return messages
