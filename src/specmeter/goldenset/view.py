"""The terminal report of ``specmeter golden``: what was read, skipped, deduplicated, sampled and written."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from specmeter.goldenset.build import GoldenReport
from specmeter.goldenset.categorize import UNCATEGORISED
from specmeter.safetext import markup
from specmeter.workloads.loader import MAX_LISTED_PROBLEMS

__all__ = ["render_golden", "render_problems"]

_BAR = 24


def render_problems(report: GoldenReport, console: Console) -> None:
    """Every bad line as ``file:line: reason`` (at most MAX_LISTED_PROBLEMS), then the count."""
    problems = report.problems
    for p in problems[:MAX_LISTED_PROBLEMS]:
        console.print(f"{p}: skipped", markup=False, highlight=False, emoji=False, soft_wrap=True)
    if len(problems) > MAX_LISTED_PROBLEMS:
        console.print(
            f"... and {len(problems) - MAX_LISTED_PROBLEMS} more (all of them in --json)", markup=False
        )


def _n(value: float) -> str:
    return f"{value:,.0f}"


def render_golden(report: GoldenReport, console: Console) -> None:
    files = ", ".join(f"{f} ({fmt})" for f, fmt in report.formats.items())
    console.print(f"read {files}", markup=False, emoji=False, soft_wrap=True)
    bad = len(report.problems)
    lines = f"{_n(bad)} bad line{'s' * (bad != 1)}"
    console.print(f"{_n(report.records)} records: {_n(report.usable)} usable, {lines} skipped")
    if report.near_threshold is not None:
        threshold = f"{report.near_threshold:g}"
        method = f"exact, then near: MinHash over character 5-gram shingles, exact Jaccard ≥ {threshold}"
    else:
        method = "exact only"
    exact, near = _n(report.exact_duplicates), _n(report.near_duplicates)
    console.print(f"duplicates removed: {exact} exact, {near} near ({method})")

    table = Table()
    for name in ("category", "usable", "exact dup", "near dup", "unique", "written"):
        table.add_column(name, justify="left" if name == "category" else "right")
    for category, row in sorted(report.categories.items()):
        table.add_row(
            category,
            *(_n(row[k]) for k in ("usable", "exact_duplicates", "near_duplicates", "unique", "written")),
        )
    console.print(table)
    if report.field_missing:
        fallback = "the --rules" if report.rules else f"'{UNCATEGORISED}'"
        field, missing = markup(str(report.category_field)), _n(report.field_missing)
        console.print(
            f"[yellow]warning:[/] --category-field {field}: {missing} of {_n(report.usable)} usable prompts "
            f"have no such field; they were categorised by {fallback}"
        )
    for key, (wanted, got) in report.shortfalls.items():
        console.print(
            f"[yellow]warning:[/] {markup(key)}: {wanted} wanted, only {got} unique prompts available"
        )
    if report.excluded:
        console.print(f"left out (not in --mix): {', '.join(report.excluded)}", markup=False)

    lengths = report.lengths
    unit = lengths["unit"]
    src, smp = lengths["source"]["quantiles"], lengths["sample"]["quantiles"]
    q = Table()
    q.add_column("")
    q.add_column(f"source ({_n(lengths['source']['count'])})", justify="right")
    q.add_column(f"golden ({_n(lengths['sample']['count'])})", justify="right")
    for key in src:
        q.add_row(key, _n(src[key]), _n(smp[key]) if smp else "—")
    b = Table()
    b.add_column(f"≤ {unit}", justify="right")
    b.add_column("source", justify="right")
    b.add_column("")
    b.add_column("golden", justify="right")
    b.add_column("")
    for row in lengths["buckets"]:
        b.add_row(
            _n(row["up_to"]),
            f"{row['source']:.0%}",
            "█" * round(row["source"] * _BAR),
            f"{row['sample']:.0%}",
            "█" * round(row["sample"] * _BAR),
        )
    console.print(f"input length ({unit}), source vs golden set:")
    console.print(q)
    console.print(b)
    ks = lengths["ks_distance"]
    if ks is not None:
        console.print(f"Kolmogorov–Smirnov distance between the two length distributions: {ks:.3f}")
    if report.scrubbed is not None:
        s = report.scrubbed
        console.print(
            f"scrubbed: {s['email']} e-mail address(es), {s['phone']} phone number(s), "
            f"{s['digits']} long digit run(s)"
        )
    turns = f" ({report.multi_turn} multi-turn conversation(s))" if report.multi_turn else ""
    console.print(
        f"wrote {_n(report.written)} prompts{turns} to {report.out}",
        markup=False,
        emoji=False,
        soft_wrap=True,
    )
