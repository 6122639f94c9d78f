"""The bundled golden sets: held-out prompts in specmeter's JSONL format, one file per register.

Each prompt is the beginning of a generated document, for a model to continue: the first sentence plus
2 to 8 words of what follows, cut at a word boundary and kept to 12..40 words (a first sentence of 40
words or more is itself cut, after 24 to 40 words). A sub-category whose opening holds the text to work
on (``legal/redline``: the clause as it reads, then the first words of it as amended; ``legal/review``:
a clause in two drafts, then the first words of a review that quotes it; ``general/extract``: a passage,
then the first words of its summary) keeps its first sentence whole: 12..:data:`MAX_QUOTE_WORDS` words.
What follows such a prompt is mostly a copy of it. Prompts are balanced over the sub-categories and listed
round-robin, in the order of :func:`~corpus.generate.categories`, so any leading slice of a file stays
balanced too; a sub-category added later comes last in each round, so the other sub-categories keep their
prompts.

Held out, for real:

1. They come from :data:`~corpus.generate.GOLDEN_SEED`, which
   :func:`~corpus.generate.write_corpus` refuses, in per-sub-category streams
   that the training corpus never draws from.
2. Different seeds still share templates, and a formulaic opening ("In this Agreement, unless the
   context otherwise requires, ...") can recur verbatim. So a candidate whose prompt is a prefix of any
   of the first :data:`HOLDOUT_SAMPLE` training documents of its register (default training seed) is
   skipped, as is a duplicate prompt. A document that a sub-category added later replaced (the second
   stage of the draw, :mod:`corpus.generate`) is checked as well as the one that replaced it, so the
   prompts are held out from the corpus before those sub-categories existed too, and adding one leaves
   every earlier prompt as it was. :func:`held_out_violations` re-checks a finished set.

The files are a pure function of the arguments: regenerating them reproduces them byte for byte.
"""

from __future__ import annotations

import bisect
import json
import os
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from corpus.generate import (
    DEFAULT_SEED,
    GOLDEN_SEED,
    REGISTER_NAMES,
    Register,
    added_categories,
    build_sentences,
    categories,
    category_spec,
)

#: Training documents per register that golden prompts are checked against: the recommended training
#: size (60k per register), so the whole default corpus is covered, not just a sample of it.
HOLDOUT_SAMPLE = 60_000
MIN_WORDS, MAX_WORDS = 12, 40
#: The longest prompt of a quoting sub-category (its whole first sentence and 2..8 words more).
MAX_QUOTE_WORDS = 110
#: Prompts per register in the bundled files: 30 per general sub-category, 15 per legal one.
GOLDEN_SIZES: dict[str, int] = {"general": 180, "legal": 180}
# A candidate stream that keeps colliding means the grammar has too little variety left; fail loudly.
_MAX_CANDIDATES_PER_PROMPT = 50


@dataclass(frozen=True)
class GoldenPrompt:
    """One golden-set line."""

    id: str
    category: str
    prompt: str

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "category": self.category, "prompt": self.prompt}


def default_golden_dir() -> Path:
    """Where the package keeps its golden sets (``specmeter/assets/golden``)."""
    directory = files("specmeter").joinpath("assets/golden")
    if not isinstance(directory, Path):
        raise RuntimeError(f"specmeter's assets are not on the file system ({directory!s})")
    return directory


def cut_prompt(sentences: Sequence[str], rng: random.Random, *, quotes: bool = False) -> str:
    """The first sentence plus 2 to 8 words of what follows, clamped to 12..40 words.

    ``quotes``: the first sentence is kept whole however long (the input a continuation works on), and
    2 to 8 words of the next follow it.
    """
    first = len(sentences[0].split())
    words = " ".join(sentences).split()
    if quotes:
        return " ".join(words[: first + rng.randint(2, 8)])
    if first >= MAX_WORDS:
        target = rng.randint(24, MAX_WORDS)
    else:
        target = min(MAX_WORDS, max(MIN_WORDS, first + rng.randint(2, 8)))
    return " ".join(words[:target])


class TrainingPrefixes:
    """The openings of the first ``sample`` training documents of a register, searchable by prefix.

    Only the opening sentences of each document are built, up to :data:`MAX_WORDS` words or more: a
    document starts with a prompt of at most that many words exactly when its opening does. A longer
    prompt (a quoting sub-category's) is looked up by its first :data:`MAX_WORDS` words, and the few
    documents whose opening starts so are built in full and compared: the check stays exact.

    Where a sub-category added later replaced a document (the second stage of the draw), the document it
    replaced is searched too: the check covers the corpus as it was before those sub-categories as well.
    """

    def __init__(self, register: Register, sample: int = HOLDOUT_SAMPLE, seed: int = DEFAULT_SEED) -> None:
        self._register, self._seed = register, seed
        added = set(added_categories(register))
        openings: list[tuple[str, int, bool]] = []
        for i in range(sample):
            name, sentences = build_sentences(register, seed, i, max_words=MAX_WORDS)
            openings.append((" ".join(sentences), i, False))
            if name in added:
                replaced = build_sentences(register, seed, i, max_words=MAX_WORDS, first_stage=True)[1]
                openings.append((" ".join(replaced), i, True))
        openings.sort()
        self._texts = [text for text, _, _ in openings]
        self._documents = [(i, first_stage) for _, i, first_stage in openings]

    def starts_with(self, prompt: str) -> bool:
        """Whether some training document begins with ``prompt``."""
        words = prompt.split()
        if len(words) <= MAX_WORDS:
            i = bisect.bisect_left(self._texts, prompt)
            return i < len(self._texts) and self._texts[i].startswith(prompt)
        head = " ".join(words[:MAX_WORDS])
        i = bisect.bisect_left(self._texts, head)
        while i < len(self._texts) and self._texts[i].startswith(head):
            index, first_stage = self._documents[i]
            full = " ".join(build_sentences(self._register, self._seed, index, first_stage=first_stage)[1])
            if full.startswith(prompt):
                return True
            i += 1
        return False


