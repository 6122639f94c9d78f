"""``specmeter golden``: build a golden set from production request logs (package ``specmeter.goldenset``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from specmeter.cli.common import check_outputs, check_seed, console, err_console, fail, parse_option

FORMAT_CHOICES = ("auto", "openai", "sharegpt", "csv", "specbench", "specmeter")


def golden(
    sources: list[Path] = typer.Option(
        ..., "--from", help="A log file or a directory of them; repeat for several."
    ),
    out: Path = typer.Option(..., "--out", help="The golden set to write (JSONL, specmeter's format)."),
    fmt: str = typer.Option("auto", "--format", help="Input format: " + ", ".join(FORMAT_CHOICES) + "."),
    prompt_column: str | None = typer.Option(
        None, "--prompt-column", help="CSV: the column holding the prompt."
    ),
    category_field: str | None = typer.Option(
        None,
        "--category-field",
        help="Field (dotted path, e.g. route or metadata.domain) naming the category.",
    ),
    rules: Path | None = typer.Option(None, "--rules", help="YAML rules: regex or keywords → category."),
    n: int | None = typer.Option(
        None, "--n", help="Prompts per category (with --mix: in total). Default: all."
    ),
    mix: str | None = typer.Option(
        None, "--mix", help="Sample N in total to this traffic mix: legal=0.7,general=0.3."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the sampling (same seed, same golden set)."),
    no_dedupe: bool = typer.Option(False, "--no-dedupe", help="Keep duplicates (exact and near)."),
    near_threshold: float = typer.Option(
        0.8, "--near-threshold", help="Drop a prompt whose Jaccard similarity with a kept one is ≥ this."
    ),
    no_near: bool = typer.Option(False, "--no-near", help="Remove exact duplicates only."),
    scrub: bool = typer.Option(False, "--scrub", help="Replace e-mails, phone numbers and long digit runs."),
    scrub_digits: int = typer.Option(
        8, "--scrub-digits", help="With --scrub: digit runs this long or longer."
    ),
    tokenizer: Path | None = typer.Option(
        None, "--tokenizer", help="Model or tokenizer directory: lengths in tokens instead of characters."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="Write the report (every bad line included) as JSON."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only errors and the bad lines."),
) -> None:
    """Build a golden set from request logs: categories, dedupe, seeded stratified sample, provenance."""
    from specmeter.goldenset import GoldenConfig, GoldenError, RulesError, build_golden, load_rules
    from specmeter.goldenset.view import render_golden, render_problems
    from specmeter.selection.mix import MixError, parse_mix
    from specmeter.workloads.loader import MAX_LISTED_PROBLEMS

    if fmt not in FORMAT_CHOICES:
        fail(f"--format: {fmt!r} is not one of {', '.join(FORMAT_CHOICES)}")
    if n is not None and n < 1:
        fail(f"--n must be >= 1, got {n}")
    check_seed("--seed", seed)
    if mix is not None and n is None:
        fail("--mix needs --n (the total number of prompts to split by the mix)")
    if not 0.0 < near_threshold <= 1.0:
        fail(f"--near-threshold must be in (0, 1], got {near_threshold:g}")
    if scrub_digits < 4:
        fail(f"--scrub-digits must be >= 4, got {scrub_digits}")
    if prompt_column is not None and fmt not in ("auto", "csv"):
        fail("--prompt-column applies to CSV input only")
    weights = parse_option(parse_mix, mix, MixError)
    category_rules = parse_option(load_rules, rules, RulesError)
    count_tokens = None
    if tokenizer is not None:
        from specmeter.engine.loader import load_tokenizer
        from specmeter.modeldir import ModelDirError

        tok: Any = parse_option(load_tokenizer, tokenizer, ModelDirError, "--tokenizer: ")

        def count_tokens(text: str) -> int:
            return len(tok(text, add_special_tokens=False)["input_ids"])

    config = GoldenConfig(
        sources=sources,
        out=out,
        format=fmt,
        prompt_column=prompt_column,
        category_field=category_field,
        rules=category_rules,
        n=n,
        mix=weights,
        seed=seed,
        exact_dedupe=not no_dedupe,
        near_threshold=None if no_dedupe or no_near else near_threshold,
        scrub=scrub,
        scrub_min_digits=scrub_digits,
        count_tokens=count_tokens,
    )
    check_outputs({}, {"--from": sources})  # a name too long for the file system: one line, not errno 36
    inputs = [p for s in sources for p in (sorted(s.rglob("*")) if s.is_dir() else [s]) if not p.is_dir()]
    check_outputs(
        {"--out": out, "--json": json_out}, {"--from": inputs, "--rules": rules, "--tokenizer": tokenizer}
    )
    try:
        report = build_golden(config)
    except GoldenError as e:
        for problem in [] if e.usage else e.problems[:MAX_LISTED_PROBLEMS]:
            err_console.print(
                f"{problem}: skipped", markup=False, highlight=False, emoji=False, soft_wrap=True
            )
        fail(str(e), code=2 if e.usage else 1)
    report.config = {
        "from": [str(s) for s in sources],
        "format": fmt,
        "category_field": category_field,
        "rules": str(rules) if rules else None,
        "n": n,
        "mix": weights,
        "seed": seed,
        "dedupe": not no_dedupe,
        "near_threshold": config.near_threshold,
        "scrub": scrub,
        "tokenizer": str(tokenizer) if tokenizer else None,
    }
    render_problems(report, err_console)
    if json_out is not None:
        from specmeter.report.files import write_json_atomic

        write_json_atomic(json_out, report.as_dict(), marker="golden")
    if not quiet:
        render_golden(report, console)
