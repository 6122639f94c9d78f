"""bench records its run in the store (partial until the end); runs list|show|export|note|delete."""

from __future__ import annotations

import contextlib
import csv
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.store import RunStore
from specmeter.workloads import bundled_prompts

runner = CliRunner()


@pytest.fixture(autouse=True)
def _never_the_real_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A forgotten --store must land in tmp, never in the user's data dir.
    monkeypatch.setenv("SPECMETER_STORE", str(tmp_path / "env-store.sqlite"))


def bench(tiny: Any, *args: str, draft: Path | None = None, quiet: bool = True) -> Any:
    argv = ["bench", "--target", str(tiny.target), "--draft", str(draft or tiny.draft),
            "--prompts", str(bundled_prompts("smoke")), "--k", "2", "--limit", "3", "--max-tokens", "10",
            "--cost-repeats", "1", *(["-q"] if quiet else []), *args]  # fmt: skip
    return runner.invoke(app, argv)


def test_bench_records_a_complete_run_and_runs_shows_it(tiny: Any, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    res = bench(tiny, "--store", str(store), "--json", str(tmp_path / "r.json"), quiet=False)
    assert res.exit_code == 0, res.output
    assert f"Recorded as run 1 in {store}" in res.output
    with RunStore(store) as db:
        (info,) = db.list_runs()
        assert (info.status, info.requests, info.kind) == ("complete", 6, "bench")  # 3 prompts × 2 slots
        assert db.result(1) == json.loads((tmp_path / "r.json").read_text())
        slots = {r.slot for r in db.requests(1)}
    assert slots == {"baseline", "draft@k=2"}

    listed = runner.invoke(app, ["runs", "list", "--store", str(store), "--json"])
    assert listed.exit_code == 0
    assert [r["id"] for r in json.loads(listed.output)] == [1]
    table = runner.invoke(app, ["runs", "list", "--store", str(store)], env={"COLUMNS": "200"})
    assert "complete" in table.output and "target ← draft" in table.output

    shown = runner.invoke(app, ["runs", "show", "latest", "--store", str(store)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0
    assert "run 1 · complete · 6 request records" in shown.output
    assert "acceptance α" in shown.output and "Verdict:" in shown.output


def test_export_note_and_delete(tiny: Any, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    assert bench(tiny, "--store", str(store)).exit_code == 0
    s = ["--store", str(store)]
    assert runner.invoke(app, ["runs", "export", "1", "--out", str(tmp_path / "r.json"), *s]).exit_code == 0
    with RunStore(store) as db:
        assert json.loads((tmp_path / "r.json").read_text()) == db.result(1)
    assert runner.invoke(app, ["runs", "export", "1", "--out", str(tmp_path / "r.csv"), *s]).exit_code == 0
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert len(rows) == 6 and {r["run"] for r in rows} == {"baseline", "draft@k=2"}
    assert all(int(r["output_tokens"]) >= 1 for r in rows)
    out = tmp_path / "records.txt"
    assert (
        runner.invoke(app, ["runs", "export", "1", "--out", str(out), "--format", "jsonl", *s]).exit_code == 0
    )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 6 and all(line["steps"] and line["emissions"] for line in lines)
    bad = runner.invoke(app, ["runs", "export", "1", "--out", str(tmp_path / "r.xml"), *s])
    assert bad.exit_code == 2 and "is not json, csv or jsonl" in bad.output

    assert runner.invoke(app, ["runs", "note", "1", "before the fix", *s]).exit_code == 0
    listed = json.loads(runner.invoke(app, ["runs", "list", "--json", *s]).output)
    assert listed[0]["note"] == "before the fix"

    kept = runner.invoke(app, ["runs", "delete", "1", *s], input="n\n")
    assert kept.exit_code == 1
    assert runner.invoke(app, ["runs", "delete", "latest", "--yes", *s]).exit_code == 0
    assert json.loads(runner.invoke(app, ["runs", "list", "--json", *s]).output) == []


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, n: int, error: BaseException) -> None:
    from specmeter.engine import runner as engine_runner

    real = engine_runner.run_interleaved

    def stopping(state: Any, prompts: Any, *, on_record: Any, **kw: Any) -> None:
        seen = 0

        def record(slot: Any, rec: Any) -> None:
            nonlocal seen
            on_record(slot, rec)
            seen += 1
            if seen == n:
                raise error

        real(state, prompts, on_record=record, **kw)

    monkeypatch.setattr(engine_runner, "run_interleaved", stopping)


def test_ctrl_c_leaves_a_partial_run_with_its_summaries(
    tiny: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.sqlite"
    assert bench(tiny, "--store", str(store)).exit_code == 0
    _interrupt_after(monkeypatch, 4, KeyboardInterrupt())
    res = bench(tiny, "--store", str(store))
    assert res.exit_code == 130
    with RunStore(store) as db:
        runs = {r.id: r for r in db.list_runs()}
        assert (runs[1].status, runs[1].requests) == ("complete", 6)  # the earlier run is untouched
        assert (runs[2].status, runs[2].requests) == ("partial", 4)
        result = db.result(2)
    assert result["complete"] is False
    assert result["baseline"]["summary"]["requests"] == 2
    listed = runner.invoke(app, ["runs", "list", "--store", str(store)], env={"COLUMNS": "200"})
    assert "partial" in listed.output


def test_a_crash_mid_run_keeps_what_was_measured(
    tiny: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.sqlite"
    _interrupt_after(monkeypatch, 3, RuntimeError("GPU fell off the bus"))
    res = bench(tiny, "--store", str(store))
    assert isinstance(res.exception, RuntimeError)
    with RunStore(store) as db:
        (info,) = db.list_runs()
        assert (info.status, info.requests) == ("partial", 3)
        with contextlib.closing(sqlite3.connect(store)) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    shown = runner.invoke(app, ["runs", "show", "1", "--store", str(store)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0
    assert "summaries rebuilt from 3 stored request records" in shown.output
    assert "acceptance α" in shown.output


def test_no_store_and_the_environment_default(tiny: Any, tmp_path: Path) -> None:
    assert bench(tiny, "--no-store", "--store", str(tmp_path / "s.sqlite")).exit_code == 0
    assert not (tmp_path / "s.sqlite").exists() and not (tmp_path / "env-store.sqlite").exists()
    assert bench(tiny).exit_code == 0
    with RunStore(tmp_path / "env-store.sqlite") as db:
        assert len(db.list_runs()) == 1


def test_store_errors_are_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not sqlite" * 200)
    res = runner.invoke(app, ["runs", "list", "--store", str(junk)])
    assert res.exit_code == 2 and "not a usable run store" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["runs", "list", "--store", str(tmp_path / "none.sqlite")])
    assert res.exit_code == 2 and "no run store at" in res.output
    RunStore(tmp_path / "s.sqlite").close()
    res = runner.invoke(app, ["runs", "show", "7", "--store", str(tmp_path / "s.sqlite")])
    assert res.exit_code == 2 and "no run 7" in res.output
    res = runner.invoke(app, ["runs", "show", "result.json", "--store", str(tmp_path / "s.sqlite")])
    assert res.exit_code == 2 and "expected a run id" in res.output


def test_bench_fails_early_on_an_unusable_store(tiny: Any, tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not sqlite" * 200)
    res = bench(tiny, "--store", str(junk))
    assert res.exit_code == 2 and "--store" in res.output and "not a usable run store" in res.output


def test_runs_list_shows_a_stored_sweeps_own_e(tmp_path: Path) -> None:
    """Issue 28 (3): the best E of a stored sweep is the sweep's (against both baseline runs), not E against
    the first baseline run."""
    from sweep_states import stored_sweep

    store = stored_sweep(tmp_path / "s.sqlite")
    table = runner.invoke(app, ["runs", "list", "--store", str(store)], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "1.80×" in table.output and "2.00×" not in table.output
