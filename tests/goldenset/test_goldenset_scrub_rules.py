"""--scrub counts and replacements; categories from fields and from rules files."""

from __future__ import annotations

from pathlib import Path

import pytest

from specmeter.goldenset import RulesError, Scrubber, categorize, load_rules
from specmeter.goldenset.categorize import field_value
from specmeter.goldenset.formats import LogPrompt


def test_scrub_replaces_and_counts() -> None:
    s = Scrubber()
    text = (
        "Mail ken.sato@example.co.jp or j.doe+x@mail.example.com, call +1 (415) 555-0100 or 03-1234-5678; "
        "card 4111111111111111, order 12345, due 2026-11-30, list 1 2 3 4 5 6 7 8 9, "
        "tel ０３-１２３４-５６７８."
    )
    out = s(text)
    assert out == (
        "Mail [EMAIL] or [EMAIL], call [PHONE] or [PHONE]; "
        "card [NUMBER], order 12345, due 2026-11-30, list 1 2 3 4 5 6 7 8 9, "
        "tel [PHONE]."
    )
    assert dict(s.counts) == {"email": 2, "phone": 3, "digits": 1}
    assert s("nothing here") == "nothing here"


def test_scrub_digit_length_is_configurable() -> None:
    s = Scrubber(min_digits=5)
    assert s("order 12345 and 1234") == "order [NUMBER] and 1234"


def _prompt(record: dict[str, object], text: str = "x", fmt: str = "openai") -> LogPrompt:
    return LogPrompt("f.jsonl", 1, fmt, text, None, (), record)  # type: ignore[arg-type]


def test_category_field_dotted_and_inside_request_metadata() -> None:
    assert field_value({"route": "legal"}, "route") == "legal"
    assert field_value({"meta": {"team": {"id": 7}}}, "meta.team.id") == "7"
    assert field_value({"request": {"metadata": {"domain": "code"}}}, "domain") == "code"
    assert field_value({"body": {"metadata": {"domain": " hr "}}}, "domain") == "hr"
    assert field_value({"route": ""}, "route") is None
    assert field_value({"route": ["a"]}, "route") is None
    assert categorize(_prompt({"route": "legal"}), category_field="route") == "legal"
    assert categorize(_prompt({}), category_field="route") == "uncategorised"
    # Formats with their own category field use it without being told.
    assert categorize(_prompt({"category": "math"}, fmt="specbench")) == "math"
    assert categorize(_prompt({"category": "chat", "domain": "legal"}, fmt="specmeter")) == "chat"


def test_rules_first_match_wins_with_default(tmp_path: Path) -> None:
    path = tmp_path / "rules.yml"
    path.write_text(
        "rules:\n"
        "  - category: legal\n"
        "    regex: '\\b(indemnif\\w*|force majeure)\\b'\n"
        "  - category: code\n"
        "    keywords: ['def ', 'SELECT ']\n"
        "  - category: 契約\n"
        "    keywords: ['契約']\n"
        "default: general\n",
        encoding="utf-8",
    )
    rules = load_rules(path)
    assert rules.category("The Supplier shall INDEMNIFY the Customer") == "legal"
    assert rules.category("select * from t where def = 1") == "code"  # keywords are case-insensitive
    assert rules.category("この契約書を確認して") == "契約"
    assert rules.category("tell me a joke") == "general"
    # A field wins over rules when present; rules decide otherwise.
    assert categorize(_prompt({"route": "hr"}, "force majeure"), category_field="route", rules=rules) == "hr"
    assert categorize(_prompt({}, "force majeure"), category_field="route", rules=rules) == "legal"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rules: []\n", "expected a mapping with a non-empty list 'rules'"),
        ("rules:\n  - regex: x\n", "rules[0]: 'category' must be a non-empty string"),
        ("rules:\n  - category: a\n", "rules[0]: give 'regex' or 'keywords'"),
        (
            "rules:\n  - category: a\n    regex: '('\n",
            "rules[0]: invalid regex (missing ), unterminated subpattern",
        ),
        ("rules:\n  - category: a\n    keyword: [x]\n", "rules[0]: unknown key 'keyword'"),
        (
            "rules:\n  - category: a\n    keywords: x\n",
            "rules[0]: 'keywords' must be a list of non-empty strings",
        ),
        (
            "rules:\n  - category: a\n    regex: x\nfallback: b\n",
            "unknown key 'fallback' (allowed: rules, default)",
        ),
        ("rules: [\n", "not valid YAML"),
    ],
)
def test_bad_rules_files_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "rules.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RulesError) as info:
        load_rules(path)
    assert str(info.value).startswith(str(path)) and message in str(info.value)


def test_with_scrub_prompts_differing_only_in_pii_are_duplicates(tmp_path: Path) -> None:
    import json

    from specmeter.goldenset import GoldenConfig, build_golden

    log = tmp_path / "r.jsonl"
    base = "Please summarise the termination clause of our agreement."
    rows = [{"prompt": f"{base} Reply to user{i}@example.com, tel 03-1234-{5670 + i}."} for i in range(5)]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    plain = build_golden(GoldenConfig([log], tmp_path / "a.jsonl", near_threshold=None))
    scrubbed = build_golden(GoldenConfig([log], tmp_path / "b.jsonl", scrub=True, near_threshold=None))
    assert plain.written == 5  # every address differs: five distinct prompts (exact dedupe alone)
    assert scrubbed.written == 1 and scrubbed.exact_duplicates == 4
    assert scrubbed.scrubbed == {"email": 1, "phone": 1, "digits": 0}  # counted on what was written
