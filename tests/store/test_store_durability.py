"""Durability: a store written by an older version opens; a run killed mid-write is partial and harmless."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from store_builders import integrity_ok, make_result, make_rows

from specmeter.store import SCHEMA_VERSION, RunStore, load_source
from specmeter.store.schema import V1_SCHEMA


def _write_v1_store(path: Path) -> list[tuple[str, str | None, int, object]]:
    """A version-1 store as version 1 wrote it: hand-written SQL, steps as JSON text."""
    rows = make_rows(11, n=3)
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    conn.execute(
        "INSERT INTO runs (id, kind, complete, started_at, result_json) VALUES (1, 'bench', 1, ?, ?)",
        ("2026-01-01T00:00:00+00:00", json.dumps(make_result(rows))),
    )
    conn.execute(
        "INSERT INTO runs (id, kind, complete, started_at, result_json) VALUES (2, 'bench', 0, ?, '{}')",
        ("2026-01-02T00:00:00+00:00",),
    )
    for seq, (slot, draft, k, rec) in enumerate(rows):
        steps = [
            [s.drafted, s.accepted, s.emitted, s.draft_s, s.verify_s, s.draft_forwards] for s in rec.steps
        ]
        conn.execute(
            "INSERT INTO requests VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (seq, slot, draft, k, rec.id, rec.category, rec.prompt_tokens, rec.output_tokens, rec.latency_s,
             rec.ttft_s, json.dumps(steps)),
        )  # fmt: skip
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    return rows  # type: ignore[return-value]


def test_a_version_1_store_is_migrated_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    rows = _write_v1_store(path)
    with RunStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        runs = {r.id: r for r in store.list_runs()}
        assert runs[1].status == "complete" and runs[2].status == "partial"
        assert runs[1].requests == len(rows)
        back = store.requests(1)
        assert integrity_ok(store.path)
        # New runs go on after the migrated ones.
        assert store.begin_run(make_result(rows)) == 3
    for (slot, draft, k, rec), got in zip(rows, back, strict=True):
        assert (got.slot, got.draft, got.k) == (slot, draft, k)
        assert got.record.steps == rec.steps  # type: ignore[attr-defined]
        assert got.record.latency_s == rec.latency_s  # type: ignore[attr-defined]
        assert got.record.emissions == ()  # v1 did not record emission times
    # Opening again is a no-op (already current).
    with RunStore(path) as store:
        assert store.run_info(1).requests == len(rows)


def test_a_version_2_store_gains_the_error_column_and_records_failures(tmp_path: Path) -> None:
    from dataclasses import replace

    path = tmp_path / "v2.sqlite"
    rows = make_rows(5, n=2)
    with RunStore(path) as store:
        run_id = store.begin_run(make_result(rows))
        store.add_requests(run_id, rows)  # type: ignore[arg-type]
    # Back to version 2's layout: the same tables without requests.error.
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE requests DROP COLUMN error")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with RunStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert [r.record.error for r in store.requests(run_id)] == [None] * len(rows)
        slot, draft, k, rec = rows[0]
        cut = replace(rec, finish_reason="interrupted", error="stalled: no data for 60s")  # type: ignore[type-var]
        store.add_request(run_id, slot, draft, k, cut)
        assert store.requests(run_id)[-1].record == cut


_WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {builders!r})
    from store_builders import make_result, make_rows
    from specmeter.store import RunStore

    store = RunStore({path!r})
    done = make_rows(1, n=4)
    first = store.begin_run(make_result(done))
    store.add_requests(first, done)
    store.save_result(first, make_result(done), complete=True)
    rows = make_rows(2, n=10_000)
    run = store.begin_run(make_result(rows[:2], complete=False) | {{"baseline": {{"summary": None}},
                                                                   "candidates": []}})
    for i, row in enumerate(rows):
        store.add_request(run, *row)
        print(i, flush=True)
    """
)


@pytest.mark.slow  # over 3 s: make test-slow (the default suite stays under 3 minutes)
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_run_killed_mid_write_is_partial_and_earlier_runs_are_intact(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    script = _WRITER.format(builders=str(Path(__file__).parent), path=str(path))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        seen = 0
        while seen < 30 and time.monotonic() < deadline:
            if proc.stdout.readline() == "":
                break
            seen += 1
        assert seen == 30, "the writer did not get going"
        os.kill(proc.pid, signal.SIGKILL)  # no cleanup at all: as hard as a crash gets
    finally:
        proc.kill()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()

    with RunStore(path) as store:
        assert integrity_ok(store.path)
        runs = {r.id: r for r in store.list_runs()}
        assert runs[1].status == "complete" and runs[1].requests == 8
        assert runs[2].status == "partial"
        assert runs[2].requests >= 30  # every committed request survived
        assert [r.record for r in store.requests(1)] == [r for _, _, _, r in make_rows(1, n=4)]
    # The killed run never wrote its summaries; loading it rebuilds them from the stored requests.
    source = load_source("2", path)
    assert source.status == "partial"
    assert any("rebuilt" in n for n in source.notes)
    cand = source.result["candidates"][0]
    assert cand["summary"]["requests"] >= 15
    assert 0.0 < cand["summary"]["acceptance_rate"] < 1.0
    assert cand["summary"]["speedup_measured"] is not None
