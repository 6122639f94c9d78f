"""Which category (domain) a logged prompt belongs to: from a field, from rules, or "uncategorised".

Order of precedence for one prompt:

1. ``--category-field PATH``: a dotted path into the logged record (``route``, ``metadata.domain``); for a
   wrapped OpenAI line the path is also tried inside ``request``/``body`` and their ``metadata``. Without the
   option, a format's own category field is used where it has one (Spec-Bench ``category``, specmeter's
   ``category`` or ``domain``, an OpenAI or gateway line's ``domain`` or ``category`` at the top, in
   ``request``/``body`` or in their ``metadata``: ``metadata.domain`` needs no option).
2. ``--rules rules.yml``: the first rule that matches the prompt's text (every message and follow-up).
3. The rules file's ``default``, else ``"uncategorised"``.

A rules file::

    # first matching rule wins
    rules:
      - category: legal
        regex: '\\b(indemnif\\w*|governing law|force majeure)\\b'   # Python regex, case-insensitive
      - category: code
        keywords: ["def ", "SELECT ", "stack trace"]              # any of them, case-insensitive
    default: general                                              # optional

A rule may give ``regex``, ``keywords`` or both (either matching is enough).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from specmeter.goldenset.formats import LogPrompt

__all__ = ["UNCATEGORISED", "CategoryRules", "Rule", "RulesError", "categorize", "field_value", "load_rules"]

UNCATEGORISED = "uncategorised"
# Without --category-field: each format's own places for a domain. ``domain`` is looked up on the record,
# inside ``request``/``body`` and in each one's ``metadata`` (:func:`field_value`), so a gateway line with
# ``metadata.domain`` (what ``specmeter load`` sends) is split by it with no option.
_NATIVE_FIELDS = {
    "specbench": ("category",),
    "specmeter": ("category", "domain"),
    "openai": ("domain", "category"),
    "sharegpt": ("domain", "category"),
}


class RulesError(ValueError):
    """The rules file is unusable; the message names file and rule."""


@dataclass(frozen=True)
class Rule:
    category: str
    pattern: re.Pattern[str] | None
    keywords: tuple[str, ...]

    def matches(self, text: str) -> bool:
        if self.pattern is not None and self.pattern.search(text):
            return True
        folded = text.casefold()
        return any(k in folded for k in self.keywords)


@dataclass(frozen=True)
class CategoryRules:
    rules: tuple[Rule, ...]
    default: str = UNCATEGORISED

    def category(self, text: str) -> str:
        for rule in self.rules:
            if rule.matches(text):
                return rule.category
        return self.default


def load_rules(path: str | os.PathLike[str]) -> CategoryRules:
    shown = os.fspath(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RulesError(f"{shown}: file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RulesError(f"{shown}: cannot read ({e})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{shown}:{mark.line + 1}" if mark is not None else shown
        raise RulesError(f"{where}: not valid YAML ({getattr(e, 'problem', None) or e})") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("rules"), list) or not data["rules"]:
        raise RulesError(f"{shown}: expected a mapping with a non-empty list 'rules'")
    unknown = set(data) - {"rules", "default"}
    if unknown:
        raise RulesError(f"{shown}: unknown key {sorted(unknown)[0]!r} (allowed: rules, default)")
    default = data.get("default", UNCATEGORISED)
    if not isinstance(default, str) or not default.strip():
        raise RulesError(f"{shown}: 'default' must be a non-empty string")
    rules = []
    for i, item in enumerate(data["rules"]):
        where = f"{shown}: rules[{i}]"
        if not isinstance(item, Mapping):
            raise RulesError(f"{where}: must be a mapping with 'category' and 'regex' and/or 'keywords'")
        extra = set(item) - {"category", "regex", "keywords"}
        if extra:
            raise RulesError(
                f"{where}: unknown key {sorted(extra)[0]!r} (allowed: category, regex, keywords)"
            )
        category = item.get("category")
        if not isinstance(category, str) or not category.strip():
            raise RulesError(f"{where}: 'category' must be a non-empty string")
        pattern = None
        if item.get("regex") is not None:
            if not isinstance(item["regex"], str):
                raise RulesError(f"{where}: 'regex' must be a string")
            try:
                pattern = re.compile(item["regex"], re.IGNORECASE)
            except re.error as e:
                raise RulesError(f"{where}: invalid regex ({e})") from None
        keywords = item.get("keywords") or []
        if not isinstance(keywords, list) or not all(isinstance(k, str) and k for k in keywords):
            raise RulesError(f"{where}: 'keywords' must be a list of non-empty strings")
        if pattern is None and not keywords:
            raise RulesError(f"{where}: give 'regex' or 'keywords'")
        rules.append(Rule(category.strip(), pattern, tuple(k.casefold() for k in keywords)))
    return CategoryRules(tuple(rules), default.strip())


def _lookup(record: Mapping[str, Any], path: Sequence[str]) -> object:
    value: object = record
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def field_value(record: Mapping[str, Any], path: str) -> str | None:
    """The value at a dotted path as a category name; None when absent, empty or not a scalar.

    Tried on the record itself, then inside ``request``/``body`` and the ``metadata`` of each, so a
    gateway's ``{"route": …, "request": {"metadata": {"domain": …}}}`` line is found either way.
    """
    parts = path.split(".")
    candidates: list[Mapping[str, Any]] = [record]
    for wrapper in ("request", "body"):
        inner = record.get(wrapper)
        if isinstance(inner, Mapping):
            candidates.append(inner)
    for base in list(candidates):
        meta = base.get("metadata")
        if isinstance(meta, Mapping):
            candidates.append(meta)
    for base in candidates:
        value = _lookup(base, parts)
        if isinstance(value, bool):
            value = str(value).lower()
        if isinstance(value, (str, int, float)) and str(value).strip():
            return str(value).strip()
    return None


def categorize(
    prompt: LogPrompt, *, category_field: str | None = None, rules: CategoryRules | None = None
) -> str:
    """The prompt's category by the precedence in the module docstring."""
    fields = (category_field,) if category_field else _NATIVE_FIELDS.get(prompt.format, ())
    for name in fields:
        value = field_value(prompt.record, name)
        if value is not None:
            return value
    if rules is not None:
        return rules.category(prompt.content)
    return UNCATEGORISED
