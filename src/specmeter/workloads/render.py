"""Turn a golden-set prompt into the token ids the engines are fed.

Text prompts are encoded as written, with the tokenizer's own special-token behaviour (BOS for most
decoder models), exactly what ``tokenizer(text)["input_ids"]`` gives.

Chat prompts go through the tokenizer's chat template with ``add_generation_prompt=True``, so the
model sees the same framing it sees in production (the template itself supplies BOS and the like;
transformers encodes its output without adding special tokens again). A tokenizer without a chat
template (a base model, the bundled demo models) gets a plain rendering instead, one ``role: content``
line per message and a final ``assistant:`` line, encoded like a text prompt (BOS included)::

    system: Be brief.
    user: Define 'force majeure'.
    assistant:

A conversation (a chat prompt with ``followups``) is replayed turn by turn as a chat client would: turn t
sends the prompt's messages, then for every earlier turn the model's *own* answer and the user's next
message (:func:`turn_messages`, :func:`render_turn`); each turn is its own request, ``id``, ``id#2``, …
(:func:`turn_id`).

The tokenizer is typed structurally (:class:`PromptTokenizer`) so this module does not import
transformers; any ``PreTrainedTokenizerBase`` fits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from specmeter.workloads.loader import Message, Prompt


class PromptTokenizer(Protocol):
    """The part of a Hugging Face tokenizer that :func:`render_prompt` uses."""

    @property
    def chat_template(self) -> str | dict[str, str] | None: ...

    def __call__(self, text: str) -> Any: ...

    def apply_chat_template(
        self, conversation: list[dict[str, str]], /, *, add_generation_prompt: bool, tokenize: bool
    ) -> Any: ...


def plain_chat_text(messages: Sequence[Message]) -> str:
    """The template-less rendering of a conversation: ``role: content`` lines, then ``assistant:``."""
    lines = [f"{message.role}: {message.content}" for message in messages]
    lines.append("assistant:")
    return "\n".join(lines)


def _token_ids(output: object) -> list[int]:
    """A plain ``list[int]`` from whatever a tokenizer call returned.

    transformers 5 returns a ``BatchEncoding`` from ``apply_chat_template(..., tokenize=True)`` (its
    ``return_dict`` defaults to True), 4.x returned the id list itself; tensors and arrays are handled
    too in case a caller's tokenizer was configured to return them.
    """
    if isinstance(output, Mapping):
        output = output["input_ids"]
    tolist = getattr(output, "tolist", None)
    if callable(tolist):
        output = tolist()
    if isinstance(output, (list, tuple)) and all(
        isinstance(i, int) and not isinstance(i, bool) for i in output
    ):
        return [int(i) for i in output]
    raise TypeError(f"tokenizer returned {type(output).__name__}, expected a flat sequence of token ids")


def turn_id(prompt_id: str, turn: int) -> str:
    """The request id of a conversation's turn (0-based): the prompt's id, then ``id#2``, ``id#3``, …"""
    return prompt_id if turn == 0 else f"{prompt_id}#{turn + 1}"


def turn_messages(prompt: Prompt, answers: Sequence[str]) -> tuple[Message, ...]:
    """The conversation a chat client sends for turn ``len(answers)``: the prompt's messages, then for
    each earlier turn the model's own answer and the user's next message.

    ``[sys, u1] + answers [a1] → [sys, u1, assistant a1, user u2]``
    """
    turn = len(answers)
    if prompt.messages is None or turn > len(prompt.followups):
        raise ValueError(f"prompt {prompt.id!r} has no turn {turn + 1}")
    out = list(prompt.messages)
    for answer, followup in zip(answers, prompt.followups, strict=False):
        out += [Message("assistant", answer), Message("user", followup)]
    return tuple(out)


def render_turn(prompt: Prompt, answers: Sequence[str], tokenizer: PromptTokenizer) -> list[int]:
    """Token ids of turn ``len(answers)`` of a conversation (turn 0 is :func:`render_prompt`)."""
    if not answers:
        return render_prompt(prompt, tokenizer)
    return render_prompt(
        dataclasses.replace(prompt, messages=turn_messages(prompt, answers), followups=()), tokenizer
    )


def render_prompt(prompt: Prompt, tokenizer: PromptTokenizer) -> list[int]:
    """The prompt's token ids, ready to prefill (see the module docstring for the rules)."""
    if prompt.messages is None:
        assert prompt.text is not None  # Prompt guarantees exactly one of text/messages
        return _token_ids(tokenizer(prompt.text))
    # getattr: a duck-typed tokenizer may not have the attribute at all.
    if getattr(tokenizer, "chat_template", None):
        conversation = [message.as_dict() for message in prompt.messages]
        return _token_ids(
            tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=True)
        )
    return _token_ids(tokenizer(plain_chat_text(prompt.messages)))
