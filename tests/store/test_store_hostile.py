"""A damaged run store (issue 29): a bad row is skipped in listings and one error line elsewhere."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from store_builders import make_result, make_rows
from typer.testing import CliRunner, Result

from specmeter.cli.app import app
from specmeter.store import RunStore, StoreError

runner = CliRunner()


def store_with_three_runs(path: Path, damage: str) -> Path:
    with RunStore(path) as store:
        for seed in range(3):
            rows = make_rows(seed, n=2)
            store.add_requests(store.begin_run(make_result(rows)), rows)
    conn = sqlite3.connect(path)
    conn.execute(damage)
    conn.commit()
    conn.close()
    return path


def one_error(result: Result, *needles: str) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert all(n in lines[0] for n in needles), (needles, lines[0])


BAD_ROWS = [
    ("UPDATE runs SET result_json = '{not json' WHERE id = 2", "its stored result is not readable JSON"),
    (
        "UPDATE runs SET result_json = '" + "[" * 5000 + "' WHERE id = 2",
        "its stored result is not readable JSON (nested deeper than 200 levels",
    ),
    ("UPDATE runs SET result_json = '[1, 2]' WHERE id = 2", "its stored result is not a JSON object (list)"),
    ("UPDATE runs SET result_json = x'ff00' WHERE id = 2", "its stored result is not readable"),
]


@pytest.mark.parametrize(("damage", "reason"), BAD_ROWS)
def test_one_bad_result_row_is_skipped_in_the_listing_and_one_line_everywhere_else(
    tmp_path: Path, damage: str, reason: str
) -> None:
    store = store_with_three_runs(tmp_path / "s.sqlite", damage)
    listed = runner.invoke(app, ["runs", "list", "--store", str(store), "--json"])
    assert listed.exit_code == 0, listed.output
    assert [r["id"] for r in json.loads(listed.stdout)] == [3, 1]
    (warning,) = listed.stderr.strip().splitlines()
    assert warning.startswith(f"warning: {store}: run 2: {reason}") and warning.endswith("; skipped")
    table = runner.invoke(app, ["runs", "list", "--store", str(store)], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "skipped" in table.stderr
    for args in (
        ["runs", "show", "2"],
        ["runs", "export", "2", "--out", str(tmp_path / "r.json")],
        ["report", "2", "--out", str(tmp_path / "r.html")],
        ["compare", "1", "2"],
    ):
        one_error(runner.invoke(app, [*args, "--store", str(store)]), f"{store}: run 2: {reason}")
    assert runner.invoke(app, ["runs", "show", "1", "--store", str(store)]).exit_code == 0


def test_a_result_of_the_wrong_shape_is_listed_without_figures_and_refused_by_show(tmp_path: Path) -> None:
    store = store_with_three_runs(
        tmp_path / "s.sqlite",
        """UPDATE runs SET result_json = '{"baseline": {}, "candidates": 5, "hygiene": "x"}' WHERE id = 2""",
    )
    listed = runner.invoke(app, ["runs", "list", "--store", str(store)], env={"COLUMNS": "200"})
    assert listed.exit_code == 0 and listed.exception is None, listed.output
    one_error(
        runner.invoke(app, ["runs", "show", "2", "--store", str(store)]), "run 2: candidates: expected a list"
    )


def test_a_damaged_request_blob_is_one_line_naming_the_run_and_record(tmp_path: Path) -> None:
    store = store_with_three_runs(
        tmp_path / "s.sqlite", "UPDATE requests SET steps = x'0102' WHERE run_id = 2"
    )
    for args in (["runs", "show", "2"], ["runs", "export", "2", "--out", str(tmp_path / "r.csv")]):
        one_error(
            runner.invoke(app, [*args, "--store", str(store)]),
            f"{store}: run 2: request record 1 ('p0') is not readable (unknown steps blob format",
        )
    assert runner.invoke(app, ["runs", "list", "--store", str(store)]).exit_code == 0


def test_a_missing_table_is_one_line_for_every_command(tmp_path: Path) -> None:
    store = store_with_three_runs(tmp_path / "s.sqlite", "DROP TABLE requests")
    for args in (["runs", "list"], ["runs", "show", "1"], ["report", "1", "--out", str(tmp_path / "r.html")]):
        one_error(
            runner.invoke(app, [*args, "--store", str(store)]), "the run store is damaged: table requests"
        )
    with pytest.raises(StoreError, match="table requests is missing"):
        RunStore(store)


def test_outside_text_in_a_run_never_reaches_the_terminal_as_control_characters(tmp_path: Path) -> None:
    # Issue 29: a run note or a category holding ESC [2J cleared the screen of whoever listed the runs.
    evil = "\x1b[2J\x1b]8;;http://x\x1b\\[red]x"
    path = tmp_path / "s.sqlite"
    with RunStore(path) as store:
        rows = make_rows(0, n=2, categories=(evil, "legal"))
        store.add_requests(store.begin_run(make_result(rows)), rows)
    assert runner.invoke(app, ["runs", "note", "1", evil, "--store", str(path)]).exit_code == 0
    for args in (["runs", "list"], ["runs", "show", "1"]):
        result = runner.invoke(app, [*args, "--store", str(path)], env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\\x1b[2J" in result.output, result.output
