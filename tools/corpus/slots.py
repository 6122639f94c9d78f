"""Slot vocabularies and slot functions shared by both registers.

People's names, towns, companies, numbers written in words, amounts, dates and durations. Vocabulary
lists are plain tuples (never sets: set order changes with hash randomisation, and the corpus must be
identical from run to run). Towns and companies are built from parts, so a few dozen words give
hundreds of distinct names and a small model cannot simply memorise them.
"""

from __future__ import annotations

import random

from corpus.grammar import Expansion

FEMALE_NAMES = (
    "Alice", "Amira", "Anna", "Beatrice", "Bella", "Carmen", "Chloe", "Clara", "Daisy", "Elena",
    "Eliza", "Emma", "Esther", "Fatima", "Freya", "Grace", "Hannah", "Harriet", "Ines", "Iris",
    "Isla", "Jasmine", "Julia", "Kate", "Laila", "Lena", "Lucy", "Maria", "Maya", "Meera",
    "Mia", "Nadia", "Naomi", "Nina", "Olivia", "Priya", "Rosa", "Ruth", "Sara", "Sofia",
    "Tessa", "Una", "Vera", "Yasmin", "Zoe", "Martha", "Agnes", "Leah", "Rachel", "Helen",
)  # fmt: skip
MALE_NAMES = (
    "Aaron", "Adam", "Ahmed", "Ben", "Carlos", "Daniel", "David", "Edward", "Felix", "Finn",
    "George", "Hamid", "Harry", "Hugo", "Ivan", "Jack", "Jacob", "James", "Jonah", "Joseph",
    "Kenji", "Leo", "Liam", "Lucas", "Marco", "Max", "Mohammed", "Nathan", "Noah", "Omar",
    "Oscar", "Owen", "Patrick", "Peter", "Rafael", "Ravi", "Sam", "Simon", "Stefan", "Theo",
    "Thomas", "Tom", "Victor", "Will", "Yusuf", "Arthur", "Frank", "Henry", "Isaac", "Walter",
)  # fmt: skip
SURNAMES = (
    "Abbott", "Alvarez", "Baker", "Barnes", "Bennett", "Bishop", "Brooks", "Campbell",
    "Carter", "Chen", "Clarke", "Cole", "Cooper", "Costa", "Davies", "Dixon", "Doyle", "Edwards",
    "Ellis", "Evans", "Fischer", "Fleming", "Foster", "Garcia", "Gill", "Gordon", "Graham", "Grant",
    "Gray", "Hall", "Harper", "Hayes", "Hughes", "Hussain", "Jensen", "Kaur", "Kelly", "Khan",
    "Kim", "Lambert", "Lee", "Lewis", "Lopez", "Marsh", "Mason", "Meyer", "Mills", "Moreno",
    "Murphy", "Nakamura", "Novak", "Okafor", "Owens", "Park", "Patel", "Pearson", "Perry",
    "Price", "Quinn", "Reid", "Reyes", "Richards", "Rossi", "Russell", "Santos", "Shaw", "Silva",
    "Singh", "Stone", "Sullivan", "Taylor", "Turner", "Walsh", "Ward", "Webb", "Wells", "Wood",
    "Wright", "Young",
)  # fmt: skip

