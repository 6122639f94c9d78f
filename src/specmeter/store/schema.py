"""The run store's SQLite schema, its version, and the migrations that bring older stores up to date.

The version lives in ``PRAGMA user_version``; ``PRAGMA application_id`` marks the file as a specmeter
store, so that pointing ``--store`` at some other SQLite file fails clearly instead of adding tables to
it. Each migration moves a store from version n to n + 1 inside the caller's transaction, so a failed
migration leaves the store as it was.

Version history:

1. runs(id, kind, complete, started_at, result_json); requests with the steps as JSON text.
2. runs gain status/updated_at/label/note/specmeter_version; requests keep steps, emissions and output
   ids as packed blobs (``store.packing``) plus prefill, finish reason and the baseline-match flag.
3. requests gain ``error``: why a request failed or was cut short (``RequestRecord.error``), NULL if not.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from specmeter import jsonsafe
from specmeter.metrics.records import StepRecord
from specmeter.store.packing import pack_emissions, pack_ids, pack_steps

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "V1_SCHEMA", "create_schema", "migrate"]

# "spmt" in ASCII: lets us tell our stores from any other SQLite file.
APPLICATION_ID = 0x73706D74
SCHEMA_VERSION = 3

# The layout of version 1, kept verbatim: the migration tests build a v1 store from it.
V1_SCHEMA = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    complete INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    result_json TEXT NOT NULL
);
CREATE TABLE requests (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    slot TEXT NOT NULL,
    draft TEXT,
    k INTEGER NOT NULL,
    request_id TEXT NOT NULL,
    category TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    ttft_s REAL NOT NULL,
    steps_json TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""

_V2_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('partial', 'complete')),
    started_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    note TEXT NOT NULL DEFAULT '',
    specmeter_version TEXT NOT NULL DEFAULT '',
    result_json TEXT NOT NULL
);
CREATE TABLE requests (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    slot TEXT NOT NULL,
    draft TEXT,
    k INTEGER NOT NULL,
    request_id TEXT NOT NULL,
    category TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    ttft_s REAL NOT NULL,
    prefill_s REAL NOT NULL,
    finish_reason TEXT NOT NULL,
    matches_baseline INTEGER,
    accepted_tokens INTEGER NOT NULL,
    drafted_tokens INTEGER NOT NULL,
    verify_steps INTEGER NOT NULL,
    steps BLOB NOT NULL,
    emissions BLOB NOT NULL,
    output_ids BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX runs_by_start ON runs (started_at);
"""
# Version 3 adds one column to version 2's requests table.
_V3_COLUMNS = "ALTER TABLE requests ADD COLUMN error TEXT"


def _create_v2(conn: sqlite3.Connection) -> None:
    for statement in _V2_TABLES.split(";"):
        if statement.strip():
            conn.execute(statement)


def create_schema(conn: sqlite3.Connection) -> None:
    """Create the current schema in an empty database (inside the caller's transaction)."""
    _create_v2(conn)
    conn.execute(_V3_COLUMNS)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _steps_from_json(text: str) -> list[StepRecord]:
    # v1 stored each step as [drafted, accepted, emitted, draft_s, verify_s, draft_forwards].
    return [
        StepRecord(
            drafted=int(s[0]),
            accepted=int(s[1]),
            emitted=int(s[2]),
            draft_s=float(s[3]),
            verify_s=float(s[4]),
            draft_forwards=int(s[5]),
        )
        for s in jsonsafe.loads(text, surrogates=True)
    ]


def _migrate_1_to_2(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE runs RENAME TO runs_v1")
    conn.execute("ALTER TABLE requests RENAME TO requests_v1")
    # The v1 index names do not clash with v2's; create the v2 tables alongside, copy, then drop v1.
    _create_v2(conn)
    conn.execute(
        "INSERT INTO runs (id, kind, status, started_at, updated_at, result_json) "
        "SELECT id, kind, CASE WHEN complete THEN 'complete' ELSE 'partial' END, started_at, started_at, "
        "result_json FROM runs_v1"
    )
    empty_emissions, empty_ids = pack_emissions(()), pack_ids(())
    rows = conn.execute(
        "SELECT run_id, seq, slot, draft, k, request_id, category, prompt_tokens, output_tokens, "
        "latency_s, ttft_s, steps_json FROM requests_v1"
    ).fetchall()
    for row in rows:
        steps = _steps_from_json(row[11])
        conn.execute(
            "INSERT INTO requests VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                *row[:11],
                0.0,  # prefill time was not recorded in v1
                "length",
                None,
                sum(s.accepted for s in steps),
                sum(s.drafted for s in steps),
                sum(1 for s in steps if s.drafted >= 1),
                pack_steps(steps),
                empty_emissions,
                empty_ids,
            ),
        )
    conn.execute("DROP TABLE requests_v1")
    conn.execute("DROP TABLE runs_v1")


def _migrate_2_to_3(conn: sqlite3.Connection) -> None:
    conn.execute(_V3_COLUMNS)  # every request stored so far finished, or its failure was not recorded


# MIGRATIONS[n] takes a store from version n to n + 1.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _migrate_1_to_2, 2: _migrate_2_to_3}


def migrate(conn: sqlite3.Connection, from_version: int) -> None:
    """Apply every migration from ``from_version`` up to SCHEMA_VERSION (inside the caller's transaction)."""
    version = from_version
    while version < SCHEMA_VERSION:
        MIGRATIONS[version](conn)
        version += 1
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
