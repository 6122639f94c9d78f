"""``legal/review``: quoting and clause review, the legal task that answers by quoting its input.

A review document sets out a clause of the contract in two drafts, the earlier text and the text as
amended (both quoted in full), then reviews the change the way a lawyer's note does: most often it quotes
the clause again as it now reads and then the words that changed beside the words they replaced (or the
part that stayed the same); now and then only the latter. It ends with a short comment. Asked "quote
Clause 7.2 and say what changed", a model answers mostly with spans of its prompt: what an n-gram or
suffix proposer predicts for free.

The clause and its amendment are bound as :mod:`corpus.legal_redline` binds them (same sources, same
edits), on this document's own stream, with shorter clauses (10 to 32 words), so that a prompt holding
both drafts stays within :data:`corpus.golden.MAX_QUOTE_WORDS` words. The spans the review quotes
(``rev_old``, ``rev_new``, ``rev_kept``) are computed from the two drafts, word by word.
"""

from __future__ import annotations

import difflib

from corpus import legal_redline
from corpus.grammar import Expansion

NAME = "legal/review"
#: Bindings this sub-category fills beside :data:`corpus.legal_redline.BINDINGS`: the changed words as
#: they read before and after (with a few words of context either side), and the longest unchanged run.
BINDINGS = ("rev_old", "rev_new", "rev_kept")

# The clause quoted in both drafts has this many words (space-separated), so the opening stays short.
_QUOTE_WORDS = (10, 32)
# Words of unchanged text quoted on either side of a change.
_CONTEXT_WORDS = (2, 4)
_TRIM = ".,;:"

RULES: dict[str, list[str]] = {
    # The input: the clause in both drafts, quoted in full.
    "review_open": [
        'In the draft of {agr} returned by {pb} on {date}, {red_ref}, which read "{orig}", now reads "{rev}"',
        '{red_ref} of the previous draft of {agr} read "{orig}"; in the current draft it reads "{rev}"',
        'In the mark-up received on {date}, {red_ref}, which read "{orig}", has been changed to read "{rev}"',
        'We have compared the two drafts of {red_ref}: the earlier draft reads "{orig}", and the later '
        'draft reads "{rev}"',
        'You asked us to quote {red_ref} as amended and to say what has changed: it read "{orig}", and '
        '{pb}\'s draft of {date} reads "{rev}"',
        'The version of {red_ref} agreed on {date} reads "{rev}", replacing the earlier text, which read '
        '"{orig}"',
        'Please review the change to {red_ref} of {agr}, which read "{orig}" and which {pb} proposes '
        'should read "{rev}"',
        'Under the proposed amendment, {red_ref}, which currently reads "{orig}", would read "{rev}"',
        'The revised draft of {agr} circulated on {date} changes {red_ref} from "{orig}" to "{rev}"',
        'Set out below are the old and new texts of {red_ref}: before the amendment it read "{orig}", '
        'and after it, "{rev}"',
    ],
    # The review: it quotes the clause again as amended ("quote Clause 7.2"), then says what changed by
    # quoting the changed words beside the words they replaced; now and then only the second.
    "review_body": [
        'As amended, {red_ref} reads in full: "{rev}" The change is that the words "{rev_old}" now read '
        '"{rev_new}".',
        'The new text of {red_ref} is therefore: "{rev}" In the earlier draft the words were "{rev_old}"; '
        'they are now "{rev_new}".',
        '{red_ref} now reads: "{rev}" What has changed is that "{rev_old}" has become "{rev_new}".',
        'Quoted in full, the amended {red_ref} reads: "{rev}" Only the words "{rev_old}" have changed, to '
        '"{rev_new}".',
        'As it now stands, {red_ref} reads: "{rev}" The rest of the clause is unchanged: the words '
        '"{rev_kept}" are the same in both drafts.',
        'In full, {red_ref} as amended reads: "{rev}" It differs from the earlier draft only in the words '
        '"{rev_new}", which replace "{rev_old}".',
        'The change is that the words "{rev_old}" now read "{rev_new}", and nothing else in {red_ref} has '
        "changed.",
        'Put side by side, "{rev_old}" has become "{rev_new}"; the words "{rev_kept}" are the same in both '
        "drafts.",
    ],
    "review_close": [
        "We recommend that {pa} [accepts|queries|rejects] this change[ before {agr} is signed].",
        "In our view the change [is acceptable|should be resisted|needs to be discussed with {pb}].",
        "No other clause of {agr} is affected by this change.",
        "Please let us know whether {pa} is content with the amended wording.",
        "The change [favours {pb}|is neutral between the parties|shifts risk to {pa}].",
    ],
}


def bind(exp: Expansion) -> None:
    """Bind the clause in two drafts (:func:`corpus.legal_redline.bind`) and the spans a review quotes."""
    legal_redline.bind(exp, _QUOTE_WORDS, particulars=False)  # a review compares clause wording
    context = exp.rng.randint(*_CONTEXT_WORDS)
    old, new, kept = changed_spans(exp.bindings["orig"], exp.bindings["rev"], context)
    exp.bind("rev_old", old)
    exp.bind("rev_new", new)
    exp.bind("rev_kept", kept)


def changed_spans(before: str, after: str, context: int) -> tuple[str, str, str]:
    """What changed from ``before`` to ``after``, word by word: the changed words of each with up to
    ``context`` unchanged words either side, and the longest run of words the two share (each stripped of
    the punctuation at its ends). Words are compared without case or end punctuation, so "detail." and
    "detail, provided that ..." differ by the added words alone."""
    a, b = before.split(), after.split()
    for keys_a, keys_b in ((_keys(a), _keys(b)), (a, b)):
        matcher = difflib.SequenceMatcher(a=keys_a, b=keys_b, autojunk=False)
        changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
        if changes:
            break
    else:
        raise ValueError("the two drafts are the same")
    i1, j1 = changes[0][1], changes[0][3]
    i2, j2 = changes[-1][2], changes[-1][4]
    lead = min(context, i1, j1)
    tail = min(context, len(a) - i2, len(b) - j2)
    old = " ".join(a[i1 - lead : i2 + tail]).strip(_TRIM)
    new = " ".join(b[j1 - lead : j2 + tail]).strip(_TRIM)
    same = matcher.find_longest_match(0, len(a), 0, len(b))
    kept = " ".join(a[same.a : same.a + same.size]).strip(_TRIM)
    return old or before.strip(_TRIM), new or after.strip(_TRIM), kept


def _keys(words: list[str]) -> list[str]:
    return [word.strip(_TRIM).lower() for word in words]
