"""The template grammar engine and the shared slot functions of the corpus generator."""

from __future__ import annotations

import random
import re

import pytest

from corpus import slots
from corpus.grammar import (
    Choice,
    Grammar,
    GrammarError,
    Maybe,
    Ref,
    compile_template,
    finish,
)


def test_compile_template_nodes() -> None:
    assert compile_template("plain text") == ("plain text",)
    assert compile_template("a {name} b") == ("a ", Ref("name"), " b")
    assert compile_template("[x|y]") == (Choice((("x",), ("y",))),)
    assert compile_template("[opt]") == (Maybe(("opt",)),)
    assert compile_template("[a [b|c]|]") == (Choice((("a ", Choice((("b",), ("c",)))), ())),)


@pytest.mark.parametrize("bad", ["[unclosed", "stray]", "a | b", "{unclosed", "close}"])
def test_compile_template_rejects_malformed(bad: str) -> None:
    with pytest.raises(GrammarError):
        compile_template(bad)


def test_grammar_checks_references() -> None:
    with pytest.raises(GrammarError, match="undefined"):
        Grammar({"s": ["{missing}"]}, {})
    with pytest.raises(GrammarError, match="defined twice"):
        Grammar({"x": ["a"]}, {"x": lambda exp: "b"})
    with pytest.raises(GrammarError, match="non-empty list"):
        Grammar({"x": []}, {})


def test_expansion_uses_rules_slots_and_bindings() -> None:
    grammar = Grammar(
        {"s": ["{who} has [one|two] {thing}[ today]"], "thing": ["cat", "dog"]},
        {"who": lambda exp: exp.bindings["name"] + "!"},
        bindings=("name",),
    )
    seen = set()
    for seed in range(40):
        exp = grammar.start(random.Random(seed), {"name": "Ann"})
        text = exp.rule("s")
        assert re.fullmatch(r"Ann! has (one|two) (cat|dog)( today)?", text), text
        seen.add(text)
    assert len(seen) == 8  # every combination shows up: options and optional parts are all reachable
    exp = grammar.start(random.Random(0))
    with pytest.raises(GrammarError, match="not a declared binding"):
        exp.bind("other", "x")


def test_finish_tidies_a_sentence() -> None:
    assert (
        finish("a apple and a  umbrella , a hour and a pear .")
        == "An apple and a umbrella, an hour and a pear."
    )
    assert finish('"^hello," said a owl') == '"Hello," said an owl'
    assert finish("12.1 the party") == "12.1 The party"
    assert finish("made by Holdings B.V..") == "Made by Holdings B.V."
    assert finish("it shall: (a) act; and (b) a end") == "It shall: (a) act; and (b) an end"


@pytest.mark.parametrize(
    ("n", "words"),
    [
        (0, "zero"),
        (14, "fourteen"),
        (30, "thirty"),
        (45, "forty-five"),
        (120, "one hundred and twenty"),
        (1005, "one thousand and five"),
        (250_000, "two hundred and fifty thousand"),
        (2_500_000, "two million five hundred thousand"),
    ],
)
def test_number_words(n: int, words: str) -> None:
    assert slots.number_words(n) == words


def test_ordinals() -> None:
    assert [slots.ordinal_words(n) for n in (1, 2, 3, 5, 12, 20, 21)] == [
        "first",
        "second",
        "third",
        "fifth",
        "twelfth",
        "twentieth",
        "twenty-first",
    ]
    assert [slots.ordinal_figure(n) for n in (1, 2, 3, 4, 11, 12, 13, 22)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "22nd",
    ]


def test_contract_slots_have_contract_form() -> None:
    rng = random.Random(5)
    for _ in range(200):
        duration = slots.legal_duration(rng)
        match = re.fullmatch(r"([a-z -]+) \((\d+)\) (days|Business Days|months?)", duration)
        assert match, duration
        assert slots.number_words(int(match.group(2))) == match.group(1)
        assert re.fullmatch(
            r"Clause \d+(\.\d+(\([a-f]\))?)?|Clauses \d+ to \d+|paragraph \d of Schedule \d",
            slots.clause_ref(rng),
        )
        assert re.fullmatch(r"[a-z -]+ per cent \(\d+%\)", slots.percent(rng))
