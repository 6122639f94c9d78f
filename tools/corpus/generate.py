"""Documents from the two registers, and the training corpus file.

Every document has its own random stream, seeded from ``(register, seed, index)`` (and the
sub-category when one is forced). Two things follow: the first ``k`` documents are the same whatever
``n`` is asked for (a 20k sample is a prefix of the 60k corpus), and a document's first sentences can
be regenerated on their own, which the golden sets' held-out check relies on to stay fast.

The sub-category of a document is drawn in two stages. The first draws uniformly among the register's
first sub-categories, on the document's own stream, as it always has. The second, on a stream of its own,
lets the sub-categories added since (``CategorySpec.added``: the ones that copy their input) replace the
document: each takes it with probability 1 / (number of drawn sub-categories), so the two stages together
draw every sub-category alike, and a document that is not replaced is byte for byte what it was before the
added sub-categories existed.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Literal, TypeAlias, cast

from corpus import general, legal
from corpus.grammar import finish
from corpus.spec import CategorySpec, RegisterSpec
from corpus.stats import CorpusStats, StatsAccumulator

Register: TypeAlias = Literal["general", "legal"]
REGISTER_NAMES: tuple[Register, ...] = ("general", "legal")

#: The training seed scripts use unless told otherwise.
DEFAULT_SEED = 0
#: Reserved for the bundled golden sets; :func:`write_corpus` refuses it so no training corpus
#: written through this module can contain the golden documents.
GOLDEN_SEED = 7_919_031

_REGISTERS: dict[str, RegisterSpec] = {"general": general.REGISTER, "legal": legal.REGISTER}


@dataclass(frozen=True)
class Document:
    """One generated document: its register, sub-category (``"legal/indemnity"``) and text."""

    register: Register
    category: str
    text: str

    def as_json(self) -> dict[str, str]:
        """The corpus line: ``{"text", "register", "category"}``."""
        return {"text": self.text, "register": self.register, "category": self.category}


def categories(register: Register) -> tuple[str, ...]:
    """The sub-categories of ``register``, in their fixed order (also those never drawn at random:
    :func:`training_categories`)."""
    return tuple(spec.name for spec in _spec(register).categories)


def _spec(register: str) -> RegisterSpec:
    try:
        return _REGISTERS[register]
    except KeyError:
        raise ValueError(f"unknown register {register!r} (choose from {', '.join(REGISTER_NAMES)})") from None


def training_categories(register: Register) -> tuple[str, ...]:
    """The sub-categories a document is drawn from when none is forced: those of the training corpus.

    Today every sub-category (:func:`categories`); ``CategorySpec(drawn=False)`` would keep one out.
    """
    return tuple(c.name for c in _drawn(_spec(register)))


def added_categories(register: Register) -> tuple[str, ...]:
    """The drawn sub-categories that enter the draw in its second stage, replacing documents (module
    docs): ``legal/redline``, ``legal/review`` and ``general/extract``, the ones whose text copies its
    input."""
    return tuple(c.name for c in _stages(_spec(register))[1])


def category_spec(register: Register, name: str) -> CategorySpec:
    """The description of sub-category ``name`` of ``register`` (``ValueError`` naming the choices)."""
    return _category(_spec(register), name)


def category_register(name: str) -> Register:
    """The register of sub-category ``name``: "legal/redline" -> "legal" (``ValueError`` naming the choices
    when either is unknown)."""
    register = cast(Register, name.split("/", 1)[0])
    category_spec(register, name)
    return register


def _drawn(spec: RegisterSpec) -> tuple[CategorySpec, ...]:
    return tuple(c for c in spec.categories if c.drawn)


def _stages(spec: RegisterSpec) -> tuple[tuple[CategorySpec, ...], tuple[CategorySpec, ...]]:
    """The drawn sub-categories of the first stage of the draw and of the second (``added``)."""
    drawn = _drawn(spec)
    return tuple(c for c in drawn if not c.added), tuple(c for c in drawn if c.added)


def _category(spec: RegisterSpec, name: str) -> CategorySpec:
    for category in spec.categories:
        if category.name == name:
            return category
    choices = ", ".join(c.name for c in spec.categories)
    raise ValueError(f"unknown {spec.name} sub-category {name!r} (choose from {choices})")


def _rng(register: str, seed: int, index: int, category: str | None) -> random.Random:
    # A string seed is hashed (SHA-512) by random.Random, so nearby seeds and indices give unrelated
    # streams, and the result does not depend on PYTHONHASHSEED.
    key = f"specmeter.corpus/{register}/{seed}/{index}" + (f"/{category}" if category else "")
    return random.Random(key)


def _added_rng(register: str, seed: int, index: int) -> random.Random:
    # The second stage of the draw: its own stream, so the first stage's (the document's) is untouched.
    return random.Random(f"specmeter.corpus/{register}/{seed}/{index}#added")


def build_sentences(
    register: Register,
    seed: int,
    index: int,
    *,
    category: str | None = None,
    max_words: int | None = None,
    first_stage: bool = False,
    particulars: bool = True,
) -> tuple[str, list[str]]:
    """Document ``index`` of the stream ``(register, seed[, category])``: its category and sentences.

    ``max_words`` stops after the first sentence that brings the text to that many words (counted
    between spaces); the sentences produced are those the full document starts with. ``first_stage``
    skips the second stage of the draw (module docs): the document as it was before the added
    sub-categories existed, which is the same document unless one of them replaced it. ``particulars``
    False quotes a redline's clause without the deal's particulars (:mod:`corpus.legal_redline`).
    """
    spec = _spec(register)
    rng = _rng(register, seed, index, category)
    if category:
        cat = _category(spec, category)
    else:
        first, added = _stages(spec)
        cat = first[rng.randrange(len(first))]
        if added and not first_stage:
            pick = _added_rng(register, seed, index).randrange(len(first) + len(added))
            if pick >= len(first):
                # A replaced document goes on with its own stream from here, as any other does.
                cat = added[pick - len(first)]
    exp = spec.grammar.start(rng)
    spec.bind(exp, cat.name, particulars=particulars)
    # Drawn for every document, so a sub-category without numbers consumes the random stream alike.
    numbered = rng.random() < spec.numbering and cat.numbered
    clause = exp.bindings.get("cl", "1")
    body_count = spec.grammar.alternatives(cat.body)
    length = min(rng.randint(*cat.sentences), body_count + 1)
    body_picks = rng.sample(range(body_count), length - 1)
    if cat.ordered:
        body_picks.sort()

    sentences: list[str] = []
    raw: list[str] = []
    words = 0
    for position in range(length):
        if max_words is not None and words >= max_words:
            break
        is_last = position == length - 1 and position > 0
        for _attempt in range(4):
            if position == 0:
                text = exp.rule(cat.opening)
            elif is_last and cat.closing is not None:
                text = exp.rule(cat.closing)
            else:
                text = exp.rule(cat.body, body_picks[position - 1])
            text = finish(text)
            # A template that draws a random sub-rule ("{definition}") can repeat an earlier sentence.
            if text not in raw:
                break
        raw.append(text)
        if numbered:
            text = f"{clause}.{position + 1} {text}"
        sentences.append(text)
        words += text.count(" ") + 1
    return cat.name, sentences


def iter_documents(
    register: Register, seed: int, *, category: str | None = None, start: int = 0, particulars: bool = True
) -> Iterator[Document]:
    """An endless stream of documents (from index ``start``); see :func:`generate_documents`."""
    index = start
    while True:
        name, sentences = build_sentences(register, seed, index, category=category, particulars=particulars)
        yield Document(register, name, " ".join(sentences))
        index += 1


def generate_documents(
    register: Register, n: int, seed: int, *, category: str | None = None
) -> list[Document]:
    """``n`` documents of ``register``: same ``seed`` gives the same documents, a different one others.

    Sub-categories are drawn uniformly per document (from :func:`training_categories`, in two stages:
    module docs) unless ``category`` forces one. The first ``k`` documents do not depend on ``n``.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return list(islice(iter_documents(register, seed, category=category), n))


