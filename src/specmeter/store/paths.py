"""Where the run store lives: ``$SPECMETER_STORE`` if set, else ``runs.sqlite`` in the user's data dir."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["STORE_ENV", "default_store_path"]

STORE_ENV = "SPECMETER_STORE"
STORE_FILE = "runs.sqlite"


def default_store_path() -> Path:
    """The store used when no ``--store`` is given (platformdirs: ~/.local/share/specmeter on Linux)."""
    override = os.environ.get(STORE_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("specmeter", appauthor=False)) / STORE_FILE
