"""Corpus statistics: exact values on hand-made text, and the register contrast on generated text."""

from __future__ import annotations

import math

import pytest

from corpus import Document, corpus_stats, format_stats, generate_documents
from corpus.stats import copied_fraction, split_words


def test_split_words() -> None:
    assert split_words("The Supplier's fee is £250,000 (see Clause 12.3(b)); re-enacted.") == [
        "the",
        "supplier's",
        "fee",
        "is",
        "250,000",
        "see",
        "clause",
        "12.3",
        "b",
        "re-enacted",
    ]


def test_copied_fraction() -> None:
    prompt = (
        'Clause 4 read "The Supplier shall deliver the Goods within thirty (30) days." It now reads "The '
        "Supplier shall"
    )
    # Each of the first four words follows three words that, with it, occur in the prompt; then the edit.
    assert copied_fraction(prompt, 'deliver the Goods within sixty (60) days."') == pytest.approx(4 / 7)
    assert copied_fraction(prompt, "deliver the Goods within thirty (30) days.") == 1.0
    # The same words, not in the prompt's order: nothing to copy.
    assert copied_fraction(prompt, "Goods the deliver within days thirty") == 0.0
    # The prompt's last n - 1 words are the context of the first words: a text that does not continue it
    # is predicted only from its n-th word on ("the supplier shall deliver" is in the prompt).
    assert copied_fraction("The Supplier shall deliver the Goods.", "The Supplier shall deliver") == 0.25
    assert copied_fraction(prompt, "deliver the Goods now", n=2) == 0.75
    assert copied_fraction(prompt, "") == 0.0


def test_exact_figures() -> None:
    docs = [
        Document("general", "general/narration", "A b a b."),
        Document("general", "general/dialogue", "c d"),
        Document("legal", "legal/definitions", "x x x x"),
    ]
    stats = corpus_stats(docs)
    assert (stats["documents"], stats["words"], stats["vocabulary"]) == (3, 10, 5)
    assert stats["characters"] == sum(len(d.text) for d in docs)
    assert stats["categories"] == {"general/dialogue": 1, "general/narration": 1, "legal/definitions": 1}
    g, lg = stats["registers"]["general"], stats["registers"]["legal"]
    assert (g["documents"], g["words"], g["vocabulary"]) == (2, 6, 4)
    # p(a) = p(b) = 1/3, p(c) = p(d) = 1/6.
    assert g["unigram_entropy_bits"] == pytest.approx(
        -2 * (1 / 3) * math.log2(1 / 3) - 2 * (1 / 6) * math.log2(1 / 6)
    )
    # Pairs (a,b) (b,a) (a,b) (c,d): every word has a single successor, so the next word is certain.
    assert g["bigram_conditional_entropy_bits"] == pytest.approx(0.0)
    assert lg["unigram_entropy_bits"] == pytest.approx(0.0)
    assert "legal" in format_stats(stats)


def test_pairs_do_not_cross_documents() -> None:
    stats = corpus_stats([Document("legal", "legal/x", "a b"), Document("legal", "legal/x", "a c")])
    # After "a" comes "b" or "c" with equal odds: one bit.
    assert stats["registers"]["legal"]["bigram_conditional_entropy_bits"] == pytest.approx(1.0)


def test_legal_register_is_more_predictable_than_general() -> None:
    # Samples of similar size in words (legal documents are about three times longer), since the
    # plug-in estimates grow with sample size.
    docs = generate_documents("general", 3000, seed=0) + generate_documents("legal", 1000, seed=0)
    stats = corpus_stats(docs)
    g, lg = stats["registers"]["general"], stats["registers"]["legal"]
    assert 0.7 < lg["words"] / g["words"] < 1.4
    assert lg["unigram_entropy_bits"] < g["unigram_entropy_bits"] - 0.5
    assert lg["bigram_conditional_entropy_bits"] < g["bigram_conditional_entropy_bits"] - 0.3
    assert lg["vocabulary"] < g["vocabulary"]
    assert 40 < g["words_per_document"] < 80 and 120 < lg["words_per_document"] < 220
