"""``specmeter runs list|show|export|delete|note``: the run history kept in the SQLite run store.

Every bench (and later tune, select, load, demo) records its run there unless told ``--no-store``. Runs
are referred to by number, ``latest`` or ``latest~N``. ``store_option`` and ``open_store`` are shared
with compare, report and roi.
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

from specmeter.cli.common import check_outputs, console, err_console, fail
from specmeter.safetext import markup

app = typer.Typer(
    help="Run history: list, show, export, annotate and delete stored runs.",
    no_args_is_help=True,
    add_completion=False,
)

_STORE_HELP = "Run store (SQLite). Default: $SPECMETER_STORE, else runs.sqlite in the user data dir."


def store_option() -> Any:
    """A fresh ``--store`` option (typer options are per-parameter objects)."""
    return typer.Option(None, "--store", help=_STORE_HELP)


def store_path(store: Path | None) -> Path:
    from specmeter.store import default_store_path

    return store if store is not None else default_store_path()


def run_inputs(runs: list[str | None], store: Path | None) -> dict[str, Path | list[Path] | None]:
    """The files a command reading RUNs opens (result JSON files and the run store), for check_outputs."""
    from specmeter.store import is_run_ref

    files = [Path(r) for r in runs if r is not None and not is_run_ref(r)]
    return {"RUN": files, "--store": store_path(store)}


def open_store(store: Path | None, *, create: bool = False) -> Any:
    """The RunStore, or a one-line error naming the store."""
    from specmeter.store import RunStore, StoreError

    try:
        return RunStore(store_path(store), create=create)
    except StoreError as e:
        fail(str(e))


def _best(result: Mapping[str, Any]) -> tuple[str, str, bool]:
    """(best E_meas, its α, any danger) for the listing."""
    from specmeter.report.fmt import DASH, as_float, fmt_num, fmt_speedup

    best: tuple[float, Any] | None = None
    danger = False
    candidates = result.get("candidates")
    for c in candidates if isinstance(candidates, list) else []:  # a stored row of another shape: no best
        s = c.get("summary") if isinstance(c, Mapping) else None
        if not isinstance(s, Mapping):
            continue
        danger = danger or s.get("danger_zone") is True
        e = as_float(s.get("speedup_measured"))
        if e is not None and (best is None or e > best[0]):
            best = (e, s)
    if best is None:
        return DASH, DASH, danger
    return fmt_speedup(best[0]), fmt_num(best[1].get("acceptance_rate"), 3), danger


@app.command("list")
def list_runs(
    store: Path | None = store_option(),
    limit: int = typer.Option(20, "--limit", "-n", help="Show the newest N runs (0 = all)."),
    kind: str | None = typer.Option(None, "--kind", help="Only runs of this kind (bench, tune, load, ...)."),
    as_json: bool = typer.Option(False, "--json", help="Print the listing as JSON."),
) -> None:
    """List stored runs, newest first."""
    from rich.table import Table
    from rich.text import Text

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
    if not runs:
        console.print(f"No runs in {store_path(store)}.")
        return
    table = Table(title=f"runs in {store_path(store)}", title_justify="left")
    for column in ("id", "status", "kind", "started (UTC)", "reqs", "best E", "α", "machine"):
        table.add_column(column, no_wrap=column not in ("kind", "started (UTC)"))
    table.add_column("target ← drafts · note", overflow="fold", ratio=1)
    for r in runs:
        e_best, alpha, danger = _best(results[r.id])
        status = Text(r.status, style="yellow" if r.status == "partial" else "green")
        e_text = Text(e_best + (" ⚠" if danger else ""), style="bold red" if danger else "")
        started = r.started_at.replace("T", " ")[:16]
        label = Text(r.label + (f" · {r.note}" if r.note else ""))
        hygiene = results[r.id].get("hygiene")
        machine = str((hygiene.get("verdict") if isinstance(hygiene, Mapping) else None) or "—")
        m_text = Text(machine, style={"busy": "bold yellow", "unusable": "bold red"}.get(machine, ""))
        table.add_row(str(r.id), status, r.kind, started, str(r.requests), e_text, alpha, m_text, label)
    console.print(table)
    console.print(
        "⚠ = a candidate or category in the danger zone (α < 0.5 or E_meas < 1); machine = what else ran "
        "during the run (quiet / busy / unusable, docs/metrics.md)",
        style="dim",
    )


@app.command("show")
def show(
    run: str = typer.Argument(..., help="Run id, latest or latest~N."), store: Path | None = store_option()
) -> None:
    """Print a stored run's result tables (a run killed before its summary is summarised from its records)."""
    from specmeter.report.console import render_result
    from specmeter.store import StoreError, is_run_ref, load_source

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
def export(
    run: str = typer.Argument(..., help="Run id, latest or latest~N."),
    out: Path = typer.Option(..., "--out", "-o", help="File to write."),
    fmt: str | None = typer.Option(None, "--format", help=_FORMAT_HELP),
    store: Path | None = store_option(),
) -> None:
    """Write a stored run as a result JSON, a per-request CSV, or full per-request records (JSONL)."""
    from specmeter.report.files import CSV_COLUMNS, request_row, write_json_atomic
    from specmeter.store import StoreError, is_run_ref

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
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8", newline="") as fh:
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
def note(
    run: str = typer.Argument(..., help="Run id, latest or latest~N."),
    text: str = typer.Argument(..., help="The note, e.g. 'after the tokenizer fix'."),
    store: Path | None = store_option(),
) -> None:
    """Attach a note to a run (shown by runs list)."""
    from specmeter.store import StoreError

    with open_store(store) as db:
        try:
            db.set_note(db.resolve(run), text)
        except StoreError as e:
            fail(str(e))


@app.command("delete")
def delete(
    runs: list[str] = typer.Argument(..., help="Run ids (or latest, latest~N)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    store: Path | None = store_option(),
) -> None:
    """Delete runs and their request records."""
    from specmeter.store import StoreError

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
