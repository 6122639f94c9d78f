"""Size, vocabulary and word-level entropy of a generated corpus, overall and per register.

Words are lower-cased runs of letters and digits, joined across an inner apostrophe, hyphen, point or
comma ("party's", "re-enacted", "12.3", "250,000"); punctuation is not a word. Entropies are
maximum-likelihood estimates in bits per word:

* unigram entropy  H(W)        = -sum_w p(w) log2 p(w);
* bigram conditional entropy H(W_i | W_i-1) = -sum_{a,b} p(a, b) log2 p(b | a), over adjacent word
  pairs inside a document (pairs never straddle two documents).

The second is the one that matters for speculative decoding: it is how uncertain the next word is
given the previous one, and a formulaic register scores low on it even when its vocabulary is not
small. Both are plug-in estimates and grow slowly with corpus size, so compare registers measured on
samples of similar size.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from itertools import pairwise
from typing import Protocol, TypedDict

_WORD = re.compile(r"[a-z0-9]+(?:['.,-][a-z0-9]+)*")


class RegisterStats(TypedDict):
    """Figures for one register."""

    documents: int
    characters: int
    words: int
    vocabulary: int
    words_per_document: float
    unigram_entropy_bits: float
    bigram_conditional_entropy_bits: float


class CorpusStats(TypedDict):
    """Figures for a whole corpus, with a breakdown per register and a count per sub-category."""

    documents: int
    characters: int
    words: int
    vocabulary: int
    registers: dict[str, RegisterStats]
    categories: dict[str, int]


class _DocumentLike(Protocol):
    @property
    def register(self) -> str: ...

    @property
    def category(self) -> str: ...

    @property
    def text(self) -> str: ...


def split_words(text: str) -> list[str]:
    """The words of ``text`` as :mod:`stats` counts them (lower-cased)."""
    return _WORD.findall(text.lower())


def copied_fraction(prompt: str, continuation: str, n: int = 4) -> float:
    """The share of ``continuation``'s words (:func:`split_words`) that a proposer copying from ``prompt``
    (n-gram lookup, suffix decoding) could predict: those whose ``n``-gram, the word and the ``n - 1`` words
    before it (in ``prompt`` followed by ``continuation``), also occurs in ``prompt``. 0.0 when
    ``continuation`` has no words."""
    words = split_words(continuation)
    if not words:
        return 0.0
    known = split_words(prompt)
    spans = {tuple(known[i : i + n]) for i in range(len(known) - n + 1)}
    context = known[len(known) - (n - 1) :] if n > 1 else []
    sequence = context + words
    predicted = 0
    for j in range(len(words)):
        end = len(context) + j + 1
        if end >= n and tuple(sequence[end - n : end]) in spans:
            predicted += 1
    return predicted / len(words)


def _entropy(counts: Iterable[int], total: int) -> float:
    if total == 0:
        return 0.0
    return -sum(c / total * math.log2(c / total) for c in counts)


class _RegisterCounts:
    __slots__ = ("bigrams", "characters", "documents", "ids", "unigrams", "words")

    def __init__(self) -> None:
        self.documents = 0
        self.characters = 0
        self.words = 0
        self.ids: dict[str, int] = {}
        self.unigrams: Counter[int] = Counter()
        # Pairs packed into one int (a << 32 | b): far lighter than tuples over millions of words.
        self.bigrams: Counter[int] = Counter()

    def add(self, text: str) -> None:
        ids = self.ids
        tokens = [ids.setdefault(word, len(ids)) for word in split_words(text)]
        self.documents += 1
        self.characters += len(text)
        self.words += len(tokens)
        self.unigrams.update(tokens)
        self.bigrams.update((a << 32) | b for a, b in pairwise(tokens))

    def result(self) -> RegisterStats:
        pair_total = sum(self.bigrams.values())
        # Count of each word as the *first* of a pair: the conditioning distribution of H(W_i | W_i-1).
        first: Counter[int] = Counter()
        for pair, count in self.bigrams.items():
            first[pair >> 32] += count
        conditional = 0.0
        if pair_total:
            conditional = -sum(
                count / pair_total * math.log2(count / first[pair >> 32])
                for pair, count in self.bigrams.items()
            )
        return RegisterStats(
            documents=self.documents,
            characters=self.characters,
            words=self.words,
            vocabulary=len(self.ids),
            words_per_document=self.words / self.documents if self.documents else 0.0,
            unigram_entropy_bits=_entropy(self.unigrams.values(), self.words),
            bigram_conditional_entropy_bits=conditional,
        )


class StatsAccumulator:
    """Collects :class:`CorpusStats` one document at a time (so a corpus can be streamed to disk)."""

    def __init__(self) -> None:
        self._registers: dict[str, _RegisterCounts] = {}
        self._categories: Counter[str] = Counter()

    def add(self, register: str, category: str, text: str) -> None:
        self._registers.setdefault(register, _RegisterCounts()).add(text)
        self._categories[category] += 1

    def result(self) -> CorpusStats:
        vocabulary: set[str] = set()
        for counts in self._registers.values():
            vocabulary.update(counts.ids)
        per_register = {name: counts.result() for name, counts in sorted(self._registers.items())}
        return CorpusStats(
            documents=sum(r["documents"] for r in per_register.values()),
            characters=sum(r["characters"] for r in per_register.values()),
            words=sum(r["words"] for r in per_register.values()),
            vocabulary=len(vocabulary),
            registers=per_register,
            categories=dict(sorted(self._categories.items())),
        )


def corpus_stats(docs: Iterable[_DocumentLike]) -> CorpusStats:
    """Size (documents, characters, words), vocabulary and per-register entropies of ``docs``."""
    accumulator = StatsAccumulator()
    for doc in docs:
        accumulator.add(doc.register, doc.category, doc.text)
    return accumulator.result()


def format_stats(stats: CorpusStats) -> str:
    """A plain-text table of ``stats`` for the command line."""
    lines = [
        f"documents {stats['documents']:,}  words {stats['words']:,}  characters {stats['characters']:,}  "
        f"vocabulary {stats['vocabulary']:,}",
        f"{'register':<10}{'docs':>10}{'words':>13}{'words/doc':>11}{'vocab':>9}"
        f"{'H1 bits':>9}{'H2|1 bits':>11}",
    ]
    for name, r in stats["registers"].items():
        lines.append(
            f"{name:<10}{r['documents']:>10,}{r['words']:>13,}{r['words_per_document']:>11.1f}"
            f"{r['vocabulary']:>9,}{r['unigram_entropy_bits']:>9.3f}{r['bigram_conditional_entropy_bits']:>11.3f}"
        )
    lines.append("sub-categories: " + ", ".join(f"{k} {v:,}" for k, v in stats["categories"].items()))
    return "\n".join(lines)
