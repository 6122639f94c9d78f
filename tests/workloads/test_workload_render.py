"""render_prompt against a real (tiny) Hugging Face tokenizer, with and without a chat template.

Expected ids come from encoding the expected rendered string with the raw ``tokenizers`` object, so the
test does not trust the transformers code path it is checking.
"""

from __future__ import annotations

from typing import Any

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from specmeter.workloads import Message, Prompt, plain_chat_text, render_prompt

SPECIALS = ["[UNK]", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]
CORPUS = [
    "The lessee shall pay the rent on the first day of each month.",
    "Once upon a time a cat sat on the mat.",
    "system: Be brief.",
    "user: Define force majeure.",
    "assistant: An event beyond control.",
]
# A minimal template in the usual shape: BOS, role-tagged turns, an open assistant turn at the end.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
MESSAGES = (Message("system", "Be brief."), Message("user", "Define force majeure."))


@pytest.fixture(scope="module")
def raw() -> Tokenizer:
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=SPECIALS))
    # Like Llama: BOS prepended whenever special tokens are added.
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tokenizer.token_to_id("<s>"))]
    )
    return tokenizer


def wrap(raw: Tokenizer, chat_template: str | None) -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=raw,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="[UNK]",
        chat_template=chat_template,
    )


def text_prompt(text: str) -> Prompt:
    return Prompt(id="t", category="c", text=text, messages=None, max_tokens=None, line=1)


def chat_prompt(messages: tuple[Message, ...]) -> Prompt:
    return Prompt(id="m", category="c", text=None, messages=messages, max_tokens=None, line=1)


def assert_plain_ids(ids: object, raw: Tokenizer) -> None:
    assert type(ids) is list
    assert all(type(i) is int for i in ids)
    assert raw.token_to_id("[UNK]") not in ids  # every word is known, so the comparison means something


@pytest.mark.parametrize("chat_template", [None, CHAT_TEMPLATE], ids=["no-template", "template"])
def test_text_prompt_is_encoded_as_is_with_bos(raw: Tokenizer, chat_template: str | None) -> None:
    text = "The lessee shall pay the rent"
    ids = render_prompt(text_prompt(text), wrap(raw, chat_template))
    assert_plain_ids(ids, raw)
    assert ids == raw.encode(text).ids
    assert ids[0] == raw.token_to_id("<s>")
    assert ids[1:] == raw.encode(text, add_special_tokens=False).ids


def test_messages_use_chat_template(raw: Tokenizer) -> None:
    ids = render_prompt(chat_prompt(MESSAGES), wrap(raw, CHAT_TEMPLATE))
    expected = "<s><|system|> Be brief. <|user|> Define force majeure. <|assistant|>"
    assert_plain_ids(ids, raw)
    assert ids == raw.encode(expected, add_special_tokens=False).ids
    bos = raw.token_to_id("<s>")
    assert bos is not None
    assert ids.count(bos) == 1  # the template's BOS, not a second one on top
    assert ids[-1] == raw.token_to_id("<|assistant|>")  # generation prompt added


def test_messages_without_template_use_plain_rendering(raw: Tokenizer) -> None:
    ids = render_prompt(chat_prompt(MESSAGES), wrap(raw, None))
    expected = "system: Be brief.\nuser: Define force majeure.\nassistant:"
    assert plain_chat_text(MESSAGES) == expected
    assert_plain_ids(ids, raw)
    assert ids == raw.encode(expected).ids
    assert ids[0] == raw.token_to_id("<s>")


def test_spec_bench_prompt_goes_through_chat_template(raw: Tokenizer) -> None:
    prompt = chat_prompt((Message("user", "Define force majeure."),))
    ids = render_prompt(prompt, wrap(raw, CHAT_TEMPLATE))
    assert ids == raw.encode("<s><|user|> Define force majeure. <|assistant|>", add_special_tokens=False).ids


class ListReturningTokenizer:
    """transformers 4.x behaviour: apply_chat_template(tokenize=True) returns the id list itself."""

    chat_template = "anything"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, text: str) -> dict[str, list[int]]:
        return {"input_ids": [len(text)]}

    def apply_chat_template(
        self, conversation: list[dict[str, str]], /, *, add_generation_prompt: bool, tokenize: bool
    ) -> list[int]:
        self.calls.append(
            {
                "conversation": conversation,
                "add_generation_prompt": add_generation_prompt,
                "tokenize": tokenize,
            }
        )
        return [5, 6, 7]


def test_list_returned_by_chat_template_is_accepted() -> None:
    tokenizer = ListReturningTokenizer()
    assert render_prompt(chat_prompt(MESSAGES), tokenizer) == [5, 6, 7]
    assert tokenizer.calls == [
        {
            "conversation": [m.as_dict() for m in MESSAGES],
            "add_generation_prompt": True,
            "tokenize": True,
        }
    ]
    assert render_prompt(text_prompt("abc"), tokenizer) == [3]


def test_nested_ids_are_rejected() -> None:
    class Batched(ListReturningTokenizer):
        def __call__(self, text: str) -> dict[str, list[int]]:
            return {"input_ids": [[1, 2]]}  # type: ignore[list-item]

    with pytest.raises(TypeError, match="flat sequence of token ids"):
        render_prompt(text_prompt("abc"), Batched())
