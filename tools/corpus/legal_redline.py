"""``legal/redline``: revising a clause, the legal task whose output copies its input.

A redlining document quotes a clause of the contract as it reads now, then gives it as amended: the same
clause with one change (a period, a party's standard of effort, an added proviso or lead-in). A model asked
to continue after the first words of the amended text mostly copies the quoted clause, which is what a
model-free proposer (n-gram lookup, suffix decoding) predicts for free and a draft model must learn.

The quoted clause is a sentence of another legal sub-category's body (its own grammar, so it reads like the
rest of the register), expanded once per document when the parties and the law are bound; the amendment
is applied to that text, so the two versions differ only where the edit says.

The quoted clause begins with the deal's particulars (:func:`deal_particulars`: premises, an account, a
purchase order, a sum, and the people and companies they concern: "In respect of the premises at ..., the
Supplier shall ..."), as a real contract's clauses name them and no other document does: the amended text
restates them first, so a continuation must copy them from the prompt, from its first words on. A draft
model cannot predict them; a model-free proposer finds them in the prompt. ``particulars=False`` binds the
clause without them, as the corpus the bundled target first trained on had it (``--plain-quotes``,
docs/corpus.md); the document is then byte for byte what it was before particulars existed.

The sub-category is drawn into the training corpus in the second stage of the draw (``added=True``,
:mod:`corpus.generate`), so a target trained on it learns to copy a quoted clause as real models do; the
golden sets ask for it by name. :mod:`corpus.legal_review` quotes and compares clauses bound the same way.
"""

from __future__ import annotations

import random
import re

from corpus import slots
from corpus.grammar import Expansion, finish

NAME = "legal/redline"
#: Bindings this sub-category fills: the clause reference, the clause as it reads, and as amended.
BINDINGS = ("red_ref", "orig", "rev")

# Body rules a quoted clause comes from: every legal sub-category but definitions (which quote terms).
_SOURCES = (
    "obligations_body", "indemnity_body", "termination_body", "governing_law_body", "confidentiality_body",
    "liability_body", "payment_body", "warranties_body", "boilerplate_body",
)  # fmt: skip
# A quoted clause of this many words (space-separated) at most, so prompt and answer stay short.
_QUOTE_WORDS = (10, 60)
_MAX_TRIES = 50

# (phrase, its amended form): standards of effort and of timing a negotiation moves.
_SWAPS = (
    ("use all reasonable endeavours", "use its best endeavours"),
    ("use its reasonable endeavours", "use all reasonable endeavours"),
    ("use its best endeavours", "use all reasonable endeavours"),
    ("use commercially reasonable efforts", "use its best endeavours"),
    ("promptly", "without undue delay"),
    ("immediately", "promptly"),
    ("exclusive jurisdiction", "non-exclusive jurisdiction"),
    ("non-exclusive jurisdiction", "exclusive jurisdiction"),
    ("not to be unreasonably withheld or delayed", "not to be unreasonably withheld, conditioned or delayed"),
    ("in writing", "in writing (including by email)"),
    ("material breach", "material or persistent breach"),
)
# The particulars a quoted clause applies to, always these, in this order (see deal_particulars).
_PARTICULARS = (
    "the premises at {address}, the account of {company} managed by {person}, purchase order {order} dated "
    "{date} and the sum of {sum}"
)
_PERIOD = re.compile(r"\((\d+)\) (days|Business Days|months?)\b")

RULES: dict[str, list[str]] = {
    "redline_open": [
        'With effect from the Amendment Date, {red_ref} of {agr}, which currently reads "{orig}", shall be '
        "deleted in its entirety and replaced with the following.",
        'The parties agree that {red_ref} of {agr}, which currently reads "{orig}", is amended to read as '
        "follows.",
        'With effect from {date}, {red_ref}, which reads "{orig}", is deleted and replaced with the text set '
        "out below.",
        '{red_ref} of {agr} currently reads "{orig}", and the parties have agreed to amend it as follows.',
        'The text of {red_ref} of {agr}, namely "{orig}", shall be deleted and the following substituted.',
        'In {agr}, {red_ref}, which currently reads "{orig}", is amended so that it reads as follows.',
        'Pursuant to {cref}, {red_ref} of {agr}, which currently reads "{orig}", is varied to read as '
        "follows.",
        'As agreed between the parties, {red_ref}, which currently reads "{orig}", shall be amended to read '
        "in full as follows.",
        'By this Amendment, {red_ref} of {agr}, which presently reads "{orig}", is deleted and replaced in '
        "its entirety by the following.",
        'The parties wish to amend {red_ref} of {agr}, which at present reads "{orig}", so that it reads as '
        "set out below.",
    ],
    "redline_body": [
        '"{rev}"',
        '"{rev}"',
        'The amended {red_ref} reads: "{rev}"',
        '{red_ref} (as amended): "{rev}"',
        'New {red_ref}: "{rev}"',
    ],
}


