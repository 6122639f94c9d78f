"""A replay's other outputs: the HTML report (``report.html``'s, as for bench) and the run store."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specmeter.metrics.records import RequestRecord
from specmeter.store import StoreError
from specmeter.store.recorder import RunRecorder

__all__ = ["record_run", "write_html"]


def write_html(path: Path, result: Mapping[str, Any]) -> None:
    from specmeter.report.html import render_report, write_report

    note = "Replay: acceptance from logged responses; no time was measured, so every timing figure is empty."
    write_report(path, render_report(result, source=str(path), notes=[note]))


def record_run(
    store: Path | None, result: Mapping[str, Any], rows: Sequence[tuple[str, str | None, int, RequestRecord]]
) -> int | None:
    """Record the result and its per-request rows in the run store; the run id (None: not recorded)."""
    if store is None:
        return None
    try:
        recorder = RunRecorder.start(store, result)
    except StoreError as e:
        print(f"warning: {e}; the run is not recorded there", file=sys.stderr)
        return None
    recorder.add_requests(rows)
    recorder.finish(result)
    return recorder.run_id if recorder.recorded else None