def _cut_rng(register: str, seed: int, category: str, index: int) -> random.Random:
    return random.Random(f"specmeter.golden/{register}/{seed}/{category}/{index}")


def golden_candidate(
    register: Register, name: str, index: int, seed: int = GOLDEN_SEED, *, whole: bool = False
) -> tuple[str, list[str]]:
    """Candidate ``index`` of sub-category ``name``'s golden stream: its prompt, and the sentences of the
    document it is cut from (those the prompt needs; all of them with ``whole``, or for a sub-category
    that quotes its input). :func:`golden_prompts` takes the candidates in order, skipping some."""
    quotes = category_spec(register, name).quotes
    _, sentences = build_sentences(
        register, seed, index, category=name, max_words=None if quotes or whole else MAX_WORDS
    )
    return cut_prompt(sentences, _cut_rng(register, seed, name, index), quotes=quotes), sentences


def golden_prompts(
    register: Register,
    n: int,
    seed: int = GOLDEN_SEED,
    *,
    holdout_sample: int = HOLDOUT_SAMPLE,
    train_seed: int = DEFAULT_SEED,
) -> list[GoldenPrompt]:
    """``n`` held-out prompts of ``register``, balanced over its sub-categories (see module docs)."""
    names = categories(register)
    if n % len(names):
        raise ValueError(f"n={n} does not split evenly over the {len(names)} {register} sub-categories")
    if seed == train_seed:
        raise ValueError("the golden seed must differ from the training seed")
    training = TrainingPrefixes(register, holdout_sample, train_seed)
    per_category: dict[str, list[str]] = {}
    seen: set[str] = set()
    for name in names:
        quotes = category_spec(register, name).quotes
        longest = MAX_QUOTE_WORDS if quotes else MAX_WORDS
        chosen: list[str] = []
        index = 0
        while len(chosen) < n // len(names):
            if index >= _MAX_CANDIDATES_PER_PROMPT * (len(chosen) + 1):
                raise RuntimeError(f"{name}: too many candidates collide with training text or repeat")
            prompt, _ = golden_candidate(register, name, index, seed)
            index += 1
            size = len(prompt.split())
            if size < MIN_WORDS or size > longest or prompt in seen or training.starts_with(prompt):
                continue
            seen.add(prompt)
            chosen.append(prompt)
        per_category[name] = chosen
    prompts: list[GoldenPrompt] = []
    for k in range(n // len(names)):
        for name in names:
            prompts.append(GoldenPrompt(f"{register}-{len(prompts) + 1:04d}", name, per_category[name][k]))
    return prompts


def held_out_violations(
    prompts: Iterable[GoldenPrompt | str],
    register: Register,
    sample: int = HOLDOUT_SAMPLE,
    train_seed: int = DEFAULT_SEED,
) -> list[str]:
    """The prompts (texts) that some of the first ``sample`` training documents begin with."""
    training = TrainingPrefixes(register, sample, train_seed)
    texts = (p.prompt if isinstance(p, GoldenPrompt) else p for p in prompts)
    return [text for text in texts if training.starts_with(text)]


def write_golden_sets(
    out_dir: str | os.PathLike[str] | None = None,
    n_per_register: int | None = None,
    seed: int = GOLDEN_SEED,
    *,
    holdout_sample: int = HOLDOUT_SAMPLE,
    train_seed: int = DEFAULT_SEED,
) -> dict[str, Path]:
    """Write ``general.jsonl`` and ``legal.jsonl`` into ``out_dir`` (default: the package's own).

    ``n_per_register`` prompts in each file (default :data:`GOLDEN_SIZES`). Returns the path written per
    register.
    """
    directory = Path(out_dir) if out_dir is not None else default_golden_dir()
    directory.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for register in REGISTER_NAMES:
        n = GOLDEN_SIZES[register] if n_per_register is None else n_per_register
        prompts = golden_prompts(register, n, seed, holdout_sample=holdout_sample, train_seed=train_seed)
        path = directory / f"{register}.jsonl"
        with path.open("w", encoding="utf-8", newline="\n") as handle:
            for prompt in prompts:
                handle.write(json.dumps(prompt.as_json(), ensure_ascii=False) + "\n")
        written[register] = path
    return written
