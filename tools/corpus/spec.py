"""How a register describes itself to the document builder: its grammar, sub-categories and set-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from corpus.grammar import Expansion, Grammar


@dataclass(frozen=True)
class CategorySpec:
    """One sub-category: a document opens with rule ``opening``, continues with distinct ``body``
    alternatives and ends with rule ``closing`` when there is one; ``sentences`` (inclusive range)
    sentences in all. ``ordered`` keeps the body sentences in the order the rule lists them, as a
    contract's sub-clauses or a how-to's steps come in a fixed order.

    ``drawn`` False keeps a sub-category out of the random draw of documents that do not force one (the
    training corpus): it is generated only when asked for by name. ``added`` marks a sub-category drawn in
    the second stage of the draw (:func:`corpus.generate.build_sentences`): it was added after the first
    bundled models were trained, and takes its share of the documents by replacing some of them, which
    leaves every other document byte for byte what it was. ``numbered`` False keeps clause numbers off its
    sentences. ``quotes`` marks a sub-category whose opening sentence holds the input a continuation works
    on (a clause to revise, a passage to sum up): its golden prompts keep that sentence whole."""

    name: str
    opening: str
    body: str
    sentences: tuple[int, int]
    closing: str | None = None
    ordered: bool = False
    drawn: bool = True
    added: bool = False
    numbered: bool = True
    quotes: bool = False


class Binder(Protocol):
    """A register's per-document set-up: ``bind(expansion, category, particulars=...)``."""

    def __call__(self, exp: Expansion, category: str, *, particulars: bool = True) -> None: ...


@dataclass(frozen=True)
class RegisterSpec:
    """A register: its grammar, its sub-categories, and the per-document set-up.

    ``bind(expansion, category, particulars=...)`` fills the document's bindings (names, parties, law)
    before the first sentence; ``particulars`` False quotes legal redlines without the deal's particulars.
    ``numbering`` is the probability that a document's sentences carry clause numbers ("7.1", "7.2").
    """

    name: str
    grammar: Grammar
    categories: tuple[CategorySpec, ...]
    bind: Binder
    numbering: float = 0.0
