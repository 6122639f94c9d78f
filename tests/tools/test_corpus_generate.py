"""The corpus generator: determinism, coverage of the sub-categories, text hygiene, corpus file, CLI."""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from corpus import (
    DEFAULT_SEED,
    GOLDEN_SEED,
    Document,
    Register,
    categories,
    general,
    generate_documents,
    legal,
    training_categories,
    write_corpus,
)
from corpus import generate as generate_module
from corpus.cli import main
from corpus.generate import build_sentences
from corpus.legal_redline import revise
from corpus.spec import RegisterSpec

REGISTERS: tuple[Register, ...] = ("general", "legal")
# sha256 of write_corpus(n_general=400, n_legal=400, seed=0) as the generator wrote it before legal/redline
# was added (computed with the main branch's tools/corpus at commit 56a293c).
TRAINING_PREFIX_SHA256 = "b06f3cd8a4f169d38edcb1393453262585d8b19839a91ba1528b11eae8114272"
_QUOTED = re.compile(r'"([^"]+)"')


@pytest.mark.parametrize("register", REGISTERS)
def test_same_seed_same_documents(register: Register) -> None:
    first = generate_documents(register, 60, seed=3)
    assert first == generate_documents(register, 60, seed=3)
    # The first k documents do not depend on n: a small sample is a prefix of a big corpus.
    assert generate_documents(register, 25, seed=3) == first[:25]


@pytest.mark.parametrize("register", REGISTERS)
def test_different_seeds_differ(register: Register) -> None:
    a = {d.text for d in generate_documents(register, 100, seed=1)}
    b = {d.text for d in generate_documents(register, 100, seed=2)}
    assert len(a) == 100 and len(b) == 100  # no duplicate documents either
    assert not a & b


def test_sub_categories() -> None:
    assert categories("general") == (
        "general/narration",
        "general/dialogue",
        "general/instructions",
        "general/news",
        "general/messages",
    )
    legal_names = categories("legal")
    assert len(legal_names) >= 6
    for required in ("definitions", "obligations", "indemnity", "termination", "governing_law"):
        assert f"legal/{required}" in legal_names
    assert {"legal/confidentiality", "legal/liability"} <= set(legal_names)
    for register in REGISTERS:
        seen = Counter(d.category for d in generate_documents(register, 300, seed=DEFAULT_SEED))
        assert set(seen) == set(training_categories(register)), register
    # legal/redline exists (the golden sets ask for it) but is never drawn into a training corpus.
    assert legal_names[-1] == "legal/redline"
    assert training_categories("legal") == legal_names[:-1]
    assert training_categories("general") == categories("general")
    with pytest.raises(ValueError, match="unknown register"):
        generate_documents("medical", 1, 0)  # type: ignore[arg-type]