def _interleave(n_general: int, n_legal: int) -> Iterator[Register]:
    """Registers in a proportional, deterministic interleaving (a streaming trainer sees a mix)."""
    total = n_general + n_legal
    emitted_general = 0
    for i in range(total):
        # Emit general while it is behind its share of the first i + 1 lines.
        if emitted_general < n_general and emitted_general * total <= i * n_general:
            emitted_general += 1
            yield "general"
        else:
            yield "legal"


def write_corpus(
    path: str | os.PathLike[str],
    n_general: int,
    n_legal: int,
    seed: int = DEFAULT_SEED,
    *,
    particulars: bool = True,
    extra: tuple[str, int] | None = None,
) -> CorpusStats:
    """Write a training corpus as JSONL (``{"text", "register", "category"}`` per line); return its stats.

    The general and legal documents are those of :func:`generate_documents` with this ``seed``, in
    order within each register, interleaved in proportion. The golden sets' seed is refused.
    ``particulars`` False quotes redlines' clauses without the deal's particulars
    (:mod:`corpus.legal_redline`).
    ``extra`` ``(category, n)`` adds ``n`` documents of that sub-category, its own forced stream (so none
    is one of the drawn documents), spread evenly among the others: a corpus that weights a task up.
    """
    if seed == GOLDEN_SEED:
        raise ValueError(f"seed {GOLDEN_SEED} is reserved for the golden sets; choose another")
    if n_general < 0 or n_legal < 0:
        raise ValueError("document counts must be >= 0")
    extra_category, n_extra = extra if extra is not None else ("", 0)
    if n_extra < 0:
        raise ValueError("extra document count must be >= 0")
    streams = {name: iter_documents(name, seed, particulars=particulars) for name in REGISTER_NAMES}
    extras: Iterator[Document] = iter(())
    if n_extra:
        register = category_register(extra_category)
        extras = iter_documents(register, seed, category=extra_category, particulars=particulars)
    accumulator = StatsAccumulator()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="\n") as handle:
        for source in _spread(_interleave(n_general, n_legal), n_general + n_legal, n_extra):
            document = next(extras) if source is None else next(streams[source])
            accumulator.add(document.register, document.category, document.text)
            handle.write(json.dumps(document.as_json(), ensure_ascii=False) + "\n")
    return accumulator.result()


def _spread(registers: Iterator[Register], n: int, n_extra: int) -> Iterator[Register | None]:
    """``registers`` (``n`` of them) with ``n_extra`` Nones spread evenly among them (None: an extra
    document), in the proportional way :func:`_interleave` mixes the registers."""
    for source in _interleave(n, n_extra):
        yield next(registers) if source == "general" else None
