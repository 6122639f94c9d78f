"""Every input format `golden` reads, from a fixture written for the test: prompts, provenance, bad lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specmeter.goldenset import read_prompts
from specmeter.goldenset.formats import detect_format
from specmeter.workloads import Message

FIXTURES = Path(__file__).parent / "fixtures"


def read(name: str, **kwargs: str) -> tuple[list[tuple[int, object]], list[str], dict[str, str]]:
    path = str(FIXTURES / name)
    result = read_prompts([path], **kwargs)  # type: ignore[arg-type]
    prompts = [(p.line, p) for p in result.prompts]
    problems = [str(p).removeprefix(path) for p in result.problems]
    return prompts, problems, {Path(k).name: v for k, v in result.formats.items()}


def test_openai_chat_log_with_responses_batch_lines_and_bad_lines() -> None:
    prompts, problems, formats = read("openai_chat.jsonl")
    assert formats == {"openai_chat.jsonl": "openai"}
    assert [line for line, _ in prompts] == [1, 2, 3, 9]
    first = prompts[0][1]
    assert first.messages[0] == Message("system", "You review contracts.")  # type: ignore[attr-defined]
    assert first.max_tokens == 200  # type: ignore[attr-defined]
    history = prompts[1][1].messages  # type: ignore[attr-defined]
    # Chat history is production context: kept, text parts joined.
    assert [m.role for m in history] == ["user", "assistant", "user"]
    assert history[-1].content == "It is ken.sato@example.jp, phone 03-1234-5678."
    assert prompts[2][1].messages[0].role == "system"  # type: ignore[attr-defined]  # developer → system
    assert prompts[2][1].max_tokens == 64  # type: ignore[attr-defined]  # max_completion_tokens
    assert prompts[3][1].id == "batch-7"  # type: ignore[attr-defined]  # Batch API input line
    assert problems == [
        ":5: field 'request.messages[0].content[0]': content part of type 'image_url' "
        "(only text prompts can be replayed)",
        ":6: a response without its request (nothing to replay)",
        ":7: field 'request.messages': the last message is 'assistant'; a prompt ends with a user turn",
        ":8: invalid JSON (Expecting value at column 95)",
        ":10: field 'request.messages[0].role': role 'tool' cannot be replayed "
        "(system, user or assistant only)",
    ]


def test_openai_completions_and_responses_api() -> None:
    prompts, problems, _ = read("openai_completions.jsonl")
    texts = {p.id: (p.text, p.messages) for _, p in prompts}  # type: ignore[attr-defined]
    assert texts["cmpl-1"] == ("The parties agree that force majeure", None)
    assert texts["cmpl-2"][0] == "Once upon a time in a small harbour town"  # a batch of one
    assert texts["resp-1"][1] == (
        Message("system", "Be terse."),
        Message("user", "Write a haiku about invoices."),
    )
    assert texts["resp-2"][1] == (Message("user", "Explain a limitation of liability clause."),)
    assert problems == [
        ":3: field 'prompt': token ids, not text (the tokenizer that made them is unknown)",
        ":4: field 'prompt': empty",
    ]


def test_sharegpt_array_keeps_conversations_with_element_lines() -> None:
    prompts, problems, formats = read("sharegpt.json")
    assert formats == {"sharegpt.json": "sharegpt"}
    by_id = {p.id: (line, p) for line, p in prompts}  # type: ignore[attr-defined]
    line, conversation = by_id["sg-1"]
    assert line == 2  # the line the array element starts on
    assert conversation.messages == (Message("user", "What is a non-compete clause?"),)
    # Later user turns are replayed after the model's own answers; the recorded answers are dropped.
    assert conversation.followups == ("Is it enforceable in California?", "Give me an example sentence.")
    assert by_id["sg-2"][1].messages[0] == Message("system", "You are a travel agent.")
    assert by_id["sg-5"][1].messages[-1].content == "Translate: good morning\ninto French"
    assert problems == [
        ":19: field 'conversations[0]': the conversation starts with the model ('gpt'), not a user",
        ":20: field 'conversations': must be a non-empty list of turns",
    ]


def test_sharegpt_jsonl_and_broken_array(tmp_path: Path) -> None:
    jsonl = tmp_path / "sg.jsonl"
    jsonl.write_text(
        json.dumps({"conversations": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8"
    )
    result = read_prompts([jsonl])
    assert result.formats[str(jsonl)] == "sharegpt" and result.prompts[0].messages == (Message("user", "hi"),)
    broken = tmp_path / "broken.json"
    broken.write_text(
        '[\n {"conversations": [{"from": "human", "value": "a"}]},\n {"conversations": [\n', "utf-8"
    )
    result = read_prompts([broken])
    assert len(result.prompts) == 1
    assert [str(p) for p in result.problems] == [
        f"{broken}:4: invalid JSON (Expecting value at column 1); the rest of the array is skipped"
    ]


def test_csv_prompt_column_multiline_rows_and_bad_rows() -> None:
    prompts, problems, formats = read("prompts.csv")
    assert formats == {"prompts.csv": "csv"}
    assert [(line, p.text) for line, p in prompts] == [  # type: ignore[attr-defined]
        (2, "Summarise this NDA in three bullet points."),
        (3, "Write a limerick\nabout a cat"),  # a quoted field spanning two lines starts on line 3
        (7, "Explain what an SLA is."),
    ]
    assert prompts[0][1].record["team"] == "legal"  # type: ignore[attr-defined]
    assert prompts[0][1].max_tokens == 64  # type: ignore[attr-defined]
    assert problems == [":5: column 'prompt': empty", ":6: 5 cells, the header has 4"]


def test_csv_named_column_and_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("Question Text,area\nwhat is consideration?,legal\n", encoding="utf-8")
    assert [str(p) for p in read_prompts([path]).problems] == [
        f"{path}:1: no prompt column among Question Text, area; pass --prompt-column"
    ]
    assert read_prompts([path], prompt_column="question text").prompts[0].text == "what is consideration?"


def test_spec_bench_questions_keep_every_turn() -> None:
    prompts, problems, formats = read("question.jsonl")
    assert formats == {"question.jsonl": "specbench"}
    first = prompts[0][1]
    assert first.id == "81" and first.followups == (  # type: ignore[attr-defined]
        "Rewrite your previous response. Start every sentence with the letter A.",
    )
    assert problems == [":3: field 'turns': must be a non-empty list of non-empty strings"]


def test_specmeter_serve_log_with_prompts() -> None:
    prompts, problems, formats = read("serve_log.jsonl")
    assert formats == {"serve_log.jsonl": "specmeter"}
    assert prompts[0][1].messages == (Message("user", "Define 'Business Day'."),)  # type: ignore[attr-defined]
    assert prompts[1][1].text == "The storm arrived without warning"  # type: ignore[attr-defined]
    assert problems == [":3: a per-request log line without the prompt (log it with `serve --log-prompts`)"]


def test_own_golden_set_is_read_back(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    line = {
        "id": "q",
        "category": "legal",
        "messages": [{"role": "user", "content": "a"}],
        "followups": ["b"],
    }
    path.write_text(json.dumps({**line, "source": "x.jsonl:3"}) + "\n", encoding="utf-8")
    (prompt,) = read_prompts([path]).prompts
    assert prompt.format == "specmeter" and prompt.followups == ("b",)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"conversations": []}, "sharegpt"),
        ({"question_id": 1, "turns": ["x"]}, "specbench"),
        ({"id": "1", "prompt": "x", "category": "c"}, "specmeter"),
        ({"run": "serve", "accepted_tokens": 1, "drafted_tokens": 2}, "specmeter"),
        ({"model": "m", "messages": []}, "openai"),
        ({"custom_id": "a", "body": {}}, "openai"),
        ({"id": "x", "prompt": "p", "model": "m"}, "openai"),  # a key ours lacks: an OpenAI request
        ({"hello": 1}, None),
    ],
)
def test_detection(record: dict[str, object], expected: str | None) -> None:
    assert detect_format(record) == expected


def test_format_override_directory_bom_and_missing(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.jsonl").write_bytes(
        b"\xef\xbb\xbf" + json.dumps({"prompt": "x"}).encode() + b"\n"
    )
    (tmp_path / "logs" / "b.jsonl").write_text(json.dumps({"prompt": "y"}) + "\n", encoding="utf-8")
    result = read_prompts([tmp_path / "logs", tmp_path / "nope.jsonl"], fmt="openai")
    assert [p.text for p in result.prompts] == ["x", "y"]
    assert [str(p) for p in result.problems] == [f"{tmp_path / 'nope.jsonl'}: no such file or directory"]
    unknown = tmp_path / "u.jsonl"
    unknown.write_text('{"hello": 1}\n', encoding="utf-8")
    assert [str(p) for p in read_prompts([unknown]).problems] == [
        f"{unknown}: cannot tell the format from its first records; pass --format"
    ]


def test_text_round_trips_unchanged_and_u2028_is_not_a_line_break(tmp_path: Path) -> None:
    text = "契約書の第3条\u2028を要約して — «ok» 🙂"
    path = tmp_path / "j.jsonl"
    path.write_text(
        json.dumps({"prompt": text}, ensure_ascii=False) + "\n" + json.dumps({"prompt": "b"}) + "\n", "utf-8"
    )
    result = read_prompts([path])
    assert [(p.line, p.text) for p in result.prompts] == [(1, text), (2, "b")]


def test_goldenset_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = "import sys, specmeter.goldenset, specmeter.goldenset.view; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_a_file_that_is_not_utf8_is_one_problem_naming_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps({"prompt": "ok"}).encode() + b"\n" + b'{"prompt": "caf\xe9"}\n')
    result = read_prompts([str(path)])
    assert result.prompts == []
    assert [str(p) for p in result.problems] == [f"{path}:2: not valid UTF-8 (byte 0xe9), the whole file"]
