"""RunRecorder: how a command (bench, tune, select, load, demo) writes its run into the store as it goes.

Usage, with ``result`` the docs/results.md dict as it stands::

    recorder = RunRecorder.start(store_path, result)   # a partial run; store_path None = record nothing
    recorder.add_request("draft@k=4", "draft", 4, record)  # committed at once
    recorder.finish(final_result)                       # complete (complete=False: stays partial)

A measurement must never be lost to the store: if a write fails mid-run (disk full, store locked for too
long) the recorder warns once on stderr and stops recording, and the command carries on writing its
other outputs.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from specmeter.metrics.records import RequestRecord
from specmeter.store.db import RunStore, StoreError

__all__ = ["RunRecorder"]


class RunRecorder:
    def __init__(self, store: RunStore | None, run_id: int | None) -> None:
        self._store = store
        self.run_id = run_id
        self.path = store.path if store is not None else None
        self.failed = False

    @classmethod
    def start(cls, path: Path | None, result: Mapping[str, Any], *, note: str = "") -> RunRecorder:
        """Open the store and create a partial run; raises StoreError when the store is unusable."""
        if path is None:
            return cls(None, None)
        store = RunStore(path)
        try:
            run_id = store.begin_run(result, note=note)
        except sqlite3.Error as e:
            store.close()
            raise StoreError(f"{path}: cannot record the run ({e})") from e
        return cls(store, run_id)

    @property
    def recorded(self) -> bool:
        """True when the run is in the store and every write so far succeeded."""
        return self.run_id is not None and not self.failed

    def _write(self, action: str, write: Callable[[RunStore, int], object]) -> None:
        """One write into the run; when it fails, warn once and stop recording (the other outputs go on)."""
        if self._store is None or self.run_id is None:
            return
        try:
            write(self._store, self.run_id)
        except (sqlite3.Error, StoreError) as e:
            print(
                f"warning: run store {self.path}: {action} failed ({e}); this run is no longer recorded "
                "there (the other outputs are unaffected)",
                file=sys.stderr,
            )
            self.failed = True
            self.close()

    def add_request(self, slot: str, draft: str | None, k: int, record: RequestRecord) -> None:
        self._write("adding a request", lambda store, run: store.add_request(run, slot, draft, k, record))

    def add_requests(self, rows: Sequence[tuple[str, str | None, int, RequestRecord]]) -> None:
        """Many (slot, draft, k, record) rows in one transaction (a replay's thousands of requests)."""
        self._write("adding requests", lambda store, run: store.add_requests(run, rows))

    def save(self, result: Mapping[str, Any]) -> None:
        """Store the result so far; the run stays partial."""
        self._write("saving the result", lambda store, run: store.save_result(run, result, complete=False))

    def finish(self, result: Mapping[str, Any], *, complete: bool = True) -> None:
        """Store the final result, mark the run complete (unless told it is not) and close the store."""
        self._write("finishing the run", lambda store, run: store.save_result(run, result, complete=complete))
        self.close()

    def discard(self) -> None:
        """Delete the run (nothing was measured: an empty partial run would only clutter the history)."""
        self._write("deleting the empty run", lambda store, run: store.delete_run(run))
        self.run_id = None
        self.close()

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
        self._store = None
