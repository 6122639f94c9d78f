"""Helpers shared by commands: one-line user errors, option parsing, the console."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

# Redirected to a file or CI log, rich would wrap the result tables at 80 columns; 120 keeps rows whole.
# COLUMNS still wins when set.
console = Console(
    stderr=False, highlight=False, width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 120
)
err_console = Console(stderr=True, highlight=False)

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Stop with a user-facing error: one line (or one line per problem), no traceback."""
    for line in message.splitlines() or [message]:
        err_console.print(f"[bold red]error:[/] {line}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def parse_int_list(value: str, option: str) -> list[int]:
    """``"4"`` or ``"1,2,4,8"`` -> sorted unique positive ints; a bad value fails naming the option."""
    out: list[int] = []
    for part in value.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            fail(f"{option}: {value!r} is not a positive integer or a comma-separated list of them")
        out.append(int(part))
    return sorted(set(out))


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def resolve_store(store: Path | None, no_store: bool) -> Path | None:
    """The run store a measuring command records into: ``--store``, else the default; None with --no-store."""
    from specmeter.store.paths import default_store_path

    return None if no_store else store or default_store_path()