def bind(exp: Expansion, quote_words: tuple[int, int] = _QUOTE_WORDS, *, particulars: bool = True) -> None:
    """Bind the clause (``orig``), its amended text (``rev``) and its reference (``red_ref``).

    Called after the register's own bindings, so the quoted clause names this document's parties. The
    clause has ``quote_words`` (inclusive range) words after its particulars (:func:`deal_particulars`, drawn
    last, so ``particulars=False`` leaves every earlier draw as it was). First, not last: a continuation of
    the amended text's first words then copies the particulars at once, where a bench of 48 tokens reads
    them (at the end of the clause they began 14 to 51 tokens, 33 on average, into the golden redlines'
    continuations).
    """
    rng = exp.rng
    exp.bind("red_ref", f"Clause {exp.bindings['cl']}.{rng.randint(1, 9)}")
    low, high = quote_words
    for _ in range(_MAX_TRIES):
        text = finish(exp.rule(rng.choice(_SOURCES)))
        if '"' not in text and low <= len(text.split()) <= high:
            break
    else:  # pragma: no cover - the grammar has hundreds of short clauses
        raise RuntimeError(f"{NAME}: no clause of {low}..{high} words in {_MAX_TRIES} tries")
    if particulars:
        # "The Supplier shall ..." -> "In respect of the premises at ..., the Supplier shall ..."
        text = f"In respect of {deal_particulars(exp.rng)}, {_lower_first(text)}"
    exp.bind("orig", text)
    exp.bind("rev", revise(text, exp))


_KEEP_CAPITAL = frozenset({"Clause", "Clauses", "Schedule", "Part", "Annex", "Section"})


def _lower_first(text: str) -> str:
    """The clause as it reads after a lead-in: "The Supplier" -> "the Supplier"; "Clause 4" and "IP" stay."""
    first = text.split(" ", 1)[0]
    if first in _KEEP_CAPITAL or (len(first) > 1 and first[1].isupper()):
        return text
    return text[0].lower() + text[1:]


def deal_particulars(rng: random.Random) -> str:
    """The deal's particulars: "the premises at 14 Mill Lane, Ashbrook, the account of Granite Logistics
    Limited managed by Sara Richards, purchase order PO-20417 dated 3 May 2026 and the sum of 376,441".

    The address, company, person, order number, date and sum are drawn afresh, so only the document that
    quotes them holds them; the words around them are always the same. That is deliberate: with 2 to 4 of
    8 kinds of particular in a random order, 400 steps of the target's second stage taught it the phrasing
    but not to copy (23% of its 4-grams on the golden redlines came from the prompt; it wrote a kind of
    particular of its own at the first one and invented every value after it), while a fixed phrasing
    taught a copy of the values in 100 to 200 steps (docs/methods.md).
    """
    return _PARTICULARS.format(
        address=slots.address(rng), company=slots.company(rng), person=slots.person(rng),
        order=f"PO-{rng.randrange(10_000, 100_000)}", date=slots.date(rng),
        sum=slots.figures(rng.randrange(1_000, 10_000_000)),
    )  # fmt: skip


def revise(text: str, exp: Expansion) -> str:
    """``text`` with one amendment, chosen uniformly among those that apply to it.

    A period replaced by another, a standard swapped (:data:`_SWAPS`), a proviso added at the end, or a
    lead-in ("Subject to Clause 4.2, ...") added at the start. The amended text always differs.
    """
    rng = exp.rng
    edits = ["proviso", "lead"]
    period = _PERIOD.search(text)
    if period is not None:
        edits.append("period")
    swaps = [(old, new) for old, new in _SWAPS if old in text]
    if swaps:
        edits.append("swap")
    edit = rng.choice(edits)
    if edit == "period" and period is not None:
        n, unit = int(period.group(1)), period.group(2)
        old = f"{slots.number_words(n)} ({n}) {unit}"
        for _ in range(_MAX_TRIES):
            new = slots.legal_duration(rng)
            if new != old:
                break
        revised = text.replace(old, new, 1) if old in text else text
    elif edit == "swap":
        old, new = rng.choice(swaps)
        revised = text.replace(old, new, 1)
    elif edit == "lead":
        lead = exp.rule("lead")
        revised = lead + text[0].lower() + text[1:] if not text.startswith(lead.split()[0]) else text
    else:
        revised = ""
    if revised == text or not revised:
        revised = text[:-1] + exp.rule("proviso") + text[-1]
    return finish(revised)
