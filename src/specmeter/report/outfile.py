"""Writing an output file without destroying anything: the one owner of "may this path be written" (issue 29).

Every file specmeter writes (result JSON, per-request CSV and logs, HTML reports, golden sets, the alerts
log, the vLLM schedule) is written through :func:`write_text_atomic` or :func:`open_for_writing`, and every
command checks its outputs up front with :func:`refusal` (through ``measuring.check_output_paths``). The
rule, stated in docs/results.md ("Replacing files"):

* A **symbolic link** at the output path is refused: a file written atomically (a temporary file renamed
  into place) would replace the link itself, and one opened in place would write wherever it points.
* A **device, FIFO or socket** is refused: renaming over ``/dev/null`` turns the device into a regular file,
  and opening a FIFO blocks until someone reads it. An output is only ever a regular file.
* An existing **regular file** is replaced (or, for the logs and stores specmeter appends to, appended to)
  only when it is empty or is a specmeter output of the same kind, recognized by its content
  (:data:`FORMATS`): result JSON files start with ``schema_version`` and ``kind``, the CSV with specmeter's
  header, a per-request log with a ``run`` field, an HTML report with its generator tag, and so on.
  Anything else needs ``--force`` (the CLI's :func:`replacing_allowed`). A SQLite file that is not a
  specmeter store of that kind is never written into, not even with ``--force``.

The up-front check runs before any work; the same check runs again at the moment of writing (on the path's
``lstat``), because a file, link or FIFO may appear at the path during a long run. ``--force`` covers exactly
the files that were there when the command checked its outputs (:func:`refusal` remembers them by device
and inode); a file that appears later is still refused. A refusal while writing raises
:class:`OutputRefused`, one line naming the path.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = [
    "FORMATS",
    "Format",
    "OutputRefused",
    "forced",
    "formats_for",
    "open_for_writing",
    "recognized",
    "refusal",
    "replacing_allowed",
    "write_text_atomic",
]

PathLike = str | os.PathLike[str]

_HEAD = 64 * 1024  # bytes read to recognize a file: formats are recognized by how they start
_SMALL = 1024 * 1024  # a schedule file larger than this is not one specmeter wrote


class OutputRefused(Exception):
    """An output path that may not be written (a link, a device, someone else's file): one line."""


@dataclass(frozen=True)
class Format:
    """One kind of file specmeter writes: its name in messages, how to recognize one, and whether it is
    appended to (a log, a store) rather than replaced."""

    name: str
    what: str  # "a specmeter result JSON", as the refusal says it
    recognize: Callable[[Path], bool]
    appended: bool = False
    database: bool = False  # never written into unless recognized, --force or not


def _head(path: Path, size: int = _HEAD) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(size)


def _first_line(path: Path) -> bytes:
    return _head(path).split(b"\n", 1)[0]


_RESULT_JSON = re.compile(rb'\A\s*\{\s*"schema_version"\s*:\s*\d+\s*,\s*"kind"\s*:\s*"')
_ROW_LOG = re.compile(rb'\A\{\s*"run"\s*:')
_CSV_HEAD = b"run,draft,k,id,"  # the first columns of report.files.CSV_COLUMNS
_HTML_MARK = re.compile(rb"<meta name=.generator. content=.specmeter|<title>specmeter report", re.IGNORECASE)
_PNG = b"\x89PNG\r\n\x1a\n"
_SQLITE = b"SQLite format 3\x00"


def _json_object_line(path: Path) -> dict[str, object] | None:
    line = _first_line(path)
    try:
        value = json.loads(line)
    except ValueError:  # also a line cut at _HEAD: such a first line is not one specmeter wrote
        return None
    return value if isinstance(value, dict) else None


def _is_result_json(path: Path) -> bool:
    return _RESULT_JSON.match(_head(path)) is not None


def _is_schedule(path: Path) -> bool:
    if path.stat().st_size > _SMALL:
        return False
    try:
        value = json.loads(path.read_bytes())
    except ValueError:
        return False
    return isinstance(value, dict) and "num_speculative_tokens_per_batch_size" in value


def _is_csv(path: Path) -> bool:
    return _head(path, len(_CSV_HEAD)) == _CSV_HEAD


def _is_row_log(path: Path) -> bool:
    return _ROW_LOG.match(_head(path)) is not None


def _is_golden(path: Path) -> bool:
    line = _json_object_line(path)
    return line is not None and {"id", "category", "source"} <= line.keys()


def _is_alerts(path: Path) -> bool:
    line = _json_object_line(path)
    return line is not None and {"time", "target", "rule", "state", "message"} <= line.keys()


def _is_html(path: Path) -> bool:
    return _HTML_MARK.search(_head(path, 4096)) is not None


def _is_png(path: Path) -> bool:
    return _head(path, len(_PNG)) == _PNG


def _sqlite_tables(path: Path) -> set[str] | None:
    if _head(path, len(_SQLITE)) != _SQLITE:
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return None


def _any(path: Path) -> bool:
    # The run store tells its own files from any other (PRAGMA application_id) and refuses the rest with its
    # own message before writing anything (store.db.RunStore): here only links and devices are refused.
    return True


def _is_history(path: Path) -> bool:
    return {"windows", "alerts"} <= (_sqlite_tables(path) or set())


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format(
            "json", "a specmeter JSON file (one that starts with schema_version and kind)", _is_result_json
        ),
        Format("schedule", "a speculative config written by sweep --schedule-out", _is_schedule),
        Format("csv", "a specmeter per-request CSV", _is_csv),
        Format("log", "a specmeter per-request log", _is_row_log),
        Format("golden", "a golden set written by specmeter golden", _is_golden),
        Format("alerts", "a specmeter alerts log", _is_alerts, appended=True),
        Format("html", "a specmeter HTML report", _is_html),
        Format("png", "a PNG image", _is_png),
        Format("store", "a specmeter run store", _any, appended=True, database=True),
        Format("history", "a specmeter monitor history", _is_history, appended=True, database=True),
    )
}

