"""``--scrub``: replace e-mail addresses, phone numbers and long digit runs, and count what was replaced.

Applied to what is written (prompt, every message, every follow-up), in this order so that a phone number
is not half-eaten as a digit run first:

- e-mail addresses (``name@domain.tld``) → ``[EMAIL]``;
- phone numbers: an optional ``+country`` code, then groups of digits separated by spaces, dots, dashes
  or brackets, 9 to 15 digits in all (E.164's maximum is 15; ``03-1234-5678``, ``+1 (415) 555-0100``),
  at least one group of 3 or more → ``[PHONE]``;
- runs of ``min_digits`` (default 8) or more digits (account, card, order numbers) → ``[NUMBER]``.

Digits are any Unicode decimal digits (full-width ``０-９`` included). Dates (``2026-11-30``: 8 digits in
groups) and short numbers stay. A regex scrubber is a safety net, not a guarantee: names and addresses
are not detected, and the counts say what was found, not what remains.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

__all__ = ["SCRUB_KINDS", "Scrubber"]

SCRUB_KINDS = ("email", "phone", "digits")

_EMAIL = re.compile(r"[\w.%+-]+@[\w-]+(?:\.[\w-]+)*\.[^\W\d_]{2,}")
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,5}\)[\s.-]?)?\d{1,5}(?:[\s.-]\d{1,5}){1,5}(?!\w)"
)
_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}")


@dataclass
class Scrubber:
    min_digits: int = 8
    counts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._digits = re.compile(rf"\d{{{self.min_digits},}}")

    def _phone(self, match: re.Match[str]) -> str:
        text = match.group(0)
        digits = sum(c.isdigit() for c in text)
        longest = max(len(g) for g in re.findall(r"\d+", text))
        # "1 2 3 4 5 6 7 8 9" is a list, not a number: a phone number has a group of 3+ digits.
        if not 9 <= digits <= 15 or longest < 3 or _DATE.fullmatch(text.strip()):
            return text
        self.counts["phone"] += 1
        return "[PHONE]"

    def __call__(self, text: str) -> str:
        text, n = _EMAIL.subn("[EMAIL]", text)
        self.counts["email"] += n
        text = _PHONE.sub(self._phone, text)
        text, n = self._digits.subn("[NUMBER]", text)
        self.counts["digits"] += n
        return text
