"""report.outfile: which files specmeter may replace, recognized by content, checked again when writing.

Every writer's own output is recognized as its kind (so reruns need no --force), someone else's file and
another kind's are not, and a link, FIFO or file that appears after the up-front check is refused at the
moment of writing without being touched (issue 29, item 12).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from specmeter.metrics.records import RequestRecord
from specmeter.monitoring.alerts import AlertEvent, JsonlSink
from specmeter.monitoring.store import HistoryStore
from specmeter.report.files import CSV_COLUMNS, RequestSink, ResultFile, write_json_atomic
from specmeter.report.html import write_report
from specmeter.report.outfile import (
    FORMATS,
    OutputRefused,
    formats_for,
    open_for_writing,
    recognized,
    refusal,
    replacing_allowed,
    write_text_atomic,
)
from specmeter.store import RunStore, StoreError

RECORD = RequestRecord(
    id="a", category="c", prompt_tokens=3, output_tokens=2, latency_s=0.1, ttft_s=0.05, prefill_s=0.01,
    steps=(), emissions=(), output_ids=(1, 2), finish_reason="length",
)  # fmt: skip
THEIRS = '{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}\n'


def _written(tmp_path: Path) -> dict[str, Path]:
    """One file of each kind, written by specmeter's own writers."""
    out = {name: tmp_path / f"own-{name}" for name in FORMATS}
    with ResultFile(out["json"], kind="bench", config={}):
        pass
    schedule = {"method": "draft_model", "num_speculative_tokens": 4,
                "num_speculative_tokens_per_batch_size": [[1, 8, 4]]}  # fmt: skip
    write_json_atomic(out["schedule"], schedule, schedule=True)
    with RequestSink(out["csv"], out["log"]) as sink:
        sink.write("baseline", None, 0, RECORD)
    from specmeter.goldenset.build import _write_atomic

    _write_atomic(out["golden"], [{"id": "a", "category": "c", "prompt": "hi", "source": "log.jsonl:1"}])
    sink_alerts = JsonlSink(out["alerts"])
    asyncio.run(
        sink_alerts.send(AlertEvent("2026-01-01T00:00:00Z", "t", "tau_drop", "firing", 1.0, 2.0, "m"))
    )
    sink_alerts.close()
    write_report(
        out["html"], "<!DOCTYPE html>\n<html><head><meta name='generator' content='specmeter'></head>"
    )
    out["png"].write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    RunStore(out["store"]).close()
    HistoryStore(out["history"]).close()
    return out


def test_every_writer_output_is_recognized_as_its_own_kind_only(tmp_path: Path) -> None:
    own = _written(tmp_path)
    for name, path in own.items():
        assert recognized(path, (FORMATS[name],)), name
        # The run store tells its files from others itself (store.RunStore): any file passes here.
        others = [o for o in FORMATS if o not in (name, "store") and recognized(path, (FORMATS[o],))]
        assert others == [], (name, others)  # a CSV is not a log, a result not a schedule, …


@pytest.mark.parametrize("name", sorted(set(FORMATS) - {"store"}))
def test_someone_elses_file_is_recognized_as_no_kind(tmp_path: Path, name: str) -> None:
    theirs = tmp_path / "config.json"
    theirs.write_text(THEIRS)
    assert not recognized(theirs, (FORMATS[name],))
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert recognized(empty, (FORMATS[name],))


def test_the_csv_recognizer_follows_the_csv_columns() -> None:
    # report.outfile recognizes a CSV by its first columns; they are report.files.CSV_COLUMNS' first four.
    assert ",".join(CSV_COLUMNS).startswith("run,draft,k,id,")


def test_a_foreign_sqlite_file_is_never_written_into(tmp_path: Path) -> None:
    db = tmp_path / "app.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE users (name TEXT)")
    with replacing_allowed():
        reason = refusal("--history", db)
    assert reason is not None and "--force or not" in reason
    with pytest.raises(StoreError, match="not a specmeter run store"):  # the run store says so itself
        RunStore(db)


def test_devices_links_and_fifos_are_refused_up_front(tmp_path: Path) -> None:
    assert refusal("--json", os.devnull) == (
        f"--json: {os.devnull} is a character device, not a regular file; an output is only ever written "
        "to a regular file"
    )
    os.mkfifo(tmp_path / "pipe")
    assert "is a FIFO (named pipe)" in (refusal("--csv", tmp_path / "pipe") or "")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere.json")
    with replacing_allowed():  # --force does not cover links
        assert "is a symbolic link" in (refusal("--json", tmp_path / "dangling") or "")
    assert not (tmp_path / "nowhere.json").exists()


def test_formats_by_option_and_suffix() -> None:
    assert [f.name for f in formats_for("--csv", "x.json")] == ["csv"]  # the option wins
    assert [f.name for f in formats_for("--out", "report.html")] == ["html"]
    assert [f.name for f in formats_for("--out", "golden.jsonl")] == ["log", "golden"]
    assert {f.name for f in formats_for("--out", "no-suffix")} == set(FORMATS) - {"store", "history"}


# ------------------------------------------------------------------------------------------ at write time


def test_a_link_that_appears_during_the_run_is_refused_when_writing(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = ResultFile(out, kind="bench", config={})
    result.save()
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    out.unlink()
    out.symlink_to(target)  # appears mid-run, after the up-front check
    with pytest.raises(OutputRefused, match="is a symbolic link"):
        result.finish()
    assert out.is_symlink() and target.read_text() == "keep me\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_fifo_is_refused_when_opening_rows_without_blocking(tmp_path: Path) -> None:
    pipe = tmp_path / "rows.csv"
    os.mkfifo(pipe)  # nobody reads it: opening it for writing would block forever
    with pytest.raises(OutputRefused, match="FIFO"):
        RequestSink(pipe)
    with pytest.raises(OutputRefused, match="FIFO"):
        write_json_atomic(pipe, {"schema_version": 1, "kind": "x"})
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)


def test_force_covers_the_file_that_was_there_not_one_that_appears_later(tmp_path: Path) -> None:
    there = tmp_path / "there.json"
    there.write_text(THEIRS)
    later = tmp_path / "later.json"
    with replacing_allowed():
        assert refusal("--json", there) is None and refusal("--json", later) is None
    write_json_atomic(there, {"schema_version": 1, "kind": "x"})  # approved up front: replaced
    later.write_text(THEIRS)  # appears during the run
    with pytest.raises(OutputRefused, match=r"later.json exists and is not a specmeter JSON file"):
        write_json_atomic(later, {"schema_version": 1, "kind": "x"})
    assert later.read_text() == THEIRS
    with pytest.raises(OutputRefused, match="use --force to append to it"):
        JsonlSink(later)
    assert later.read_text() == THEIRS


def test_write_text_atomic_and_open_for_writing_keep_their_kind(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json_atomic(path, {"a": 1, "kind": "bench", "schema_version": 1})  # the markers go first
    assert path.read_text().startswith('{\n  "schema_version": 1,\n  "kind": "bench",\n  "a": 1')
    write_text_atomic(path, '{"schema_version": 1, "kind": "x"}', FORMATS["json"])
    with open_for_writing(tmp_path / "a.jsonl", FORMATS["alerts"], append=True) as fh:
        fh.write("not an alert\n")
    with pytest.raises(OutputRefused, match="not a specmeter alerts log"):  # now someone else's, in effect
        open_for_writing(tmp_path / "a.jsonl", FORMATS["alerts"], append=True)
    assert (tmp_path / "a.jsonl").read_text() == "not an alert\n"
