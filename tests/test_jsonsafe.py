"""specmeter.jsonsafe: JSON from outside parses into a JSONDecodeError whatever it holds (issue 29)."""

from __future__ import annotations

import json

import pytest

from specmeter import jsonsafe
from specmeter.jsonsafe import MAX_DEPTH, JSONLimitError


def test_nesting_past_the_recursion_limit_is_a_decode_error_at_the_level_that_passes_the_limit() -> None:
    with pytest.raises(RecursionError):
        json.loads("[" * 100_000)  # what every reader met before: not a JSONDecodeError
    with pytest.raises(json.JSONDecodeError) as info:
        jsonsafe.loads("[" * 100_000)
    assert isinstance(info.value, JSONLimitError)
    assert info.value.msg == f"nested deeper than {MAX_DEPTH} levels"
    assert (info.value.lineno, info.value.colno) == (1, MAX_DEPTH + 1)


def test_nesting_deep_enough_to_parse_is_refused_and_the_limit_itself_is_not() -> None:
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert json.loads(deep) is not None  # python parses it: only the limit refuses it
    with pytest.raises(JSONLimitError, match="nested deeper than"):
        jsonsafe.loads(deep)
    at_limit = '{"a": ' * (MAX_DEPTH - 1) + "[1]" + "}" * (MAX_DEPTH - 1)
    assert jsonsafe.depth(jsonsafe.loads(at_limit)) == MAX_DEPTH


def test_brackets_inside_strings_do_not_count_and_the_position_skips_them() -> None:
    text = json.dumps(["[" * 500, {"code": "{{{[[["}])
    assert jsonsafe.loads(text) == json.loads(text)
    inner = "[" * 5000
    with pytest.raises(JSONLimitError) as info:
        jsonsafe.loads('{"s": "[[[\\"[[[", "x":\n ' + inner)
    assert (info.value.lineno, info.value.colno) == (2, MAX_DEPTH + 1)  # the object is level 1


def test_a_number_too_long_for_python_is_a_decode_error() -> None:
    with pytest.raises(ValueError, match="4300"):
        json.loads(
            "[1, " + "7" * 5000 + "]"
        )  # a plain ValueError: readers catching JSONDecodeError missed it
    with pytest.raises(JSONLimitError, match="more than 4300 digits") as info:
        jsonsafe.loads("[1, " + "7" * 5000 + "]")
    assert info.value.colno == 5


def test_bytes_and_raw_decode_behave_as_json_does() -> None:
    assert jsonsafe.loads(b'{"a": [1, 2]}') == {"a": [1, 2]}
    assert jsonsafe.loads('{"a": 1}'.encode("utf-16")) == {"a": 1}
    with pytest.raises(UnicodeDecodeError):
        jsonsafe.loads(b'{"a": "\xff"}')
    with pytest.raises(json.JSONDecodeError, match="Expecting"):
        jsonsafe.loads("[1, 2")
    text = '[{"a": 1}, ' + "[" * 5000
    assert jsonsafe.raw_decode(text, 1) == ({"a": 1}, 9)
    with pytest.raises(JSONLimitError) as info:
        jsonsafe.raw_decode(text, 11)
    assert info.value.pos == 11 + MAX_DEPTH


def test_depth_walks_any_depth_without_recursion() -> None:
    value: list[object] = []
    for _ in range(50_000):
        value = [value]
    assert jsonsafe.depth(value) == 50_001
    assert jsonsafe.depth(value, stop=10) == 11
    assert jsonsafe.depth(3) == 0 and jsonsafe.depth({"a": []}) == 2


@pytest.mark.parametrize(
    ("text", "spelling", "column"),
    [
        (r'{"p": "bad \ud800x"}', r"\ud800", 12),
        (r'["\ud83d\ude00", "x\udc00"]', r"\udc00", 20),  # a pair is text; the low half alone is not
        (r'["\uD83D"]', r"\uD83D", 3),
        (r'{"\udbff": 1}', r"\udbff", 3),  # keys too
        ('["\udc80"]', r"\udc80", 3),  # a raw code point (bytes decoded with surrogatepass)
    ],
)
def test_a_lone_surrogate_is_refused_where_it_is(text: str, spelling: str, column: int) -> None:
    json.loads(text)  # legal JSON
    with pytest.raises(JSONLimitError) as info:
        jsonsafe.loads(text)
    assert info.value.msg == f"{spelling} is a lone surrogate, not text" and info.value.colno == column
    assert jsonsafe.loads(text, surrogates=True) == json.loads(text)  # specmeter's own files may keep one


def test_text_in_any_language_and_escaped_backslashes_pass() -> None:
    text = json.dumps(["日本語", "😀", "\\ud800 is only text here", "عربي"], ensure_ascii=True)
    assert jsonsafe.loads(text) == ["日本語", "😀", "\\ud800 is only text here", "عربي"]
