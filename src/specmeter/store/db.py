"""The run store: every bench-like run, its whole result and its per-request records, in one SQLite file.

Durability rules, because a store holds weeks of measurements:

- WAL journal and one transaction per write: a crash or Ctrl-C at any point leaves every earlier run
  intact and the current run readable up to its last committed request.
- A run is created ``partial`` before decoding starts and only becomes ``complete`` at the very end, so
  a run that was killed is visibly partial, never silently short.
- Opening migrates an older store forward (``store.schema``) and refuses a newer one, so an old
  specmeter never damages what a new one wrote.

No torch here: listing or comparing runs must load fast.
"""

from __future__ import annotations

import json
import sqlite3
import struct
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

from specmeter import __version__, jsonsafe
from specmeter.methods import is_method_spec
from specmeter.metrics.records import RequestRecord
from specmeter.safetext import valid_text
from specmeter.store.packing import (
    pack_emissions,
    pack_ids,
    pack_steps,
    unpack_emissions,
    unpack_ids,
    unpack_steps,
)
from specmeter.store.schema import APPLICATION_ID, SCHEMA_VERSION, create_schema, migrate

__all__ = ["RunInfo", "RunStore", "StoreError", "StoredRequest", "run_description"]

_BUSY_TIMEOUT_MS = 10_000
_TABLES = ("meta", "runs", "requests")


class StoreError(ValueError):
    """A run-store problem the user can act on; the message is one line naming the store or run."""


@dataclass(frozen=True)
class RunInfo:
    """One row of ``runs list``."""

    id: int
    kind: str
    status: str  # "partial" or "complete"
    started_at: str
    updated_at: str
    label: str
    note: str
    requests: int


@dataclass(frozen=True)
class StoredRequest:
    """A request record and the run it belongs to (``slot``: ``records.run_label``, e.g. "draft@k=4")."""

    slot: str
    draft: str | None
    k: int
    record: RequestRecord


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_description(result: Mapping[str, Any]) -> str:
    """A short human description of a run for listings: target and drafts."""
    config = result.get("run", {}).get("config", {}) if isinstance(result.get("run"), Mapping) else {}
    target = Path(str(config.get("target", "?"))).name
    drafts = config.get("drafts") or []
    # A method spec stays whole (``ngram:min=2,max=4``, ``eagle:head=DIR``); a directory shows its name.
    names = (
        ", ".join(str(d) if is_method_spec(str(d)) else Path(str(d)).name for d in drafts)
        if isinstance(drafts, list)
        else ""
    )
    return f"{target} ← {names}" if names else target


