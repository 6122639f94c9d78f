"""``bundled:NAME``: the one spelling of a bundled model or golden set on the command line.

The demo's models live in ``src/specmeter/assets/models/<name>`` and its golden sets in
``src/specmeter/assets/{golden,prompts}/<name>.jsonl`` (or wherever the package is installed). Any argument of
any command that is exactly ``bundled:NAME`` (or an option's ``--option=bundled:NAME``) stands for that path:

* models: ``bundled:target``, ``bundled:draft-general``, ``bundled:draft-tiny``, ``bundled:draft-legal``,
  and the EAGLE head ``bundled:eagle-legal`` (also inside a method spec: ``eagle:head=bundled:eagle-legal``);
* golden sets: ``bundled:general``, ``bundled:legal`` (150 held-out prompts each), ``bundled:smoke``.

``specmeter.cli.app`` replaces such arguments by the path before any option is parsed, so every option that
takes a path takes a bundled name, and what a run records (``run.config``) is the real path. No torch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from specmeter.bundled.models import DRAFTS, HEADS, TARGET, bundled_model
from specmeter.workloads import bundled_prompt_names, bundled_prompts

__all__ = ["PREFIX", "BundledNameError", "bundled_names", "resolve_bundled", "resolve_bundled_args"]

PREFIX = "bundled:"
_NAME = re.compile(r"bundled:[\w.-]+")
_HEAD = re.compile(r"(?<=[:,]head=)bundled:[\w.-]+(?=,|$)")  # eagle:head=bundled:NAME inside a method spec


class BundledNameError(ValueError):
    """``bundled:NAME`` names nothing shipped; the message lists what is."""


def bundled_names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(model names, golden-set names) that ``bundled:NAME`` accepts."""
    return (TARGET, *DRAFTS, *HEADS), bundled_prompt_names()


def resolve_bundled(name: str) -> Path:
    """The path of the bundled model or golden set ``name`` (without the ``bundled:`` prefix)."""
    models, sets = bundled_names()
    if name in models:
        return bundled_model(name)
    if name in sets:
        return bundled_prompts(name)
    raise BundledNameError(
        f"{PREFIX}{name}: no bundled model or golden set of that name "
        f"(models: {', '.join(models)}; golden sets: {', '.join(sets)})"
    )


def resolve_bundled_args(args: Sequence[str]) -> list[str]:
    """``args`` with every ``bundled:NAME`` argument (and ``--option=bundled:NAME``) replaced by its path.
    Only whole arguments of that form (and a method spec's ``head=bundled:NAME``) are replaced: text that
    merely contains ``bundled:`` (a launch template, a note with spaces) is left as it is. BundledNameError
    on an unknown name."""
    out = []
    for arg in args:
        head, sep, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if _NAME.fullmatch(value):
            arg = f"{head}{sep}{resolve_bundled(value.removeprefix(PREFIX))}"
        elif _HEAD.search(value):
            value = _HEAD.sub(lambda m: str(resolve_bundled(m.group(0).removeprefix(PREFIX))), value)
            arg = f"{head}{sep}{value}"
        out.append(arg)
    return out