def test_a_category_outside_the_draw_leaves_the_training_documents_unchanged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Adding legal/redline (never drawn) changed no training document: the bundled models need no retrain."""
    with_redline = generate_documents("legal", 300, seed=DEFAULT_SEED)
    drawn_only = dataclasses.replace(
        legal.REGISTER, categories=tuple(c for c in legal.REGISTER.categories if c.drawn)
    )
    monkeypatch.setitem(generate_module._REGISTERS, "legal", drawn_only)
    assert generate_documents("legal", 300, seed=DEFAULT_SEED) == with_redline


def test_training_corpus_is_the_one_the_bundled_models_were_trained_on(tmp_path: Path) -> None:
    """The first documents of the default training corpus, pinned: the bytes make models wrote (before
    legal/redline existed). A grammar change that alters them means the bundled models need retraining."""
    path = tmp_path / "corpus.jsonl"
    write_corpus(path, n_general=400, n_legal=400, seed=DEFAULT_SEED)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == TRAINING_PREFIX_SHA256


def test_redline_documents_quote_a_clause_then_amend_it() -> None:
    docs = generate_documents("legal", 200, seed=5, category="legal/redline")
    assert {d.category for d in docs} == {"legal/redline"}
    for doc in docs:
        assert not re.match(r"^\d+\.\d+ ", doc.text)  # no clause numbers on an amendment
        orig, rev = _QUOTED.findall(doc.text)
        assert orig != rev, doc.text
        # One amendment: the two versions share most of their words, in order.
        same = difflib.SequenceMatcher(a=orig.split(), b=rev.split()).find_longest_match()
        assert same.size >= min(len(orig.split()), len(rev.split())) // 2, doc.text
        assert 10 <= len(orig.split()) <= 60


@pytest.mark.parametrize("seed", range(40))
def test_revise_always_changes_the_clause(seed: int) -> None:
    from corpus.grammar import finish

    exp = legal.REGISTER.grammar.start(random.Random(seed))
    legal.REGISTER.bind(exp, "legal/termination")
    clause = finish(exp.rule("termination_body"))
    assert revise(clause, exp) != clause


def test_forced_category() -> None:
    docs = generate_documents("legal", 20, seed=0, category="legal/indemnity")
    assert {d.category for d in docs} == {"legal/indemnity"}
    assert all("indemnif" in d.text for d in docs)
    with pytest.raises(ValueError, match="unknown legal sub-category"):
        generate_documents("legal", 1, 0, category="legal/tax")


@pytest.mark.parametrize("spec", [general.REGISTER, legal.REGISTER], ids=lambda s: s.name)
def test_many_templates_per_sub_category(spec: RegisterSpec) -> None:
    for category in spec.categories:
        count = spec.grammar.alternatives(category.opening) + spec.grammar.alternatives(category.body)
        assert count >= 15, category.name


def test_partial_documents_are_prefixes() -> None:
    for register in REGISTERS:
        for index in range(30):
            name, full = build_sentences(register, 7, index)
            cut_name, opening = build_sentences(register, 7, index, max_words=30)
            assert cut_name == name and opening == full[: len(opening)]
            # It stops at the first sentence that reaches 30 words, or at the end of the document.
            assert len(" ".join(opening).split()) >= 30 or opening == full
            assert len(" ".join(opening[:-1]).split()) < 30


_LEFTOVER = re.compile(r"[\[\]{}^|]|  | [,.;:]|\.\.(?!\.)")


@pytest.mark.parametrize("register", REGISTERS)
def test_text_hygiene(register: Register) -> None:
    for doc in generate_documents(register, 400, seed=11):
        assert not _LEFTOVER.search(doc.text), doc.text
        assert doc.text == doc.text.strip()
        assert doc.text[0].isupper() or doc.text[0] in '"0123456789', doc.text
        assert doc.text[-1] in '.!?"' or doc.category == "general/messages", doc.text


def test_legal_uses_stock_contract_phrasing() -> None:
    text = "\n".join(d.text for d in generate_documents("legal", 600, seed=DEFAULT_SEED))
    for phrase in (
        "In this Agreement, unless the context otherwise requires",
        '"Confidential Information" means',
        "shall indemnify, defend and hold harmless",
        "from and against any and all losses, damages, liabilities, costs and expenses (including "
        "reasonable legal fees) arising out of or in connection with",
        "with immediate effect by giving written notice to the other party if",
        "in accordance with",
        "provided that",
        "Notwithstanding",
        "shall be governed by and construed in accordance with the law",
        "(a)",
        "subject to Clause",
    ):
        assert phrase.lower() in text.lower(), phrase
    general_text = " ".join(d.text for d in generate_documents("general", 600, seed=DEFAULT_SEED))
    assert " shall " not in general_text and "indemnif" not in general_text


def test_write_corpus(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "corpus.jsonl"
    stats = write_corpus(path, n_general=30, n_legal=20, seed=5)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 50 and all(set(row) == {"text", "register", "category"} for row in rows)
    by_register: dict[str, list[Document]] = {"general": [], "legal": []}
    for row in rows:
        by_register[row["register"]].append(Document(row["register"], row["category"], row["text"]))
    assert by_register["general"] == generate_documents("general", 30, seed=5)
    assert by_register["legal"] == generate_documents("legal", 20, seed=5)
    # Interleaved in proportion, not one register after the other.
    assert {row["register"] for row in rows[:10]} == {"general", "legal"}
    assert stats["documents"] == 50 and stats["registers"]["legal"]["documents"] == 20
    write_corpus(tmp_path / "again.jsonl", 30, 20, seed=5)
    assert (tmp_path / "again.jsonl").read_bytes() == path.read_bytes()
    with pytest.raises(ValueError, match="reserved"):
        write_corpus(tmp_path / "x.jsonl", 1, 1, seed=GOLDEN_SEED)


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.jsonl"
    assert main(["--out", str(out), "--general", "12", "--legal", "8", "--seed", "4"]) == 0
    printed = capsys.readouterr().out
    assert "general" in printed and "legal" in printed and "H2|1" in printed
    assert len(out.read_text(encoding="utf-8").splitlines()) == 20
    with pytest.raises(SystemExit):
        main([])
    with pytest.raises(SystemExit):
        main(["--out", str(out), "--seed", str(GOLDEN_SEED)])
