"""The monitor's history in SQLite: one row per window and one per alert transition.

Plain columns for the figures people query (α, τ, tokens/s), JSON text for the per-position list. Every
insert is committed at once, so the history survives the monitor being killed; WAL mode lets a dashboard
or ``sqlite3`` read the file while the monitor writes it.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

from specmeter.monitoring.alerts import AlertEvent
from specmeter.monitoring.windows import Window

__all__ = ["HistoryStore"]

_SQLITE_INT_MAX = 2**63 - 1


def _integer(value: int | None) -> int | float | None:
    """A count as SQLite can store it: past its 64-bit INTEGER (a scraped counter of 1e308, which a server
    can send) the count is stored as a REAL, what Prometheus' own samples are, instead of OverflowError."""
    if value is not None and not -_SQLITE_INT_MAX <= value <= _SQLITE_INT_MAX:
        return float(value) if abs(value) < 1e308 else math.copysign(math.inf, value)
    return value


_SCHEMA = """
CREATE TABLE IF NOT EXISTS windows (
    id INTEGER PRIMARY KEY,
    target TEXT NOT NULL,
    kind TEXT NOT NULL,
    t_start REAL NOT NULL,
    t_end REAL NOT NULL,
    source TEXT,
    acceptance_rate REAL,
    acceptance_length REAL,
    beta REAL,
    steps INTEGER,
    drafted_tokens INTEGER,
    accepted_tokens INTEGER,
    generation_tokens REAL,
    tokens_per_s REAL,
    drafts_per_s REAL,
    per_position TEXT,
    resets TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS windows_target_time ON windows (target, t_end);
CREATE TABLE IF NOT EXISTS alerts (
    id INTEGER PRIMARY KEY,
    time TEXT NOT NULL,
    target TEXT NOT NULL,
    rule TEXT NOT NULL,
    state TEXT NOT NULL,
    value REAL,
    threshold REAL,
    message TEXT NOT NULL
);
"""


class HistoryStore:
    def __init__(self, path: Path | str) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        # check_same_thread=False: the monitor writes from its event loop thread only, but tests and the
        # exporter may read from another thread; SQLite itself serialises access.
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._db.commit()

    def add_window(self, w: Window) -> None:
        a = w.acceptance
        self._db.execute(
            "INSERT INTO windows (target, kind, t_start, t_end, source, acceptance_rate, acceptance_length,"
            " beta, steps, drafted_tokens, accepted_tokens, generation_tokens, tokens_per_s, drafts_per_s,"
            " per_position, resets, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                w.target,
                w.kind,
                w.t_start,
                w.t_end,
                None if a is None else a.source,
                None if a is None else a.acceptance_rate,
                None if a is None else a.acceptance_length,
                None if a is None else a.beta,
                None if a is None else _integer(a.steps),
                None if a is None else _integer(a.drafted_tokens),
                None if a is None else _integer(a.accepted_tokens),
                None if a is None else a.generation_tokens,
                None if a is None else a.tokens_per_s,
                None if a is None else a.drafts_per_s,
                None if a is None or a.per_position is None else json.dumps(a.per_position),
                None if a is None or not a.resets else json.dumps(list(a.resets)),
                w.error,
            ),
        )
        self._db.commit()

    def add_alert(self, e: AlertEvent) -> None:
        self._db.execute(
            "INSERT INTO alerts (time, target, rule, state, value, threshold, message)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (e.time, e.target, e.rule, e.state, e.value, e.threshold, e.message),
        )
        self._db.commit()

    def windows(self, target: str | None = None) -> list[dict[str, Any]]:
        return self._rows("windows", target)

    def alerts(self, target: str | None = None) -> list[dict[str, Any]]:
        return self._rows("alerts", target)

    def _rows(self, table: str, target: str | None) -> list[dict[str, Any]]:
        query = f"SELECT * FROM {table}" + (" WHERE target = ?" if target else "") + " ORDER BY id"
        cursor = self._db.execute(query, (target,) if target else ())
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def close(self) -> None:
        self._db.close()