_TOWN_HEADS = (
    "Ash", "Bright", "Elm", "Fair", "Green", "High", "Kings", "Long", "Mill", "North", "Oak",
    "Red", "Rose", "South", "Stone", "West", "Wood", "Clear", "Hazel", "Cold", "Broad", "Black",
    "White", "Silver", "Marsh", "Moor", "Pine", "Willow", "East", "Thorn",
)  # fmt: skip
_TOWN_TAILS = (
    "bridge", "brook", "bury", "field", "ford", "gate", "ham", "haven", "hill", "hurst", "mere",
    "mouth", "port", "stead", "ton", "vale", "wick", "worth", "dale", "combe", "ley", "cliffe",
)  # fmt: skip
_COMPANY_HEADS = (
    "Apex", "Beacon", "Blue Heron", "Cedar", "Copper", "Crescent", "Evergreen", "Falcon", "Granite",
    "Harbour", "Horizon", "Ironbridge", "Juniper", "Keystone", "Lighthouse", "Meridian", "Northstar",
    "Orchard", "Pinnacle", "Quarry", "Redwood", "Riverside", "Sapphire", "Summit", "Tidewater",
    "Trident", "Vanguard", "Wayfarer", "Westgate", "Zenith",
)  # fmt: skip
_COMPANY_TRADES = (
    "Logistics", "Software", "Engineering", "Foods", "Pharmaceuticals", "Consulting", "Energy",
    "Textiles", "Media", "Analytics", "Systems", "Freight", "Construction", "Healthcare",
    "Packaging", "Instruments", "Robotics", "Telecom", "Capital", "Property", "Marine", "Security",
    "Laboratories", "Retail", "Furniture", "Printing", "Minerals", "Networks", "Interiors", "Data",
)  # fmt: skip
_COMPANY_FORMS = (
    "Limited", "Limited", "Ltd", "plc", "LLP", "LLC", "GmbH", "Holdings Limited", "Group Limited",
    "Corporation", "Pty Ltd", "B.V.",
)  # fmt: skip

MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

_ONES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
)  # fmt: skip
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_ORDINALS = {
    "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
    "nine": "ninth", "twelve": "twelfth",
}  # fmt: skip


def number_words(n: int) -> str:
    """``n`` in British English words: 125 -> "one hundred and twenty-five"."""
    if n < 0:
        raise ValueError(f"number_words needs n >= 0, got {n}")
    if n < 20:
        return _ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return f"{_ONES[hundreds]} hundred" + (f" and {number_words(rest)}" if rest else "")
    for size, name in ((1_000_000_000, "billion"), (1_000_000, "million"), (1000, "thousand")):
        if n >= size:
            high, rest = divmod(n, size)
            tail = ""
            if rest:
                # "one thousand and five", but "one thousand two hundred".
                tail = (" and " if rest < 100 else " ") + number_words(rest)
            return f"{number_words(high)} {name}{tail}"
    raise AssertionError("unreachable")


def ordinal_words(n: int) -> str:
    """``n`` as an ordinal in words: 21 -> "twenty-first"."""
    words = number_words(n)
    head, sep, last = words.rpartition("-" if "-" in words.split(" ")[-1] else " ")
    if last in _ORDINALS:
        last = _ORDINALS[last]
    elif last.endswith("y"):
        last = last[:-1] + "ieth"
    else:
        last += "th"
    return head + sep + last


def ordinal_figure(n: int) -> str:
    """``n`` with its English suffix: 1st, 2nd, 3rd, 11th, 22nd."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def figures(n: int) -> str:
    """``n`` with thousands separators: 1250000 -> "1,250,000"."""
    return f"{n:,}"


def town(rng: random.Random) -> str:
    """A made-up English town name such as "Ashbrook" or "Kingsford"."""
    return rng.choice(_TOWN_HEADS) + rng.choice(_TOWN_TAILS)


def company(rng: random.Random) -> str:
    """A made-up company name such as "Granite Logistics Limited"."""
    roll = rng.random()
    if roll < 0.5:
        head = rng.choice(_COMPANY_HEADS)
    elif roll < 0.75:
        head = rng.choice(SURNAMES) + (f" & {rng.choice(SURNAMES)}" if rng.random() < 0.4 else "")
    else:
        head = town(rng)
    return f"{head} {rng.choice(_COMPANY_TRADES)} {rng.choice(_COMPANY_FORMS)}"


def person(rng: random.Random) -> str:
    """A first name and a surname."""
    return f"{rng.choice(FEMALE_NAMES + MALE_NAMES)} {rng.choice(SURNAMES)}"


def date(rng: random.Random) -> str:
    """A date in contract style: "14 March 2025" or "the 3rd day of June 2024"."""
    day, month, year = rng.randint(1, 28), rng.choice(MONTHS), rng.randint(2019, 2031)
    if rng.random() < 0.25:
        return f"the {ordinal_figure(day)} day of {month} {year}"
    return f"{day} {month} {year}"


# Durations contracts actually use; the same figures recur, which is part of what makes legal text
# predictable.
_DAY_COUNTS = (5, 7, 10, 14, 14, 20, 28, 30, 30, 30, 45, 60, 60, 90, 90, 120, 180)
_MONTH_COUNTS = (1, 2, 3, 3, 6, 6, 9, 12, 12, 18, 24, 36)


def legal_duration(rng: random.Random) -> str:
    """A period in words and figures: "thirty (30) days", "six (6) months", "ten (10) Business Days"."""
    roll = rng.random()
    if roll < 0.55:
        n, unit = rng.choice(_DAY_COUNTS), "days"
    elif roll < 0.75:
        n, unit = rng.choice((5, 10, 10, 15, 20)), "Business Days"
    else:
        n = rng.choice(_MONTH_COUNTS)
        unit = "month" if n == 1 else "months"
    return f"{number_words(n)} ({n}) {unit}"


_AMOUNT_HEADS = (1, 2, 5, 10, 10, 15, 20, 25, 50, 50, 75, 100, 100, 150, 250, 250, 500, 750)


def amount(exp: Expansion) -> str:
    """A sum in figures and words in the document's currency: "£250,000 (two hundred and fifty ...)"."""
    rng = exp.rng
    value = rng.choice(_AMOUNT_HEADS) * rng.choice((1_000, 1_000, 10_000, 100_000))
    symbol, name = exp.bindings["cur_symbol"], exp.bindings["cur_name"]
    return f"{symbol}{figures(value)} ({number_words(value)} {name})"


