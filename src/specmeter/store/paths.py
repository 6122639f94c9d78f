"""Where the run store lives: ``$SPECMETER_STORE`` if set, else ``runs.sqlite`` in the user's data dir; and
``monitor``'s history, beside it (``monitor.sqlite``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["STORE_ENV", "default_history_path", "default_store_path"]

STORE_ENV = "SPECMETER_STORE"
STORE_FILE = "runs.sqlite"
HISTORY_FILE = "monitor.sqlite"


def default_store_path() -> Path:
    """The store used when no ``--store`` is given (platformdirs: ~/.local/share/specmeter on Linux)."""
    override = os.environ.get(STORE_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("specmeter", appauthor=False)) / STORE_FILE


def default_history_path() -> Path:
    """``monitor``'s history when no ``--history`` is given: ``monitor.sqlite`` in the run store's directory
    (the user data dir, or ``$SPECMETER_STORE``'s), never a file dropped in the working directory."""
    return default_store_path().with_name(HISTORY_FILE)
