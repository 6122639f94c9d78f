"""A small template grammar: the engine both registers' sentence templates run on.

A grammar is a mapping from rule names to alternatives; each alternative is a template string:

* ``{name}`` expands the rule, slot or document binding ``name``;
* ``[a|b|c]`` picks one of the options uniformly (an option may be empty: ``[|, however,]``);
* ``[text]`` (one option, no ``|``) includes ``text`` with probability one half;
* ``^`` capitalises the next letter (used inside quotations, where sentence-initial capitals are not
  applied automatically).

Options and optional parts nest freely, so one template line stands for many surface forms. Templates
are compiled once, when the grammar is built, and every reference is checked then, so a typo in a rule
name fails at import rather than in the middle of writing a corpus.

Rules pick their alternative uniformly; to weight an alternative, list it more than once. *Slots* are
Python functions for what templates cannot say well (numbers written in words and figures, dates,
lettered lists); they receive the :class:`Expansion` and may expand rules themselves. *Bindings* are
per-document values (the parties' names, the governing law, the protagonist) that stay fixed across the
sentences of one document, which is what makes a generated document read as one text.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias


@dataclass(frozen=True, slots=True)
class Ref:
    """``{name}``."""

    name: str


@dataclass(frozen=True, slots=True)
class Choice:
    """``[a|b|c]``."""

    options: tuple[Seq, ...]


@dataclass(frozen=True, slots=True)
class Maybe:
    """``[text]``."""

    body: Seq


Node: TypeAlias = "str | Ref | Choice | Maybe"
Seq: TypeAlias = "tuple[Node, ...]"
SlotFn: TypeAlias = "Callable[[Expansion], str]"


class GrammarError(ValueError):
    """A template does not parse, or refers to a name the grammar does not define."""


def compile_template(text: str) -> Seq:
    """Parse one template string into a sequence of nodes."""
    options, end = _parse(text, 0, nested=False)
    assert end == len(text) and len(options) == 1  # the top level has no '|' and no closing bracket
    return options[0]


def _parse(text: str, pos: int, *, nested: bool) -> tuple[list[Seq], int]:
    """Parse up to the ``]`` closing a nested group (or the end); return its ``|``-separated options."""
    options: list[Seq] = []
    current: list[Node] = []
    literal: list[str] = []

    def flush() -> None:
        if literal:
            current.append("".join(literal))
            literal.clear()

    while pos < len(text):
        char = text[pos]
        if char == "{":
            end = text.find("}", pos)
            if end < 0:
                raise GrammarError(f"unclosed '{{' at column {pos + 1} in {text!r}")
            flush()
            current.append(Ref(text[pos + 1 : end]))
            pos = end + 1
        elif char == "[":
            flush()
            inner, pos = _parse(text, pos + 1, nested=True)
            current.append(Maybe(inner[0]) if len(inner) == 1 else Choice(tuple(inner)))
        elif char == "]" and nested:
            flush()
            options.append(tuple(current))
            return options, pos + 1
        elif char == "|" and nested:
            flush()
            options.append(tuple(current))
            current = []
            pos += 1
        elif char in "]|}":
            raise GrammarError(f"stray {char!r} at column {pos + 1} in {text!r}")
        else:
            literal.append(char)
            pos += 1
    if nested:
        raise GrammarError(f"unclosed '[' in {text!r}")
    flush()
    options.append(tuple(current))
    return options, pos


def _refs(seq: Seq) -> list[str]:
    names: list[str] = []
    for node in seq:
        if isinstance(node, Ref):
            names.append(node.name)
        elif isinstance(node, Choice):
            for option in node.options:
                names.extend(_refs(option))
        elif isinstance(node, Maybe):
            names.extend(_refs(node.body))
    return names


class Grammar:
    """Compiled rules and slots, plus the names of the per-document bindings they may use."""

    def __init__(
        self,
        rules: Mapping[str, Sequence[str]],
        slots: Mapping[str, SlotFn],
        bindings: Sequence[str] = (),
    ) -> None:
        self.rules: dict[str, tuple[Seq, ...]] = {}
        for name, alternatives in rules.items():
            if isinstance(alternatives, str) or not alternatives:
                raise GrammarError(f"rule {name!r} must be a non-empty list of templates")
            try:
                self.rules[name] = tuple(compile_template(t) for t in alternatives)
            except GrammarError as error:
                raise GrammarError(f"rule {name!r}: {error}") from None
        self.slots: dict[str, SlotFn] = dict(slots)
        self.bindings: frozenset[str] = frozenset(bindings)
        overlap = (set(self.rules) & set(self.slots)) | ((set(self.rules) | set(self.slots)) & self.bindings)
        if overlap:
            raise GrammarError(f"names defined twice: {sorted(overlap)}")
        known = set(self.rules) | set(self.slots) | self.bindings
        for name, compiled in self.rules.items():
            for alternative in compiled:
                missing = [ref for ref in _refs(alternative) if ref not in known]
                if missing:
                    raise GrammarError(f"rule {name!r} refers to undefined {missing}")

    def alternatives(self, name: str) -> int:
        """How many alternatives rule ``name`` has."""
        return len(self.rules[name])

    def start(self, rng: random.Random, bindings: Mapping[str, str] | None = None) -> Expansion:
        """An expansion context for one document."""
        return Expansion(self, rng, dict(bindings or {}))


class Expansion:
    """Expands rules for one document: the grammar, its random stream and its bindings."""

    __slots__ = ("bindings", "grammar", "rng")

    def __init__(self, grammar: Grammar, rng: random.Random, bindings: dict[str, str]) -> None:
        self.grammar = grammar
        self.rng = rng
        self.bindings = bindings

    def bind(self, name: str, value: str) -> None:
        """Fix ``{name}`` to ``value`` for the rest of this document."""
        if name not in self.grammar.bindings:
            raise GrammarError(f"{name!r} is not a declared binding")
        self.bindings[name] = value

    def rule(self, name: str, index: int | None = None) -> str:
        """Expand rule or slot ``name`` (alternative ``index`` of a rule when given, else a random one)."""
        out: list[str] = []
        if index is None:
            self._ref(name, out)
        else:
            self._seq(self.grammar.rules[name][index], out)
        return "".join(out)

    def template(self, text: str) -> str:
        """Expand a template written in place (compiled on every call; for rare use)."""
        out: list[str] = []
        self._seq(compile_template(text), out)
        return "".join(out)

    def _ref(self, name: str, out: list[str]) -> None:
        bound = self.bindings.get(name)
        if bound is not None:
            out.append(bound)
            return
        alternatives = self.grammar.rules.get(name)
        if alternatives is not None:
            self._seq(alternatives[self.rng.randrange(len(alternatives))], out)
            return
        slot = self.grammar.slots.get(name)
        if slot is None:
            # A declared binding that the document's set-up did not fill.
            raise GrammarError(f"{name!r} is not bound in this document")
        out.append(slot(self))

    def _seq(self, seq: Seq, out: list[str]) -> None:
        for node in seq:
            if isinstance(node, str):
                out.append(node)
            elif isinstance(node, Ref):
                self._ref(node.name, out)
            elif isinstance(node, Choice):
                self._seq(node.options[self.rng.randrange(len(node.options))], out)
            elif self.rng.random() < 0.5:
                self._seq(node.body, out)


# --- turning an expansion into a finished sentence --------------------------------------------------

# "a" before a vowel sound becomes "an"; these are the usual exceptions either way.
_A_AN = re.compile(r"(?<![\w'])a (?=([\w]+))")
_CONSONANT_SOUND = ("uni", "use", "usu", "uti", "one", "once", "eu", "ewe", "ur")
_VOWEL_SOUND = ("hour", "honest", "honour", "heir")
_CAPITALISE = re.compile(r"\^([^\w]*)(\w)")
_SPACES = re.compile(r" {2,}")
_SPACE_BEFORE_PUNCT = re.compile(r" +([,.;:!?)])")
# A name ending in a full stop ("Holdings B.V.") at the end of a sentence.
_DOUBLE_STOP = re.compile(r"\.\.(?!\.)")


def _article(match: re.Match[str]) -> str:
    word = match.group(1).lower()
    vowel = word[0] in "aeiou"
    if word.startswith(_CONSONANT_SOUND):
        vowel = False
    elif word.startswith(_VOWEL_SOUND):
        vowel = True
    return "an " if vowel else "a "


def finish(text: str) -> str:
    """Tidy an expanded sentence: a/an, ``^`` capitals, spacing, and a capital first letter."""
    # The substring tests skip a regex pass when it cannot match: this runs once per sentence.
    if "a " in text:
        text = _A_AN.sub(_article, text)
    if "^" in text:
        text = _CAPITALISE.sub(lambda m: m.group(1) + m.group(2).upper(), text)
    if "  " in text:
        text = _SPACES.sub(" ", text)
    text = _SPACE_BEFORE_PUNCT.sub(r"\1", text).strip()
    if ".." in text:
        text = _DOUBLE_STOP.sub(".", text)
    for i, char in enumerate(text):
        if char.isalpha():
            return text[:i] + char.upper() + text[i + 1 :]
    return text