def percent(rng: random.Random) -> str:
    """A percentage in contract style: "ten per cent (10%)"."""
    n = rng.choice((1, 2, 2, 3, 4, 5, 5, 8, 10, 10, 15, 20, 25, 50, 100, 110, 125, 150))
    return f"{number_words(n)} per cent ({n}%)"


def clause_ref(rng: random.Random) -> str:
    """A cross-reference: "Clause 12.3(b)", "Clause 7", "paragraph 2 of Schedule 3"."""
    roll = rng.random()
    clause, sub = rng.randint(2, 28), rng.randint(1, 9)
    if roll < 0.3:
        return f"Clause {clause}.{sub}"
    if roll < 0.5:
        return f"Clause {clause}.{sub}({'abcdef'[rng.randrange(6)]})"
    if roll < 0.7:
        return f"Clause {clause}"
    if roll < 0.85:
        return f"paragraph {sub} of Schedule {rng.randint(1, 6)}"
    return f"Clauses {clause} to {clause + rng.randint(1, 4)}"


def schedule_ref(rng: random.Random) -> str:
    """ "Schedule 2", "Part B of Schedule 1" or "the Order"."""
    roll = rng.random()
    if roll < 0.7:
        return f"Schedule {rng.randint(1, 8)}"
    if roll < 0.85:
        return f"Part {'ABC'[rng.randrange(3)]} of Schedule {rng.randint(1, 5)}"
    return rng.choice(("the Order", "the Order Form", "the Statement of Work"))


def address(rng: random.Random) -> str:
    """A street address in a made-up town: "14 Mill Lane, Ashbrook"."""
    street = rng.choice(_TOWN_HEADS) + " " + rng.choice(("Street", "Road", "Lane", "Avenue", "Park", "Way"))
    return f"{rng.randint(1, 220)} {street}, {town(rng)}"


def series(items: list[str], conjunction: str) -> str:
    """ "a, b and c" (no Oxford comma, as British contracts write it)."""
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


def pick_in_order(exp: Expansion, rule: str, low: int, high: int) -> list[str]:
    """Expand ``low``..``high`` distinct alternatives of ``rule``, kept in the order they are listed.

    Keeping the listed order is deliberate: contracts list the same items in the same order, and that
    regularity is part of what a domain draft can learn.
    """
    count = exp.grammar.alternatives(rule)
    k = exp.rng.randint(low, min(high, count))
    return [exp.rule(rule, i) for i in sorted(exp.rng.sample(range(count), k))]


def lettered_list(exp: Expansion, rule: str, conjunction: str, low: int = 2, high: int = 4) -> str:
    """ "(a) first; (b) second; and (c) third", drawn from the alternatives of ``rule``."""
    items = pick_in_order(exp, rule, low, high)
    parts = [f"({'abcdefgh'[i]}) {item}" for i, item in enumerate(items)]
    return "; ".join(parts[:-1]) + f"; {conjunction} " + parts[-1]