# What each option writes, for the up-front check (the writer names its own format when it writes).
_BY_OPTION = {
    "--json": ("json",),
    "--csv": ("csv",),
    "--log": ("log",),
    "--alerts-log": ("alerts",),
    "--schedule-out": ("schedule",),
    "--screenshot": ("png",),
    "--store": ("store",),
    "--history": ("history",),
}
_BY_SUFFIX = {
    ".json": ("json",),
    ".csv": ("csv",),
    ".jsonl": ("log", "golden"),
    ".html": ("html",),
    ".htm": ("html",),
    ".png": ("png",),
}


def formats_for(option: str, path: PathLike) -> tuple[Format, ...]:
    """The formats an output option may find at its path: by the option (``--json``, ``--csv``, ``--log``,
    ``--store`` …), else by the file's suffix (``--out report.html``); every file format (not the stores)
    when neither says."""
    names = _BY_OPTION.get(option.split()[0]) or _BY_SUFFIX.get(Path(path).suffix.lower())
    return tuple(FORMATS[n] for n in names) if names else tuple(f for f in FORMATS.values() if not f.database)


def recognized(path: PathLike, formats: tuple[Format, ...]) -> bool:
    """Whether the existing regular file ``path`` is empty or a specmeter output in one of ``formats``."""
    p = Path(path)
    try:
        if p.stat().st_size == 0:
            return True
        return any(f.recognize(p) for f in formats)
    except OSError:  # unreadable: it cannot be told apart from someone else's file
        return False


# ------------------------------------------------------------------------------------------ --force

_FORCE: contextvars.ContextVar[bool] = contextvars.ContextVar("specmeter_force", default=False)
_APPROVED: set[tuple[int, int]] = set()  # (device, inode) of files --force allowed to replace


@contextlib.contextmanager
def replacing_allowed(force: bool = True) -> Iterator[None]:
    """Within the block, the up-front check lets existing files that are not specmeter's be replaced
    (``--force``); links, devices and other SQLite files are still refused."""
    token = _FORCE.set(force)
    try:
        yield
    finally:
        _FORCE.reset(token)


def forced() -> bool:
    """Whether ``--force`` is in effect (:func:`replacing_allowed`)."""
    return _FORCE.get()


# ------------------------------------------------------------------------------------------ the rule

_SPECIAL = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:  # missing, or a parent that is a file or unreadable: the directory checks say so
        return None