class RunStore:
    """A connection to one store file. Not thread-safe: use one RunStore per thread."""

    def __init__(self, path: Path | str, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.is_file():
            raise StoreError(f"no run store at {self.path} (run a bench first, or pass --store PATH)")
        if self.path.exists() and not self.path.is_file():
            raise StoreError(f"{self.path}: the run store path is not a file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Autocommit mode; transactions are opened explicitly by _write().
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=_BUSY_TIMEOUT_MS / 1000)
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"{self.path}: cannot open the run store ({e})") from e
        try:
            self._setup()
        except sqlite3.DatabaseError as e:
            self._conn.close()
            raise StoreError(f"{self.path}: not a usable run store ({e})") from e
        except StoreError:
            self._conn.close()
            raise

    # ------------------------------------------------------------------------------------ set-up

    def _setup(self) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables and version == 0:
            self._enable_wal()
            with self._write():
                create_schema(conn)
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('created_by', ?), ('created_at', ?)",
                    (f"specmeter {__version__}", _now()),
                )
            return
        # Version 1 predates the application id; recognise it by its tables.
        ours = app_id == APPLICATION_ID or (app_id == 0 and version == 1 and {"runs", "requests"} <= tables)
        if not ours:
            raise StoreError(f"{self.path}: this SQLite file is not a specmeter run store")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: store schema version {version} is newer than this specmeter supports "
                f"({SCHEMA_VERSION}); upgrade specmeter"
            )
        self._enable_wal()
        if version < SCHEMA_VERSION:
            with self._write():
                migrate(conn, version)
        missing = [t for t in _TABLES if t not in tables] if version == SCHEMA_VERSION else []
        if missing:  # a table dropped by hand or another tool: every read would fail on it
            raise StoreError(f"{self.path}: the run store is damaged: table {', '.join(missing)} is missing")

    def _enable_wal(self) -> None:
        # WAL lets `runs list` read while a bench writes; NORMAL sync is crash-safe in WAL mode (a power
        # cut can lose the last commits, never corrupt the file).
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One IMMEDIATE transaction: all of the block is committed, or none of it."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    @property
    def schema_version(self) -> int:
        return int(self._conn.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        self._conn.close()

    def check_writable(self) -> None:
        """StoreError unless a run can be written here (a read-only file, directory or mount says so only
        at the first write: this takes the write lock and lets it go, writing nothing)."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.execute("ROLLBACK")
        except sqlite3.Error as e:
            raise StoreError(f"{self.path}: cannot record a run there ({e})") from e

    def __enter__(self) -> RunStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------------------------ writing

    def begin_run(self, result: Mapping[str, Any], *, note: str = "") -> int:
        """Create a partial run holding ``result`` (config, environment, models so far); returns its id."""
        kind = str(result.get("kind", "bench"))
        run = result.get("run") if isinstance(result.get("run"), Mapping) else {}
        started = str((run or {}).get("started_at") or _now())
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO runs (kind, status, started_at, updated_at, label, note, specmeter_version, "
                "result_json) VALUES (?, 'partial', ?, ?, ?, ?, ?, ?)",
                (
                    kind,
                    started,
                    _now(),
                    _text(run_description(result)),
                    _text(note),
                    __version__,
                    _dumps(result),
                ),
            )
            run_id = cur.lastrowid
        assert run_id is not None
        return int(run_id)

    def add_requests(self, run_id: int, rows: Sequence[tuple[str, str | None, int, RequestRecord]]) -> None:
        """Append (slot, draft, k, record) rows to a run, in one transaction."""
        with self._write() as conn:
            (seq,) = conn.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM requests WHERE run_id = ?", (run_id,)
            ).fetchone()
            for offset, (slot, draft, k, rec) in enumerate(rows):
                conn.execute(
                    "INSERT INTO requests VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        run_id, seq + offset, slot, draft, k, _text(rec.id), _text(rec.category),
                        rec.prompt_tokens, rec.output_tokens, rec.latency_s, rec.ttft_s, rec.prefill_s,
                        _text(rec.finish_reason),
                        None if rec.matches_baseline is None else int(rec.matches_baseline),
                        sum(s.accepted for s in rec.steps), sum(s.drafted for s in rec.steps),
                        sum(1 for s in rec.steps if s.drafted >= 1), pack_steps(rec.steps),
                        pack_emissions(rec.emissions), pack_ids(rec.output_ids), _text(rec.error),
                    ),
                )  # fmt: skip

    def add_request(self, run_id: int, slot: str, draft: str | None, k: int, record: RequestRecord) -> None:
        self.add_requests(run_id, [(slot, draft, k, record)])

    def save_result(self, run_id: int, result: Mapping[str, Any], *, complete: bool | None = None) -> None:
        """Replace the run's result; ``complete`` True/False also sets its status (None leaves it)."""
        with self._write() as conn:
            params: tuple[Any, ...] = (_dumps(result), _now(), _text(run_description(result)), run_id)
            cur = conn.execute(
                "UPDATE runs SET result_json = ?, updated_at = ?, label = ? WHERE id = ?", params
            )
            if cur.rowcount == 0:
                raise StoreError(f"{self.path}: run {run_id} does not exist")
            if complete is not None:
                status = "complete" if complete else "partial"
                conn.execute("UPDATE runs SET status = ? WHERE id = ?", (status, run_id))

    def set_note(self, run_id: int, note: str) -> None:
        with self._write() as conn:
            if conn.execute("UPDATE runs SET note = ? WHERE id = ?", (_text(note), run_id)).rowcount == 0:
                raise StoreError(f"{self.path}: no run {run_id}")

    def delete_run(self, run_id: int) -> None:
        with self._write() as conn:
            if conn.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount == 0:
                raise StoreError(f"{self.path}: no run {run_id}")

    # ------------------------------------------------------------------------------------ reading

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A read whose SQLite error (a damaged file, a table of another shape) is one StoreError line."""
        try:
            yield self._conn
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{self.path}: the run store is damaged ({e})") from e

    def list_runs(
        self, *, limit: int | None = None, kind: str | None = None, run_id: int | None = None
    ) -> list[RunInfo]:
        """Runs, newest first, with how many request records each holds."""
        sql = (
            "SELECT r.id, r.kind, r.status, r.started_at, r.updated_at, r.label, r.note, "
            "(SELECT COUNT(*) FROM requests q WHERE q.run_id = r.id) FROM runs r WHERE 1"
        )
        params: list[Any] = []
        if kind is not None:
            sql += " AND r.kind = ?"
            params.append(kind)
        if run_id is not None:
            sql += " AND r.id = ?"
            params.append(run_id)
        sql += " ORDER BY r.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._reading() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [_run_info(row) for row in rows]

    def run_info(self, run_id: int) -> RunInfo:
        rows = self.list_runs(run_id=run_id)
        if not rows:
            raise StoreError(f"{self.path}: no run {run_id}")
        return rows[0]

    def resolve(self, ref: str) -> int:
        """A run id from ``ref``: a number, ``latest``, or ``latest~N`` (N runs before the latest)."""
        text = ref.strip()
        if text.isdigit():
            run_id = int(text)
            with self._reading() as conn:
                found = (
                    run_id <= 2**63 - 1
                    and conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone()
                )
            if not found:
                raise StoreError(f"{self.path}: no run {run_id} (see `specmeter runs list`)")
            return run_id
        if text == "latest" or text.startswith("latest~"):
            back = text.removeprefix("latest").removeprefix("~") or "0"
            if not back.isdigit():
                raise StoreError(f"run {ref!r}: expected latest or latest~N")
            with self._reading() as conn:
                row = conn.execute(
                    "SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?", (min(int(back), 2**63 - 1),)
                ).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: there is no run {ref!r} (the store has fewer runs)")
            return int(row[0])
        raise StoreError(f"run {ref!r}: expected a run id, latest, latest~N, or a result JSON file")

    def newest_with_slot(self, slot: str) -> int | None:
        """The newest run holding requests of ``slot`` (``draft@k=4``), or None."""
        with self._reading() as conn:
            row = conn.execute(
                "SELECT run_id FROM requests WHERE slot = ? ORDER BY run_id DESC LIMIT 1", (slot,)
            ).fetchone()
        return None if row is None else int(row[0])

    def result(self, run_id: int) -> dict[str, Any]:
        """The run's result dict; StoreError (one line naming the run) when its row is not a JSON object."""
        with self._reading() as conn:
            row = conn.execute("SELECT result_json FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no run {run_id}")
        try:
            data = jsonsafe.loads(row[0], surrogates=True)
        except json.JSONDecodeError as e:
            where = f"{e.msg} at column {e.colno}"
            raise StoreError(
                f"{self.path}: run {run_id}: its stored result is not readable JSON ({where})"
            ) from None
        except (TypeError, ValueError) as e:  # NULL, a blob, bytes that are not UTF-8
            raise StoreError(f"{self.path}: run {run_id}: its stored result is not readable ({e})") from None
        if not isinstance(data, dict):
            raise StoreError(
                f"{self.path}: run {run_id}: its stored result is not a JSON object ({type(data).__name__})"
            )
        return data

    def requests(self, run_id: int) -> list[StoredRequest]:
        """The run's request records in the order they were recorded."""
        with self._reading() as conn:
            rows = conn.execute(
                "SELECT slot, draft, k, request_id, category, prompt_tokens, output_tokens, latency_s, "
                "ttft_s, prefill_s, finish_reason, matches_baseline, steps, emissions, output_ids, error "
                "FROM requests WHERE run_id = ? ORDER BY seq",
                (run_id,),
            ).fetchall()
        out = []
        for n, row in enumerate(rows, start=1):
            try:
                record = RequestRecord(
                    id=row[3], category=row[4], prompt_tokens=row[5], output_tokens=row[6], latency_s=row[7],
                    ttft_s=row[8], prefill_s=row[9], steps=unpack_steps(row[12]),
                    emissions=unpack_emissions(row[13]), output_ids=unpack_ids(row[14]),
                    finish_reason=row[10], matches_baseline=None if row[11] is None else bool(row[11]),
                    error=row[15],
                )  # fmt: skip
            except (ValueError, TypeError, IndexError, struct.error, zlib.error) as e:  # a damaged blob
                raise StoreError(
                    f"{self.path}: run {run_id}: request record {n} ({row[3]!r}) is not readable ({e})"
                ) from None
            out.append(StoredRequest(slot=row[0], draft=row[1], k=row[2], record=record))
        return out


def _text(value: str | None) -> str | None:
    """A text column as SQLite can store it: a lone surrogate (a server's error text can hold one; SQLite
    raises UnicodeEncodeError on it) as its escape, ``\\ud800``; any other text unchanged."""
    return None if value is None else valid_text(value)


def _run_info(row: Sequence[Any]) -> RunInfo:
    """A ``runs`` row; a text column of another type (written by another tool) as text, never a crash."""
    kind, status, started, updated, label, note = ("" if v is None else str(v) for v in row[1:7])
    return RunInfo(int(row[0]), kind, status, started, updated, label, note, int(row[7]))


def _dumps(result: Mapping[str, Any]) -> str:
    """The result as stored; a lone surrogate (SQLite refuses one) as its JSON escape: the same string."""
    text = json.dumps(result, ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
