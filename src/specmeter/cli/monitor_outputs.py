"""What every ``monitor`` mode writes to while it watches: the history store and the /metrics exporter.

Opened before the watch (a problem with either is one ``error:`` line, exit 2; where the default history
is, is said on stderr) and closed when it ends; Ctrl-C (and SIGTERM) ends a watch with one line and exit 130.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from specmeter.cli.common import EXIT_INTERRUPTED, err_console, fail

if TYPE_CHECKING:
    from specmeter.monitoring.exporter import GaugeExporter
    from specmeter.monitoring.store import HistoryStore

__all__ = ["watching"]


@contextmanager
def watching(
    history: Path, exporter: GaugeExporter, port: int | None, host: str, *, announce: bool = False
) -> Iterator[HistoryStore]:
    """The history store at ``history`` (said on stderr with ``announce``: the default, which the user did
    not name), and ``exporter`` serving on ``port`` when one is given."""
    from specmeter.monitoring.store import HistoryStore

    try:
        store = HistoryStore(history)
    except Exception as e:  # sqlite3 errors name the problem (unwritable directory, not a database)
        fail(f"--history {history}: {e}")
    if announce:
        err_console.print(f"history in {history}", markup=False, highlight=False, soft_wrap=True)
    try:
        if port is not None:
            try:
                bound = exporter.serve(port, host)
            except OSError as e:
                fail(f"--export-port {port}: {e.strerror or e}")
            err_console.print(f"derived metrics on http://{host}:{bound}/metrics")
        yield store
    except KeyboardInterrupt:
        err_console.print(f"stopped; history in {history}")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        exporter.close()
        store.close()