def refusal(
    option: str, path: PathLike, formats: tuple[Format, ...] | None = None, *, force: bool | None = None
) -> str | None:
    """Why ``path`` may not be written as ``option``'s output (``"--json out.json: …"``, one line), or None.

    ``formats`` are the kinds of file that may be replaced there (default: :func:`formats_for`), ``force``
    whether someone else's regular file may be (default: :func:`forced`). A forced file is remembered (by
    device and inode), so the writer replaces it later without asking again.
    """
    p = Path(path)
    why = _why(
        p, formats_for(option, p) if formats is None else formats, forced() if force is None else force
    )
    return None if why is None else f"{option}: {why}"


def _why(p: Path, formats: tuple[Format, ...], force: bool) -> str | None:
    st = _lstat(p)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        return (
            f"{p} is a symbolic link; specmeter never writes through a link or replaces one (give the file "
            "itself)"
        )
    for test, what in _SPECIAL:
        if test(st.st_mode):
            return f"{p} is {what}, not a regular file; an output is only ever written to a regular file"
    if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in _APPROVED or recognized(p, formats):
        return None  # a directory is the directory checks' business
    what = " or ".join(f.what for f in formats) if len(formats) <= 2 else "a specmeter output"
    if all(f.database for f in formats):
        return f"{p} exists and is not {what}; specmeter never writes into another file there, --force or not"
    if force:
        _APPROVED.add((st.st_dev, st.st_ino))
        return None
    verb = "append to" if all(f.appended for f in formats) else "replace"
    return f"{p} exists and is not {what} (use --force to {verb} it)"


def _check(path: Path, fmt: Format) -> None:
    why = _why(path, (fmt,), force=False)
    if why is not None:
        raise OutputRefused(why)


def _written(path: Path) -> None:
    """Forget an approval once its file is replaced: a later file reusing the inode number is not covered."""
    st = _lstat(path)
    if st is not None:
        _APPROVED.discard((st.st_dev, st.st_ino))


# ------------------------------------------------------------------------------------------ writing


def _umask() -> int:
    """The process's umask: read from /proc on Linux (without changing it); elsewhere set and restored."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def plain_file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file (0666 less the umask: 0644 under the usual 022).

    An atomic write goes through ``tempfile.mkstemp``, which creates its file 0600 whatever the umask; the
    result files are set to this mode before they are renamed into place, so JSON and HTML outputs are
    readable exactly like the CSV and JSONL files written beside them.
    """
    return 0o666 & ~_umask()


def write_text_atomic(path: PathLike, text: str, fmt: Format, *, fsync: bool = True) -> None:
    """Write ``text`` to ``path`` so that readers only ever see a whole file (a temporary file beside it,
    renamed into place), after checking the path as :func:`refusal` does; raises :class:`OutputRefused`.

    The temporary file lives in the target directory because ``os.replace`` is only atomic within one file
    system. The path is checked again just before the rename: a link or FIFO that appeared while the text
    was written is refused, not replaced.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _check(target, fmt)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        # A lone surrogate (from a server's text) is written as its escape: the same string, read back.
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as fh:
            fh.write(text)
            fh.flush()
            if (
                fsync
            ):  # without it a crash right after the rename can leave an empty file on some file systems
                os.fsync(fh.fileno())
        os.chmod(tmp, plain_file_mode())  # mkstemp's 0600 → what a plain open() would have given
        _check(target, fmt)
        _written(target)
        os.replace(tmp, target)
    except BaseException:
        # Also on KeyboardInterrupt: never leave stray temp files next to the result.
        Path(tmp).unlink(missing_ok=True)
        raise


def open_for_writing(
    path: PathLike, fmt: Format, *, append: bool = False, newline: str | None = None, buffering: int = -1
) -> IO[str]:
    """``path`` opened for text (UTF-8, lone surrogates as escapes), truncated or with ``append`` appended
    to, after checking it as :func:`refusal` does; raises :class:`OutputRefused`.

    The file is opened without following a link and without blocking on a FIFO, and what was opened is
    checked to be a regular file, so a link or FIFO that appears between the check and the open is refused
    too.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _check(target, fmt)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | (os.O_APPEND if append else 0)
    try:
        fd = os.open(target, flags, 0o666)
    except OSError:  # ELOOP (a link) or ENXIO (a FIFO nobody reads) appeared since the check: say which
        _check(target, fmt)
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutputRefused(
                f"{target} is not a regular file; an output is only ever written to a regular file"
            )
        os.set_blocking(fd, True)
        if not append:
            os.ftruncate(fd, 0)
        _written(target)
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "w", encoding="utf-8", errors="backslashreplace", newline=newline, buffering=buffering)
