"""``specmeter golden``'s pipeline: read → categorise → dedupe → sample → scrub → write, with a report.

1. Every source is read (:mod:`.formats`); unusable records become problems (``file:line: reason``).
2. Each prompt gets a category (:mod:`.categorize`).
3. Exact, then near-duplicates are dropped across all sources, first occurrence kept (:mod:`.dedupe`);
   with scrubbing, on the scrubbed text.
4. A seeded stratified sample per category, or to a traffic mix (:mod:`.sampling`).
5. Optionally e-mails, phone numbers and long digit runs are replaced (:mod:`.scrub`).
6. The golden set is written atomically, one line per prompt in specmeter's own format (what ``bench``,
   ``tune``, ``select`` and ``load`` read), each line keeping its provenance in ``source``.

The input-length distribution of the sample is compared with that of the source (all usable prompts,
before dedupe) in the report (:mod:`.lengths`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specmeter.goldenset.categorize import CategoryRules, categorize, field_value
from specmeter.goldenset.dedupe import dedupe
from specmeter.goldenset.formats import LogPrompt, Problem, read_prompts
from specmeter.goldenset.lengths import compare_lengths
from specmeter.goldenset.sampling import stratified_sample
from specmeter.goldenset.scrub import SCRUB_KINDS, Scrubber
from specmeter.report.outfile import FORMATS, write_text_atomic
from specmeter.selection.mix import MixError, assign_domains

__all__ = ["GoldenConfig", "GoldenError", "GoldenReport", "build_golden", "golden_line"]


class GoldenError(ValueError):
    """The golden set cannot be built (one line naming the cause); ``problems``: bad lines read so far."""

    def __init__(self, message: str, problems: Sequence[Problem] = (), *, usage: bool = False) -> None:
        super().__init__(message)
        self.problems = list(problems)
        self.usage = usage  # the options contradict the input (exit 2), rather than the input being empty


@dataclass(frozen=True)
class GoldenConfig:
    sources: Sequence[Path]
    out: Path
    format: str = "auto"
    prompt_column: str | None = None
    category_field: str | None = None
    rules: CategoryRules | None = None
    n: int | None = None  # per category; with a mix, in total
    mix: Mapping[str, float] | None = None
    seed: int = 0
    exact_dedupe: bool = True
    near_threshold: float | None = 0.8
    scrub: bool = False
    scrub_min_digits: int = 8
    count_tokens: Callable[[str], int] | None = None  # lengths in tokens; None: characters


@dataclass
class GoldenReport:
    out: str
    formats: dict[str, str]
    records: int
    usable: int
    problems: list[Problem]
    categories: dict[str, dict[str, int]]
    groups: dict[str, dict[str, int]]  # sampling strata (categories, or mix keys): wanted/available/written
    exact_duplicates: int
    near_duplicates: int
    near_threshold: float | None
    written: int
    multi_turn: int
    shortfalls: dict[str, tuple[int, int]]
    excluded: list[str]
    scrubbed: dict[str, int] | None
    lengths: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict)
    # --category-field given: usable prompts whose record lacks that field (categorised by the rules' or the
    # default category instead); 0 without the option.
    field_missing: int = 0
    category_field: str | None = None
    rules: bool = False  # categories fell back to --rules (else to "uncategorised")

    def as_dict(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "config": self.config,
            "formats": self.formats,
            "records": self.records,
            "usable": self.usable,
            "bad_lines": len(self.problems),
            "problems": [str(p) for p in self.problems],
            "categories": self.categories,
            "strata": self.groups,
            "exact_duplicates": self.exact_duplicates,
            "near_duplicates": self.near_duplicates,
            "near_threshold": self.near_threshold,
            "dedupe_method": _DEDUPE_METHOD if self.near_threshold is not None else "exact only",
            "written": self.written,
            "multi_turn": self.multi_turn,
            "shortfalls": {c: {"wanted": w, "got": g} for c, (w, g) in self.shortfalls.items()},
            "excluded_by_mix": self.excluded,
            "scrubbed": self.scrubbed,
            "lengths": self.lengths,
            "category_field_missing": self.field_missing,
        }


_DEDUPE_METHOD = "MinHash (128 hashes, 32 bands × 4 rows) over character 5-gram shingles, exact Jaccard check"


def golden_line(
    prompt: LogPrompt, ident: str, category: str, scrub: Callable[[str], str] | None = None
) -> dict[str, Any]:
    """One output line in specmeter's golden-set format (``workloads.loader``)."""
    clean = scrub or (lambda s: s)
    line: dict[str, Any] = {"id": ident, "category": category}
    if prompt.messages is not None:
        line["messages"] = [{"role": m.role, "content": clean(m.content)} for m in prompt.messages]
    else:
        assert prompt.text is not None
        line["prompt"] = clean(prompt.text)
    if prompt.followups:
        line["followups"] = [clean(f) for f in prompt.followups]
    if prompt.max_tokens is not None:
        line["max_tokens"] = prompt.max_tokens
    line["source"] = prompt.source
    return line


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _inputs(sources: Sequence[Path]) -> list[Path]:
    files: list[Path] = []
    for s in sources:
        files += [p for p in s.rglob("*") if p.is_file()] if s.is_dir() else [s]
    return files


