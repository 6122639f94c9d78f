"""``specmeter replay``: what each method would have accepted on logged traffic (``specmeter.replay``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from specmeter.cli.common import RichReporter, check_outputs, console, err_console, fail, resolve_store
from specmeter.exitcodes import EXIT_FAILED

if TYPE_CHECKING:
    from specmeter.replay.run import Row

from specmeter.replay.config import FORMATS as FORMAT_CHOICES


def replay(
    sources: list[Path] = typer.Option(
        None,
        "--from",
        help="A request log with responses (JSONL), or a directory of them; repeat for several.",
    ),
    methods: list[str] = typer.Option(
        None,
        "--method",
        help="A method spec (ngram:min=2,max=4, ngram-simple, suffix, …); repeat for several.",
    ),
    k: str = typer.Option("4", "--k", help="Draft lengths, comma-separated (e.g. 2,4,8)."),
    target: Path | None = typer.Option(
        None, "--target", help="The target's model directory: its tokenizer (and weights, for draft methods)."
    ),
    fmt: str = typer.Option("auto", "--format", help="Log format: " + ", ".join(FORMAT_CHOICES) + "."),
    category_field: str | None = typer.Option(
        None,
        "--category-field",
        help="Field (dotted path, e.g. domain or metadata.domain) naming the category.",
    ),
    rules: Path | None = typer.Option(None, "--rules", help="YAML rules: regex or keywords → category."),
    model: str | None = typer.Option(
        None,
        "--model",
        help="Replay only requests that name this model (default: the target directory's name).",
    ),
    warm: int = typer.Option(
        0, "--warm", help="The first N usable requests feed the caches (suffix) but not the figures."
    ),
    shard: str | None = typer.Option(
        None, "--shard", help="i/N: replay every N-th request from the i-th (write --json; then --merge)."
    ),
    limit: int | None = typer.Option(
        None, "--limit", help="Replay at most N requests (after --warm), sampled across categories."
    ),
    draft_rule: str = typer.Option(
        "specmeter",
        "--draft-rule",
        help="The draft length near max_tokens: specmeter (its own loop) or vllm (k at every step, as a "
        "vLLM server counts).",
    ),
    costs: Path | None = typer.Option(
        None,
        "--costs",
        help="A tune --batch, bench --batch, whatif or sweep result: predicted E per batch size.",
    ),
    ray: str | None = typer.Option(
        None,
        "--ray",
        help="A Ray cluster's address (host:port, ray://host:port, auto, local): run the shards there as "
        "tasks and merge them (pip install 'specmeter[ray]').",
    ),
    shards: int | None = typer.Option(
        None, "--shards", help="With --ray: the number of shards (default: one per CPU of the cluster)."
    ),
    merge: list[Path] = typer.Option(
        None, "--merge", help="Merge the --json results of shards 0…N-1 into the single run's figures."
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the result (bench's JSON shape)."),
    csv_out: Path | None = typer.Option(None, "--csv", help="Write one row per request and method × k."),
    html_out: Path | None = typer.Option(None, "--html", help="Write the HTML report."),
    store: Path | None = typer.Option(None, "--store", help="Run store (default: the user's data dir)."),
    no_store: bool = typer.Option(False, "--no-store", help="Do not record the run in the store."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar, no table."),
) -> None:
    """Replay logged responses through speculative methods: α, τ, per-position acceptance, no GPU needed."""
    from specmeter.cli.common import parse_int_list
    from specmeter.replay import ReplayConfig, ReplayError, merge_results, parse_shard

    outputs = {"--json": json_out, "--csv": csv_out, "--html": html_out}
    if merge:
        if sources or methods or ray is not None or shards is not None:
            fail("--merge takes shard results only (no --from, --method, --ray or --shards)")
        check_outputs(outputs, {"--merge": list(merge), "--costs": costs})
        _check_store(resolve_store(store, no_store))
        try:
            result, rows = merge_results(list(merge), json_out, csv_out, costs=costs)
        except ReplayError as e:
            fail(str(e))
        _finish(result, rows, html_out, resolve_store(store, no_store), quiet)
        return
    if not sources:
        fail("--from: give a log with responses (or --merge shard results)")
    if target is None:
        fail("--target: give the target's model directory (its tokenizer)")
    ks = parse_int_list(k, "--k")
    try:
        config = ReplayConfig(
            sources=tuple(sources), methods=tuple(methods or ()), ks=tuple(ks), target=target, fmt=fmt,
            category_field=category_field, rules=rules, model=model, warm=warm,
            shard=parse_shard(shard) if shard is not None else None, limit=limit, costs=costs,
            draft_rule=draft_rule,
            json_out=json_out, csv_out=csv_out, html_out=html_out, ray=ray, shards=shards,
        )  # fmt: skip
    except ReplayError as e:
        fail(str(e))
    if config.shard is not None and json_out is None:
        fail("--shard needs --json (the shard's result, for --merge)")
    check_outputs(outputs, {"--from": list(sources), "--rules": rules, "--costs": costs})
    _check_store(resolve_store(None if shard else store, no_store or bool(shard)))
    from specmeter.pricing import CostsError
    from specmeter.replay.run import replay_from

    reporter = RichReporter(err_console, quiet=quiet)
    if config.ray is not None:
        from specmeter.replay.ray_run import ShardFailed, replay_on_ray

        try:
            result, rows = replay_on_ray(config, reporter=reporter)
        except (ReplayError, CostsError) as e:
            fail(str(e))
        except ShardFailed as e:
            fail(str(e), EXIT_FAILED)
        _finish(result, rows, html_out, resolve_store(store, no_store), quiet)
        return
    try:
        result, replayed = replay_from(config, reporter=reporter)
    except (ReplayError, CostsError) as e:
        fail(str(e))
    _finish(
        result,
        replayed.rows,
        html_out,
        resolve_store(None if shard else store, no_store or bool(shard)),
        quiet,
    )


def _check_store(store: Path | None) -> None:
    """The run store a replay records into, refused before any work when no run can be recorded there (not
    a store, another file, unreadable or read-only), as bench refuses it (docs/results.md)."""
    if store is None:
        return
    from specmeter.store import RunStore, StoreError

    try:
        with RunStore(store) as opened:
            opened.check_writable()
    except StoreError as e:
        fail(f"--store: {e}")


def _finish(
    result: dict[str, Any], rows: Mapping[tuple[str, int], Sequence[Row]], html: Path | None,
    store: Path | None, quiet: bool,
) -> None:  # fmt: skip
    """HTML, the store (a shard is recorded only once merged), the console."""
    from specmeter.replay.outputs import record_run, write_html
    from specmeter.replay.run import store_rows
    from specmeter.replay.view import render_replay

    if html is not None:
        write_html(html, result)
    run_id = record_run(store, result, store_rows(rows))
    if not quiet:
        render_replay(result, console)
    if run_id is not None:
        err_console.print(f"recorded as run {run_id}", highlight=False)
