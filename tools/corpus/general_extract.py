"""``general/extract``: summing up or picking out the main points of a given passage.

An extract document gives a short passage of everyday text (a local news report, a story, a message or
a how-to, written by the general register's own rules for the document's people and places), then sums it
up the way real summaries of a given text mostly do: by repeating its sentences, or long parts of them,
sometimes trimmed of an opening phrase or a trailing clause, sometimes in another order; the summary ends
the document. A model asked to continue after "In short:" copies from its prompt, which an n-gram or
suffix proposer predicts for free.

The passage is bound once per document (``passage``, 20 to :data:`_PASSAGE_WORDS` words), and so are the
sentences the summary repeats (``ex_points``, one to three of them; ``ex_one``, one), so that the
document's sentences agree with each other.
"""

from __future__ import annotations

import re

from corpus import slots
from corpus.grammar import Expansion, finish

NAME = "general/extract"
#: Bindings this sub-category fills: the passage, what kind of text it is, and what the summary repeats.
BINDINGS = ("passage", "kind", "ex_points", "ex_one")

# (general sub-category the passage comes from, what the document calls it, body sentences it has)
_SOURCES = (
    ("news", ("report", "news story", "article"), (1, 3)),
    ("narration", ("story", "passage", "extract"), (1, 3)),
    ("messages", ("message", "email", "note"), (1, 3)),
    ("instructions", ("set of instructions", "how-to", "guide"), (1, 3)),
)
# The passage has this many words at most (between spaces), so that a prompt holding it stays within
# corpus.golden.MAX_QUOTE_WORDS words.
_PASSAGE_WORDS = (20, 75)
_MAX_TRIES = 50
# A leading phrase of one to four words that a summary may drop ("Later that day, ", "Once that is
# done, "), before a lower-case word; not one that names a person ("Iris Cooper, the baker who ...").
_OPENER = re.compile(r"^(?:[^,\s]+ ){0,3}[^,\s]+, (?=[a-z])")
_NAMES = frozenset(slots.FEMALE_NAMES + slots.MALE_NAMES)
# A last clause a summary may drop starts with one of these ("..., with several roads closed.").
_TAIL_WORDS = frozenset(
    ("with", "despite", "creating", "and", "but", "so", "because", "as", "while", "which", "if", "before",
     "after", "although", "unless", "until", "just", "only")
)  # fmt: skip

RULES: dict[str, list[str]] = {
    # The input: a request, then the passage itself.
    "extract_open": [
        "Sum up the following {kind} in a sentence or two. {passage}",
        "Here is a {kind} to summarise. {passage}",
        "Pick out the main points of this {kind}. {passage}",
        "What does this {kind} say? {passage}",
        "Read the {kind} below and say briefly what it is about. {passage}",
        "Summarise the {kind} that follows. {passage}",
        "Please give the gist of this {kind}. {passage}",
        "Copy out the sentences that matter in the {kind} below. {passage}",
        "[Can|Could] you tell me what this {kind} is about? {passage}",
    ],
    # The summary: it repeats the passage, whole sentences or long parts of them.
    "extract_body": [
        "In short: {ex_points}",
        "The key points: {ex_points}",
        "Summary: {ex_points}",
        "The main point is this: {ex_one}",
        "Put simply: {ex_points}",
        "To sum up the {kind}: {ex_points}",
        "What matters is this: {ex_one}",
        "The sentences that matter are these: {ex_points}",
    ],
}


def bind(exp: Expansion) -> None:
    """Bind the passage (from another general sub-category's rules) and the sentences its summary repeats.

    Called after the register's own bindings, so the passage names this document's people and places.
    """
    rng = exp.rng
    source, kinds, (low, high) = rng.choice(_SOURCES)
    exp.bind("kind", rng.choice(kinds))
    least, most = _PASSAGE_WORDS
    body_count = exp.grammar.alternatives(f"{source}_body")
    for _ in range(_MAX_TRIES):
        picks = sorted(rng.sample(range(body_count), rng.randint(low, high)))
        sentences = [finish(exp.rule(f"{source}_open"))]
        sentences += [finish(exp.rule(f"{source}_body", i)) for i in picks]
        if least <= len(" ".join(sentences).split()) <= most:
            break
    else:  # pragma: no cover - most passages of two to four sentences fit
        raise RuntimeError(f"{NAME}: no passage of {least}..{most} words in {_MAX_TRIES} tries")
    exp.bind("passage", " ".join(sentences))
    count = rng.randint(1, min(3, len(sentences)))
    chosen = sorted(rng.sample(range(len(sentences)), count))
    if count > 1 and rng.random() < 0.3:  # now and then the summary puts them in another order
        rng.shuffle(chosen)
    exp.bind("ex_points", " ".join(trim(sentences[i], exp) for i in chosen))
    exp.bind("ex_one", trim(sentences[rng.choice(chosen)], exp))


def trim(sentence: str, exp: Expansion) -> str:
    """``sentence`` as a summary repeats it: whole, or (a third of the time each) without a leading phrase
    of up to four words ("Later that day, ") or without a last clause such as ", with several roads
    closed" (after its last comma), when what remains has six words or more."""
    rng = exp.rng
    text = sentence
    opener = _OPENER.match(text)
    if opener is not None and rng.random() < 1 / 3 and not _NAMES & set(re.findall(r"\w+", opener.group())):
        rest = text[opener.end() :]
        if len(rest.split()) >= 6:
            text = rest[0].upper() + rest[1:]
    head, comma, tail = text.rpartition(", ")
    droppable = comma and text[-1] == "." and '"' not in text and tail.split()[0] in _TAIL_WORDS
    if droppable and rng.random() < 1 / 3 and len(head.split()) >= 6:
        text = head + "."
    return text
