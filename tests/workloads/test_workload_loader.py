"""Loading and validating golden sets: good files parse, every bad input yields its exact one-liner."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from specmeter.workloads import (
    MAX_LISTED_PROBLEMS,
    Message,
    Prompt,
    Workload,
    WorkloadError,
    load_workload,
)


def write(tmp_path: Path, *lines: str, name: str = "golden.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def problems_of(path: Path | str) -> list[str]:
    with pytest.raises(WorkloadError) as info:
        load_workload(path)
    # The message is exactly the problems, one per line (no cap reached in these tests).
    assert str(info.value).splitlines() == list(info.value.problems)
    return list(info.value.problems)


# --- good input ---------------------------------------------------------------------------------


def test_own_format_text_prompts(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"id": "q1", "prompt": "Once upon a time", "category": "general/narration", "max_tokens": 64}',
        '{"id": 7, "prompt": "Define the term."}',
    )
    workload = load_workload(path)
    assert workload.path == path
    assert workload.prompts == (
        Prompt(
            id="q1",
            category="general/narration",
            text="Once upon a time",
            messages=None,
            max_tokens=64,
            line=1,
        ),
        Prompt(id="7", category="default", text="Define the term.", messages=None, max_tokens=None, line=2),
    )
    assert not workload.prompts[0].is_chat


def test_prompt_text_is_kept_verbatim(tmp_path: Path) -> None:
    # Leading/trailing whitespace changes tokenization, so it must survive loading.
    path = write(tmp_path, json.dumps({"id": "a", "prompt": "  Dear Sir,\n"}))
    assert load_workload(path).prompts[0].text == "  Dear Sir,\n"


def test_own_format_messages(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Define 'lease'."},
    ]
    path = write(tmp_path, json.dumps({"id": "c1", "messages": messages, "category": "legal"}))
    (prompt,) = load_workload(path).prompts
    assert prompt.text is None
    assert prompt.is_chat
    assert prompt.messages == (
        Message("system", "Be brief."),
        Message("user", "Hi"),
        Message("assistant", "Hello."),
        Message("user", "Define 'lease'."),
    )
    assert [m.as_dict() for m in prompt.messages] == messages
    assert prompt.category == "legal"


def test_null_optional_fields_mean_absent(tmp_path: Path) -> None:
    # pandas and friends write null for missing columns.
    line = {"id": "a", "prompt": "x", "messages": None, "category": None, "max_tokens": None}
    (prompt,) = load_workload(write(tmp_path, json.dumps(line))).prompts
    assert (prompt.text, prompt.messages, prompt.category, prompt.max_tokens) == ("x", None, "default", None)


def test_spec_bench_first_turn_is_the_prompt_later_turns_followups(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"question_id": 81, "category": "writing", "turns": ["Write a blog post.", "Rewrite it."]}',
        '{"question_id": "101", "category": "math", "turns": ["2+2?"], "reference": ["4"]}',
        '{"question_id": 7, "turns": ["No category here."]}',
    )
    prompts = load_workload(path).prompts
    assert prompts[0] == Prompt(
        id="81",
        category="writing",
        text=None,
        messages=(Message("user", "Write a blog post."),),
        max_tokens=None,
        line=1,
        followups=("Rewrite it.",),
    )
    assert prompts[0].turns == 2
    assert prompts[1].id == "101"
    assert prompts[1].followups == ()
    assert prompts[1].messages == (Message("user", "2+2?"),)
    assert prompts[2].category == "default"


def test_conversation_with_followups_and_provenance(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        json.dumps(
            {
                "id": "c1",
                "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
                "followups": ["And then?", "Thanks — 最後に一つ。"],
                "source": "chats.json:12",
            },
            ensure_ascii=False,
        ),
    )
    (prompt,) = load_workload(path).prompts
    assert prompt.followups == ("And then?", "Thanks — 最後に一つ。")
    assert prompt.turns == 3
    assert prompt.source == "chats.json:12"
    with pytest.raises(ValueError, match="followups need a chat prompt"):
        Prompt(id="x", category="c", text="t", messages=None, max_tokens=None, line=1, followups=("y",))


def test_formats_mix_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "",
        '{"id": "a", "prompt": "x"}',
        "   ",
        '{"question_id": 2, "category": "qa", "turns": ["y"]}',
        "",
    )
    workload = load_workload(path)
    assert [(p.id, p.line) for p in workload] == [("a", 2), ("2", 4)]


def test_crlf_and_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "prompt": "x"}\r\n\r\n{"id": "b", "prompt": "y"}\r\n')
    assert [(p.id, p.line) for p in load_workload(path)] == [("a", 1), ("b", 3)]


def test_accepts_str_path(tmp_path: Path) -> None:
    path = write(tmp_path, '{"id": "a", "prompt": "x"}')
    assert load_workload(str(path)).path == path


# --- Workload -----------------------------------------------------------------------------------


@pytest.fixture
def workload(tmp_path: Path) -> Workload:
    lines = [
        {"id": "1", "prompt": "a", "category": "legal"},
        {"id": "2", "prompt": "b", "category": "general"},
        {"id": "3", "prompt": "c", "category": "legal"},
        {"id": "4", "prompt": "d"},
    ]
    return load_workload(write(tmp_path, *(json.dumps(line) for line in lines)))


def test_categories_in_first_seen_order(workload: Workload) -> None:
    assert workload.categories == ("legal", "general", "default")


def test_limit_keeps_order(workload: Workload) -> None:
    assert [p.id for p in workload.limit(2)] == ["1", "2"]
    assert workload.limit(2).path == workload.path
    assert workload.limit(0).prompts == ()
    assert workload.limit(100) == workload
    assert len(workload) == 4
    with pytest.raises(ValueError, match="limit"):
        workload.limit(-1)


def test_by_category(workload: Workload) -> None:
    groups = workload.by_category()
    assert list(groups) == ["legal", "general", "default"]
    assert [p.id for p in groups["legal"]] == ["1", "3"]
    assert [p.id for p in groups["default"]] == ["4"]


def test_prompt_requires_exactly_one_of_text_and_messages() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Prompt(id="a", category="c", text=None, messages=None, max_tokens=None, line=1)
    with pytest.raises(ValueError, match="exactly one"):
        Prompt(id="a", category="c", text="x", messages=(Message("user", "y"),), max_tokens=None, line=1)


# --- bad input: one line, one exact problem ----------------------------------------------------

BAD_LINES = [
    ('{"id": "q", "prompt": ""}', "field 'prompt': must be a non-empty string"),
    ('{"id": "q", "prompt": "  \\n "}', "field 'prompt': must be a non-empty string"),
    ('{"id": "q", "prompt": 5}', "field 'prompt': must be a non-empty string"),
    ('{"id": "q", "prompt": "x", "b": 1}', "field 'b': unknown field"),
    ('{"id": "q", "promt": "x", "prompt": "y"}', "field 'promt': unknown field (did you mean 'prompt'?)"),
    ('{"id": "q"}', "field 'prompt': missing (give 'prompt' or 'messages')"),
    ('{"prompt": "x"}', "field 'id': missing"),
    ('{"id": "", "prompt": "x"}', "field 'id': must be a non-empty string or an integer"),
    ('{"id": 1.5, "prompt": "x"}', "field 'id': must be a non-empty string or an integer"),
    ('{"id": true, "prompt": "x"}', "field 'id': must be a non-empty string or an integer"),
    ('{"id": null, "prompt": "x"}', "field 'id': must be a non-empty string or an integer"),
    ('{"id": "q", "prompt": "x", "category": 3}', "field 'category': must be a non-empty string"),
    ('{"id": "q", "prompt": "x", "category": ""}', "field 'category': must be a non-empty string"),
    ('{"id": "q", "prompt": "x", "max_tokens": 0}', "field 'max_tokens': must be a positive integer"),
    ('{"id": "q", "prompt": "x", "max_tokens": -5}', "field 'max_tokens': must be a positive integer"),
    ('{"id": "q", "prompt": "x", "max_tokens": true}', "field 'max_tokens': must be a positive integer"),
    ('{"id": "q", "prompt": "x", "max_tokens": 12.0}', "field 'max_tokens': must be a positive integer"),
    ('{"id": "q", "prompt": "x", "max_tokens": "12"}', "field 'max_tokens': must be a positive integer"),
    (
        '{"id": "q", "prompt": "x", "messages": [{"role": "user", "content": "y"}]}',
        "field 'messages': give either 'prompt' or 'messages', not both",
    ),
    ('{"id": "q", "messages": []}', "field 'messages': must be a non-empty list of {role, content} objects"),
    (
        '{"id": "q", "messages": "hi"}',
        "field 'messages': must be a non-empty list of {role, content} objects",
    ),
    ('{"id": "q", "messages": ["hi"]}', "field 'messages[0]': must be an object with 'role' and 'content'"),
    (
        '{"id": "q", "messages": [{"role": "bot", "content": "hi"}]}',
        "field 'messages[0].role': must be one of 'system', 'user', 'assistant'",
    ),
    (
        '{"id": "q", "messages": [{"role": "user", "content": 3}]}',
        "field 'messages[0].content': must be a non-empty string",
    ),
    (
        '{"id": "q", "messages": [{"role": "user", "content": ""}]}',
        "field 'messages[0].content': must be a non-empty string",
    ),
    ('{"id": "q", "messages": [{"role": "user"}]}', "field 'messages[0].content': missing"),
    (
        '{"id": "q", "messages": [{"role": "user", "content": "a", "contnet": "b"}]}',
        "field 'messages[0].contnet': unknown field (did you mean 'content'?)",
    ),
    (
        '{"id": "q", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}',
        "field 'messages[1].role': the last message must be from 'user'",
    ),
    ('"just a prompt"', "expected a JSON object, got string"),
    ("42", "expected a JSON object, got number"),
    ("null", "expected a JSON object, got null"),
    ('{"id": "a" "prompt": "x"}', "invalid JSON (Expecting ',' delimiter at column 12)"),
    ('{"id": "a", "prompt": "x"', "invalid JSON (Expecting ',' delimiter at column 26)"),
    ("{'id': 'a'}", "invalid JSON (Expecting property name enclosed in double quotes at column 2)"),
    # Spec-Bench lines
    ('{"question_id": 1}', "field 'turns': missing"),
    ('{"turns": ["x"]}', "field 'question_id': missing"),
    ('{"question_id": 1, "turns": []}', "field 'turns': must be a non-empty list of strings"),
    ('{"question_id": 1, "turns": "x"}', "field 'turns': must be a non-empty list of strings"),
    ('{"question_id": 1, "turns": [""]}', "field 'turns[0]': must be a non-empty string"),
    ('{"question_id": 1, "turns": ["x", 2]}', "field 'turns[1]': must be a non-empty string"),
    ('{"question_id": 1, "turns": ["x"], "category": 5}', "field 'category': must be a non-empty string"),
    (
        '{"question_id": false, "turns": ["x"]}',
        "field 'question_id': must be a non-empty string or an integer",
    ),
    (
        '{"id": "q", "prompt": "x", "followups": ["y"]}',
        "field 'followups': needs a chat prompt ('messages'), not 'prompt'",
    ),
    (
        '{"id": "q", "messages": [{"role": "user", "content": "a"}], "followups": []}',
        "field 'followups': must be a non-empty list of strings",
    ),
    (
        '{"id": "q", "messages": [{"role": "user", "content": "a"}], "followups": ["b", " "]}',
        "field 'followups[1]': must be a non-empty string",
    ),
    ('{"id": "q", "prompt": "x", "source": 3}', "field 'source': must be a non-empty string"),
    # A line with our keys is ours, so Spec-Bench keys on it are typos, not a format switch.
    ('{"id": "q", "prompt": "x", "turns": ["y"]}', "field 'turns': unknown field"),
]


@pytest.mark.parametrize(("line", "problem"), BAD_LINES, ids=[problem for _, problem in BAD_LINES])
def test_bad_line_gives_exact_problem(tmp_path: Path, line: str, problem: str) -> None:
    path = write(tmp_path, '{"id": "ok", "prompt": "fine"}', line)
    assert problems_of(path) == [f"{path}:2: {problem}"]


def test_file_is_named_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, '{"id": "q", "prompt": ""}')
    monkeypatch.chdir(tmp_path)
    assert problems_of("golden.jsonl") == ["golden.jsonl:1: field 'prompt': must be a non-empty string"]


def test_duplicate_ids(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"id": "q0", "prompt": "a"}',
        '{"id": "q1", "prompt": "b"}',
        '{"id": "q1", "prompt": "c"}',
        # An integer id collides with the same id written as a string: both become "5".
        '{"id": 5, "prompt": "d"}',
        '{"question_id": "5", "turns": ["e"]}',
    )
    assert problems_of(path) == [
        f"{path}:3: field 'id': duplicate id 'q1' (first seen on line 2)",
        f"{path}:5: field 'question_id': duplicate id '5' (first seen on line 4)",
    ]


def test_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_bytes(b'{"id": "a", "prompt": "x"}\n{"id": "b", "prompt": "caf\xe9"}\n')
    assert problems_of(path) == [f"{path}:2: not valid UTF-8 (byte 0xe9 at column 27)"]


def test_a_json_document_instead_of_jsonl_is_one_line(tmp_path: Path) -> None:
    # Issue 12: a JSON array (or one pretty-printed object) is not JSONL; one line says what is expected.
    array = tmp_path / "prompts.json"
    array.write_text(json.dumps([{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y"}], indent=2))
    assert problems_of(array) == [
        f"{array}: a JSON array; a golden set is JSONL, one JSON object per line "
        "(jq -c '.[]' turns it into JSONL)"
    ]
    array.write_text('[{"id": "a", "prompt": "x"}]')
    assert len(problems_of(array)) == 1 and "a JSON array" in problems_of(array)[0]
    pretty = tmp_path / "one.json"
    pretty.write_text(json.dumps({"id": "a", "prompt": "x"}, indent=2))
    assert problems_of(pretty) == [
        f"{pretty}: one JSON object over several lines; a golden set is JSONL, one JSON object per line "
        "(jq -c . puts it on one line)"
    ]


# --- bad input: several problems at once ------------------------------------------------------


def test_all_problems_reported_together_in_line_order(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '{"id": "q1", "prompt": "fine"}',
        '{"id": "q1", "prompt": "dup"}',
        "",
        '{"id": "a" "prompt": "x"}',
        '{"id": true, "promt": "x", "max_tokens": 0, "category": ""}',
        "[]",
        '{"id": "m", "messages": [{"role": "bot", "content": ""}, 3]}',
    )
    assert problems_of(path) == [
        f"{path}:2: field 'id': duplicate id 'q1' (first seen on line 1)",
        f"{path}:4: invalid JSON (Expecting ',' delimiter at column 12)",
        f"{path}:5: field 'id': must be a non-empty string or an integer",
        f"{path}:5: field 'category': must be a non-empty string",
        f"{path}:5: field 'max_tokens': must be a positive integer",
        f"{path}:5: field 'promt': unknown field (did you mean 'prompt'?)",
        f"{path}:6: expected a JSON object, got array",
        f"{path}:7: field 'messages[0].role': must be one of 'system', 'user', 'assistant'",
        f"{path}:7: field 'messages[0].content': must be a non-empty string",
        f"{path}:7: field 'messages[1]': must be an object with 'role' and 'content'",
    ]


def test_problem_list_is_capped_in_the_message(tmp_path: Path) -> None:
    count = MAX_LISTED_PROBLEMS + 10
    path = write(tmp_path, *(f'{{"id": "q{i}", "prompt": ""}}' for i in range(count)))
    with pytest.raises(WorkloadError) as info:
        load_workload(path)
    lines = str(info.value).splitlines()
    assert len(lines) == MAX_LISTED_PROBLEMS + 1
    assert lines[0] == f"{path}:1: field 'prompt': must be a non-empty string"
    assert lines[-1] == "... and 10 more problems"
    assert len(info.value.problems) == count  # the attribute keeps them all


def test_cap_message_singular(tmp_path: Path) -> None:
    path = write(tmp_path, *(f'{{"id": "q{i}", "prompt": ""}}' for i in range(MAX_LISTED_PROBLEMS + 1)))
    with pytest.raises(WorkloadError) as info:
        load_workload(path)
    assert str(info.value).splitlines()[-1] == "... and 1 more problem"


# --- bad input: the file itself ---------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    assert problems_of(path) == [f"{path}: file not found"]


def test_directory(tmp_path: Path) -> None:
    assert problems_of(tmp_path) == [f"{tmp_path}: is a directory, not a file"]


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # chmod does not stop root (tests may run as root), so simulate the failing read instead.
    path = write(tmp_path, '{"id": "a", "prompt": "x"}')

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    assert problems_of(path) == [f"{path}: cannot read file (Permission denied)"]


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\xef\xbb\xbf"], ids=["empty", "blank", "bom-only"])
def test_empty_file(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_bytes(content)
    assert problems_of(path) == [f"{path}: empty file (no prompts)"]


def test_workload_error_is_a_value_error_and_pickles(tmp_path: Path) -> None:
    error = WorkloadError(["a:1: x", "a:2: y"])
    assert isinstance(error, ValueError)
    copy = pickle.loads(pickle.dumps(error))
    assert copy.problems == error.problems
    assert str(copy) == str(error) == "a:1: x\na:2: y"
