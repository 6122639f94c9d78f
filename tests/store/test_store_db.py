"""The SQLite run store: round trips, partial runs, refusal of foreign or newer files, WAL, references."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from store_builders import integrity_ok, make_result, make_rows

from specmeter.store import SCHEMA_VERSION, RunRecorder, RunStore, StoreError, default_store_path
from specmeter.store.packing import (
    pack_emissions,
    pack_ids,
    pack_steps,
    unpack_emissions,
    unpack_ids,
    unpack_steps,
)


def test_packing_round_trips_exactly() -> None:
    rows = make_rows(0, n=3)
    for _, _, _, rec in rows:
        assert unpack_steps(pack_steps(rec.steps)) == rec.steps
        assert unpack_emissions(pack_emissions(rec.emissions)) == rec.emissions
    ids = (0, 1, 2**32 - 1, 17)
    assert unpack_ids(pack_ids(ids)) == ids
    assert unpack_steps(pack_steps(())) == ()
    with pytest.raises(ValueError, match="unknown steps blob"):
        unpack_steps(b"\x09" + b"\x00" * 8)


def test_steps_keep_batch_size_and_k_and_old_blobs_still_read() -> None:
    import struct
    import zlib

    from specmeter.metrics.records import StepRecord

    steps = (
        StepRecord(3, 2, 3, 0.01, 0.02, 3, batch=8, k=3),
        StepRecord(0, 0, 1, 0.0, 0.02, 0, batch=16, k=0),
        StepRecord(2, 2, 3, 0.01, 0.02, 2),  # batch 1, k not recorded
    )
    assert unpack_steps(pack_steps(steps)) == steps
    # A blob in the first layout (no batch, no k), as runs stored before batching hold them.
    ints = struct.pack("<8I", 3, 1, 2, 1, 4, 2, 3, 1)
    v1 = bytes([1]) + struct.pack("<I", 2) + zlib.compress(ints + struct.pack("<4d", 0.1, 0.2, 0.3, 0.4))
    assert unpack_steps(v1) == (StepRecord(3, 2, 4, 0.1, 0.3, 3), StepRecord(1, 1, 2, 0.2, 0.4, 1))


def test_a_run_round_trips_and_becomes_complete(tmp_path: Path) -> None:
    rows = make_rows(1, n=6)
    result = make_result(rows)
    with RunStore(tmp_path / "s.sqlite") as store:
        assert store.schema_version == SCHEMA_VERSION
        run_id = store.begin_run(result)
        assert store.run_info(run_id).status == "partial"
        for row in rows:
            store.add_request(run_id, *row)
        store.save_result(run_id, result, complete=True)
        info = store.run_info(run_id)
        assert (info.status, info.requests, info.kind) == ("complete", len(rows), "bench")
        assert info.label == "target ← draft"
        assert store.result(run_id) == result
        back = store.requests(run_id)
    assert [(r.slot, r.draft, r.k, r.record) for r in back] == rows
    assert back[1].record.matches_baseline is None


def test_references_listing_notes_and_delete(tmp_path: Path) -> None:
    result = make_result(make_rows(2, n=2))
    with RunStore(tmp_path / "s.sqlite") as store:
        ids = [store.begin_run(result) for _ in range(3)]
        assert store.resolve("latest") == ids[-1]
        assert store.resolve("latest~2") == ids[0]
        assert store.resolve(str(ids[1])) == ids[1]
        for bad in ("latest~3", "99", "yesterday"):
            with pytest.raises(StoreError):
                store.resolve(bad)
        store.set_note(ids[0], "before the fix")
        assert [r.id for r in store.list_runs()] == ids[::-1]
        assert [r.id for r in store.list_runs(limit=1)] == [ids[-1]]
        assert store.run_info(ids[0]).note == "before the fix"
        store.add_request(ids[1], *make_rows(3, n=1)[0])
        store.delete_run(ids[1])
        assert [r.id for r in store.list_runs()] == [ids[2], ids[0]]
        # Request rows go with their run (foreign key cascade).
        assert store._conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0] == 0
        with pytest.raises(StoreError, match="no run"):
            store.delete_run(ids[1])


def test_store_uses_wal_and_stays_consistent_for_a_concurrent_reader(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    rows = make_rows(4, n=4)
    with RunStore(path) as writer, RunStore(path, create=False) as reader:
        assert writer._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        run_id = writer.begin_run(make_result(rows, complete=False))
        writer.add_requests(run_id, rows[:3])
        assert reader.run_info(run_id).requests == 3
        assert reader.run_info(run_id).status == "partial"


def test_an_exception_inside_a_write_rolls_the_whole_write_back(tmp_path: Path) -> None:
    rows = make_rows(5, n=2)
    with RunStore(tmp_path / "s.sqlite") as store:
        run_id = store.begin_run(make_result(rows))
        bad = [rows[0], (rows[1][0], rows[1][1], rows[1][2], "not a record")]
        with pytest.raises(AttributeError):
            store.add_requests(run_id, bad)  # type: ignore[arg-type]
        assert store.run_info(run_id).requests == 0
        store.add_requests(run_id, rows)
        assert store.run_info(run_id).requests == len(rows)
        assert integrity_ok(store.path)


def test_refuses_foreign_newer_and_garbage_files(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (x TEXT)")
    with pytest.raises(StoreError, match="not a specmeter run store"):
        RunStore(other)

    newer = tmp_path / "newer.sqlite"
    RunStore(newer).close()
    with sqlite3.connect(newer) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer than this specmeter supports"):
        RunStore(newer)

    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="not a usable run store"):
        RunStore(garbage)

    with pytest.raises(StoreError, match="no run store at"):
        RunStore(tmp_path / "missing.sqlite", create=False)
    assert not (tmp_path / "missing.sqlite").exists()


def test_recorder_is_a_no_op_without_a_store_and_records_with_one(tmp_path: Path) -> None:
    rows = make_rows(6, n=2)
    nothing = RunRecorder.start(None, make_result(rows))
    nothing.add_request(*rows[0])
    nothing.finish(make_result(rows))
    assert nothing.run_id is None and not nothing.recorded

    rec = RunRecorder.start(tmp_path / "s.sqlite", make_result(rows, complete=False))
    for row in rows:
        rec.add_request(*row)
    rec.finish(make_result(rows), complete=False)
    assert rec.recorded
    with RunStore(tmp_path / "s.sqlite") as store:
        info = store.run_info(rec.run_id or 0)
    assert (info.status, info.requests) == ("partial", len(rows))


def test_recorder_survives_a_store_failure_mid_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = make_rows(7, n=2)
    rec = RunRecorder.start(tmp_path / "s.sqlite", make_result(rows))
    rec.add_request(*rows[0])
    assert rec._store is not None
    rec._store.close()  # as if the store went away under the run
    rec.add_request(*rows[1])  # must not raise: the measurement goes on
    rec.finish(make_result(rows))
    assert rec.failed and not rec.recorded
    assert "no longer recorded" in capsys.readouterr().err


def test_default_store_path_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPECMETER_STORE", str(tmp_path / "mine.sqlite"))
    assert default_store_path() == tmp_path / "mine.sqlite"
    monkeypatch.delenv("SPECMETER_STORE")
    path = default_store_path()
    assert path.name == "runs.sqlite" and "specmeter" in str(path.parent)