def _write_atomic(path: Path, lines: Sequence[Mapping[str, Any]]) -> None:
    # Over nothing but an earlier golden set of specmeter's (report.outfile), atomically.
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    write_text_atomic(path, text, FORMATS["golden"], fsync=False)


def build_golden(config: GoldenConfig) -> GoldenReport:
    """Run the whole pipeline; raises GoldenError when nothing usable can be written."""
    for source in _inputs(config.sources):
        if _same_file(source, config.out) or source.resolve() == config.out.resolve():
            raise GoldenError(
                f"--out {config.out} is one of the inputs; the golden set never overwrites its source",
                usage=True,
            )
    read = read_prompts(config.sources, fmt=config.format, prompt_column=config.prompt_column)
    prompts = read.prompts
    if not prompts:
        raise GoldenError(
            f"no usable prompt in {', '.join(map(str, config.sources))} "
            f"({read.records} records, {len(read.problems)} unusable)",
            read.problems,
        )
    categories = [categorize(p, category_field=config.category_field, rules=config.rules) for p in prompts]
    path = config.category_field
    missing = 0 if path is None else sum(1 for p in prompts if field_value(p.record, path) is None)
    contents = [p.content for p in prompts]
    # With --scrub, duplicates are judged on scrubbed text: prompts that differ only in an e-mail address
    # or a phone number are the same prompt for a golden set (a throw-away scrubber: not counted).
    unify = Scrubber(config.scrub_min_digits) if config.scrub else (lambda s: s)
    dup = dedupe(
        [unify(c) for c in contents],
        exact=config.exact_dedupe,
        near_threshold=config.near_threshold,
        near_texts=[unify(p.dialogue) for p in prompts],
    )
    # With a mix, a key stands for its categories (``legal`` covers ``legal/nda``: selection.mix's rule).
    group_of: dict[str, str | None] = {c: c for c in set(categories)}
    if config.mix is not None:
        try:
            group_of = assign_domains(categories, config.mix)
        except MixError as e:
            raise GoldenError(str(e), read.problems, usage=True) from None
    groups: dict[str, list[int]] = {}
    for i in dup.kept:
        key = group_of[categories[i]]
        if key is not None:
            groups.setdefault(key, []).append(i)
    sample = stratified_sample(groups, n=config.n, mix=config.mix, seed=config.seed)
    excluded = sorted(c for c, key in group_of.items() if key is None)

    scrubber = Scrubber(config.scrub_min_digits) if config.scrub else None
    used: set[str] = set()
    lines: list[dict[str, Any]] = []
    chosen: list[int] = []
    for indices in sample.chosen.values():
        for i in indices:
            p, category = prompts[i], categories[i]
            ident = base = p.id or f"{Path(p.file).stem}-{p.line}"
            suffix = 1
            while ident in used:  # ids repeat across files (or within a log): keep them unique
                suffix += 1
                ident = f"{base}#{suffix}"
            used.add(ident)
            lines.append(golden_line(p, ident, category, scrubber))
            chosen.append(i)
    if not lines:
        raise GoldenError(
            "the sample is empty (no category had prompts for the requested --n/--mix)", read.problems
        )
    _write_atomic(config.out, lines)

    measure = config.count_tokens or len
    source_lengths = [measure(c) for c in contents]
    kept, written = Counter(categories[i] for i in dup.kept), Counter(categories[i] for i in chosen)
    per_category: dict[str, dict[str, int]] = {}
    for i, c in enumerate(categories):
        row = per_category.setdefault(c, {"usable": 0, "exact_duplicates": 0, "near_duplicates": 0})
        row["usable"] += 1
        row["exact_duplicates"] += i in dup.exact
        row["near_duplicates"] += i in dup.near
    for c, row in per_category.items():
        row["unique"] = kept[c]
        row["written"] = written[c]
    groups_report = {
        key: {
            "wanted": sample.wanted[key],
            "available": sample.available.get(key, 0),
            "written": len(sample.chosen[key]),
        }
        for key in sample.wanted
    }
    lengths = compare_lengths(
        source_lengths, [source_lengths[i] for i in chosen], "tokens" if config.count_tokens else "characters"
    )
    return GoldenReport(
        out=str(config.out),
        formats=read.formats,
        records=read.records,
        usable=len(prompts),
        problems=read.problems,
        categories=per_category,
        groups=groups_report,
        exact_duplicates=len(dup.exact),
        near_duplicates=len(dup.near),
        near_threshold=config.near_threshold,
        written=len(lines),
        multi_turn=sum(1 for i in chosen if prompts[i].followups),
        shortfalls=sample.shortfalls,
        excluded=excluded,
        scrubbed={k: scrubber.counts[k] for k in SCRUB_KINDS} if scrubber is not None else None,
        lengths=lengths,
        field_missing=missing,
        category_field=path,
        rules=config.rules is not None,
    )
