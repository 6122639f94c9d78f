"""``specmeter runs list|show|export|delete|note``: the run history kept in the SQLite run store.

Every bench (and later tune, select, load, demo) records its run there unless told ``--no-store``. Runs
are referred to by number, ``latest`` or ``latest~N``; ``--store`` is ``cli.options.STORE``, shared with
compare, report and roi.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from specmeter.cli.common import check_outputs, console, err_console, fail, open_store, store_path
from specmeter.cli.options import STORE, shared, writes_files
from specmeter.safetext import markup

app = typer.Typer(
    help="Run history: list, show, export, annotate and delete stored runs.",
    no_args_is_help=True,
    add_completion=False,
)


@app.command("list")
@shared(tail=STORE)
def list_runs(
    limit: int = typer.Option(20, "--limit", "-n", help="Show the newest N runs (0 = all)."),
    kind: str | None = typer.Option(None, "--kind", help="Only runs of this kind (bench, tune, load, ...)."),
    as_json: bool = typer.Option(False, "--json", help="Print the listing as JSON."),
    *,
    options: dict[str, Any],
) -> None:
    """List stored runs, newest first."""
    from specmeter.store.view_runs import render_runs

    store = options["store"]
    from specmeter.store import StoreError

    with open_store(store) as db:
        try:
            listed = db.list_runs(limit=limit or None, kind=kind)
        except StoreError as e:
            fail(str(e))
        results: dict[int, Mapping[str, Any]] = {}
        for r in listed:
            try:
                results[r.id] = db.result(r.id)
            except StoreError as e:  # one damaged row: said once, and the other runs are still listed
                err_console.print(f"[yellow]warning:[/] {escape(str(e))}; skipped", soft_wrap=True)
    runs = [r for r in listed if r.id in results]
    if as_json:
        rows = [dataclasses.asdict(r) for r in runs]
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    render_runs(runs, results, store_path(store), console)


@app.command("show")
@shared(tail=STORE)
def show(
    run: str = typer.Argument(..., help="Run id, latest or latest~N."), *, options: dict[str, Any]
) -> None:
    """Print a stored run's result tables (a run killed before its summary is summarised from its records)."""
    from specmeter.report.view import render_result
    from specmeter.store import StoreError, is_run_ref, load_source

    store = options["store"]
    if not is_run_ref(run):
        fail(f"run {run!r}: expected a run id, latest or latest~N")
    try:
        source = load_source(run, store_path(store))
    except StoreError as e:
        fail(str(e))
    records = len(source.requests or [])
    console.print(f"[bold]{markup(source.name)}[/] · {markup(source.status)} · {records} request records")
    for note in source.notes:
        console.print(f"[yellow]{markup(note)}[/]")
    render_result(source.result, console)


_FORMAT_HELP = (
    "json (the result file), csv (one row per request) or jsonl (full request records with steps). "
    "Default: from --out's suffix."
)


def _export_format(out: Path, fmt: str | None) -> str:
    fmt = (fmt or out.suffix.lstrip(".")).lower()
    if fmt not in ("json", "csv", "jsonl"):
        shown = fmt or "(none)"
        fail(f"--format: {shown!r} is not json, csv or jsonl (or give --out a .json, .csv or .jsonl name)")
    return fmt


@app.command("export")
@writes_files
@shared(tail=STORE)
def export(
    run: str = typer.Argument(..., help="Run id, latest or latest~N."),
    out: Path = typer.Option(..., "--out", "-o", help="File to write."),
    fmt: str | None = typer.Option(None, "--format", help=_FORMAT_HELP),
    *,
    options: dict[str, Any],
) -> None:
    """Write a stored run as a result JSON, a per-request CSV, or full per-request records (JSONL)."""
    from specmeter.report.files import CSV_COLUMNS, request_row, write_json_atomic
    from specmeter.report.outfile import FORMATS, open_for_writing
    from specmeter.store import StoreError, is_run_ref

    store = options["store"]
    kind = _export_format(out, fmt)
    if not is_run_ref(run):
        fail(f"run {run!r}: expected a run id, latest or latest~N")
    check_outputs({"--out": out}, {"--store": store_path(store)})
    with open_store(store) as db:
        try:
            run_id = db.resolve(run)
            result, requests = db.result(run_id), db.requests(run_id)
        except StoreError as e:
            fail(str(e))
    if kind == "json":
        write_json_atomic(out, result)
    else:
        with open_for_writing(out, FORMATS["csv" if kind == "csv" else "log"], newline="") as fh:
            if kind == "csv":
                writer = csv.writer(fh, lineterminator="\n")
                writer.writerow(CSV_COLUMNS)
                for r in requests:
                    row = request_row(r.slot, r.draft, r.k, r.record)
                    writer.writerow(["" if row[c] is None else row[c] for c in CSV_COLUMNS])
            else:
                for r in requests:
                    line = {"run": r.slot, "draft": r.draft, "k": r.k, **dataclasses.asdict(r.record)}
                    fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    console.print(f"Wrote run {run_id} to {out} ({kind}, {len(requests)} request records).", soft_wrap=True)


@app.command("note")
@shared(tail=STORE)
def note(
    run: str = typer.Argument(..., help="Run id, latest or latest~N."),
    text: str = typer.Argument(..., help="The note, e.g. 'after the tokenizer fix'."),
    *,
    options: dict[str, Any],
) -> None:
    """Attach a note to a run (shown by runs list)."""
    from specmeter.store import StoreError

    store = options["store"]
    with open_store(store) as db:
        try:
            db.set_note(db.resolve(run), text)
        except StoreError as e:
            fail(str(e))


@app.command("delete")
@shared(tail=STORE)
def delete(
    runs: list[str] = typer.Argument(..., help="Run ids (or latest, latest~N)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    *,
    options: dict[str, Any],
) -> None:
    """Delete runs and their request records."""
    from specmeter.store import StoreError

    store = options["store"]
    with open_store(store) as db:
        try:
            ids = sorted({db.resolve(r) for r in runs})
        except StoreError as e:
            fail(str(e))
        if not yes and not typer.confirm(f"Delete run(s) {', '.join(map(str, ids))}?", default=False):
            raise typer.Exit(1)
        for run_id in ids:
            db.delete_run(run_id)
    console.print(f"Deleted run(s) {', '.join(map(str, ids))}.")
