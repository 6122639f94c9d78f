"""Files from outside, checked for what they are before they are read (issue 39, hostile inputs).

Opening a FIFO for reading blocks until a writer appears (forever, for a FIFO nobody writes); ``/dev/zero``
and ``/dev/urandom`` never end, so a reader that reads to the end grows without bound. Outputs already
refuse such paths (``report.outfile``); this module is the one place an input is refused: a path given as
an input file must be a regular file (a link to one is fine), and a FIFO, character or block device or
socket is :class:`InputError`, one line, before any byte of it is read.

:func:`special` says what a path is (``os.stat``, following links, so it never opens it); :func:`open_input`
opens a file without blocking (``O_NONBLOCK``: a FIFO that appears between the check and the open does not
block either), checks the opened descriptor again and reads it as a normal blocking file; :func:`read_bytes`
and :func:`read_text` read a whole file, refusing one larger than ``limit`` bytes without reading it.
:class:`InputError` is an ``OSError``, so a reader's ``except OSError`` turns it into its own one-line
error. No specmeter imports.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

__all__ = [
    "InputError",
    "bounded_lines",
    "check_input",
    "open_input",
    "read_bytes",
    "read_text",
    "special",
]

_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class InputError(OSError):
    """An input that is not a regular file, or larger than its reader reads; ``str`` is one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def _kind(mode: int) -> str | None:
    return next((what for test, what in _SPECIAL if test(mode)), None)


def special(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it is a FIFO, device or socket (``"a FIFO (named pipe)"``), else None: a regular
    file, a directory, or a path that does not exist (the reader says so in its own words)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return _kind(mode)


def _refused(what: str) -> InputError:
    return InputError(f"{what}, not a regular file; specmeter reads its inputs only from regular files")


def check_input(path: str | os.PathLike[str]) -> None:
    """Raise :class:`InputError` when ``path`` is a FIFO, a device or a socket (see the module docstring)."""
    what = special(path)
    if what is not None:
        raise _refused(what)


def open_input(path: str | os.PathLike[str], limit: int | None = None) -> BinaryIO:
    """``path`` opened for reading in binary, once it is known to be a regular file of at most ``limit``
    bytes (None: any size); :class:`InputError` otherwise, other ``OSError`` as ``open`` raises them."""
    check_input(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        what = _kind(info.st_mode)
        if what is not None or not stat.S_ISREG(info.st_mode):
            raise _refused(what or "not a regular file")
        if limit is not None and info.st_size > limit:
            raise InputError(f"{info.st_size:,} bytes, more than the {limit:,} this file may hold")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The whole regular file ``path`` (see :func:`open_input`)."""
    with open_input(path, limit) as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def read_text(path: str | os.PathLike[str], limit: int | None = None, encoding: str = "utf-8") -> str:
    """The whole regular file ``path`` as text (``UnicodeDecodeError`` as ``bytes.decode`` raises it)."""
    data = read_bytes(path, limit)
    if limit is not None and len(data) > limit:  # it grew after the check
        raise InputError(f"more than the {limit:,} bytes this file may hold")
    return data.decode(encoding)


def bounded_lines(fh: BinaryIO, limit: int, chunk: int = 1 << 20) -> Iterator[tuple[bytes | None, int]]:
    """The lines of ``fh`` as ``(line, size)``; a line longer than ``limit`` bytes is ``(None, size)``,
    read past in chunks and never held whole (a reader counts it as a bad line)."""
    while True:
        raw = fh.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw, len(raw)
            continue
        size = len(raw)
        while True:
            rest = fh.readline(chunk)
            size += len(rest)
            if not rest or rest.endswith(b"\n"):
                break
        yield None, size
