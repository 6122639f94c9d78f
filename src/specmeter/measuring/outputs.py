"""Output paths checked before anything is measured: outputs never overwrite inputs or each other.

One function for every command that writes files (``bench`` … ``runs export``, ``report``, ``train``),
so a mistake costs a second instead of a run (or the golden set it was measured on). Each path is named by
its option in the message.

The policy, the same for every command:

* A missing parent directory is created when the file is first written (``report.files`` does that), as a
  user who writes ``--json results/today.json`` expects; what must already hold is that the nearest
  existing ancestor is a directory this process may create files in. That is tried, not only asked of
  ``os.access``: a probe file is created there and removed, because some file systems (``/sys``, a
  read-only bind mount) say "writable" to ``access`` and then refuse the file.
* An output *file* is not a directory; an output *directory* (``train --out``) is not a file.
* Paths are compared after resolving symlinks, ``..`` and ``~``, and existing files by identity, so a hard
  link or a second spelling of the same file is caught. An output may not be an input, another output,
  or an existing file inside an input directory (``--json MODEL/config.json``).
* An output file is never a symbolic link, a device, a FIFO or a socket, and an existing file is replaced
  only when it is empty or a specmeter output of the kind the option writes, unless ``--force``
  (``report.outfile``, which checks the path again when it writes; docs/results.md, "Replacing files").
* A name the file system cannot hold, an output's or an input's, is refused first: a component longer
  than its ``NAME_MAX`` (255
  bytes on ext4), a whole path of ``PATH_MAX`` bytes or more (4096 on Linux), or a NUL byte (issue 29: a
  300-character ``--json`` name was an ``OSError`` errno 36 traceback, before or after the run).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from specmeter.measuring.errors import MeasureError
from specmeter.report.outfile import refusal

__all__ = ["check_output_paths"]

PathOption = Path | Sequence[Path] | None


_NAME_MAX, _PATH_MAX = 255, 4096  # POSIX's usual limits, where pathconf cannot say


def _limit(directory: Path, name: str, default: int) -> int:
    try:
        return int(os.pathconf(directory, name))
    except (OSError, ValueError):
        return default


def _unnameable(option: str, path: Path) -> str | None:
    """Why ``path`` cannot be a file name on its file system (checked before anything touches it), or None."""
    text = os.fspath(path)
    if "\0" in text:
        return f"{option}: a file name cannot hold a NUL byte"
    absolute = Path(os.path.abspath(text))
    existing = next((p for p in [absolute, *absolute.parents] if _exists(p)), Path(absolute.anchor))
    name_max = _limit(existing, "PC_NAME_MAX", _NAME_MAX)
    for part in absolute.parts[len(existing.parts) :]:
        size = len(os.fsencode(part))
        if size > name_max:
            shown = part if len(part) <= 40 else part[:20] + "…" + part[-12:]
            return f"{option}: the name {shown!r} is {size} bytes long; this file system allows {name_max}"
    path_max = _limit(existing, "PC_PATH_MAX", _PATH_MAX)
    size = len(os.fsencode(str(absolute)))
    if size >= path_max:
        return f"{option}: the path is {size} bytes long; this file system allows {path_max - 1}"
    return None


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # ENAMETOOLONG and kin: it cannot exist
        return False


def _items(paths: Mapping[str, PathOption]) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for option, value in paths.items():
        if value is None:
            continue
        for p in [value] if isinstance(value, str | os.PathLike) else value:
            out.append((option, Path(p).expanduser()))
    return out


def _same(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): then only the spelling can make them equal
        return False


def _inside(path: Path, directory: Path) -> bool:
    """An existing file ``path`` somewhere below the existing directory ``directory``."""
    try:
        if not directory.is_dir() or not path.is_file():
            return False
    except OSError:  # an input whose name is too long for the file system: nothing is inside it
        return False
    return path.resolve().is_relative_to(directory.resolve())


def _nearest_existing(path: Path) -> Path:
    for parent in path.resolve().parents:
        if parent.exists():
            return parent
    return Path(path.resolve().anchor)


def _can_create_in(directory: Path) -> bool:
    """Whether a file can really be created in ``directory`` (the probe is removed at once)."""
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    try:
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".specmeter-probe-")
    except OSError:
        return False
    os.close(fd)
    Path(probe).unlink(missing_ok=True)
    return True


def _writable(option: str, path: Path, *, directory: bool) -> str | None:
    """Why ``path`` cannot be written as a file (or, with ``directory``, filled as a directory), or None."""
    if directory:
        if path.exists() and not path.is_dir():
            return f"{option}: {path} is a file; give a directory"
        where = path if path.is_dir() else _nearest_existing(path)
    else:
        if path.is_dir():
            return f"{option}: {path} is a directory; give a file path"
        if path.exists() and not os.access(path, os.W_OK):
            return f"{option}: cannot write {path}: permission denied"
        # Files are replaced atomically (a temporary file beside them), so their directory must take files.
        where = path.resolve().parent if path.exists() else _nearest_existing(path)
    if not where.is_dir():
        return f"{option}: cannot write {path}: {where} is not a directory"
    if not _can_create_in(where):
        return f"{option}: cannot write {path}: no permission to create files in {where}"
    return None


def check_output_paths(
    outputs: Mapping[str, PathOption],
    inputs: Mapping[str, PathOption] | None = None,
    *,
    directories: Mapping[str, PathOption] | None = None,
) -> None:
    """Raise :class:`MeasureError` (one line per problem) unless every output can be written safely.

    ``outputs`` (files), ``directories`` (output directories a command fills, such as ``train --out``) and
    ``inputs`` map an option name (``"--json"``) to a path, several paths, or None (not given). An output
    fails when it is the same file or directory as an input or as another output, is an existing file
    inside an input directory, is a directory (a file output) or a file (a directory output), is a link,
    a device or someone else's file (``report.outfile.refusal``: ``--force`` lets the last be replaced), or
    lies below something that is not a directory this process can create files in.
    """
    outs = [(o, p, False) for o, p in _items(outputs)] + [(o, p, True) for o, p in _items(directories or {})]
    ins = _items(inputs or {})
    named = [(o, p) for o, p, _ in outs] + ins  # an input of such a name cannot exist either
    problems = [reason for option, path in named if (reason := _unnameable(option, path)) is not None]
    if problems:  # nothing else can be asked of such a path: every stat of it raises OSError
        raise MeasureError("\n".join(_unique(problems)))
    repeats: dict[int, list[str]] = {}  # an output's index -> the later options given the same path
    for i, (option, path, is_dir) in enumerate(outs):
        clash = next(((o, p) for o, p in ins if _same(path, p) or _inside(path, p)), None)
        if clash is not None:
            what = "is" if _same(path, clash[1]) else "is a file in"
            problems.append(
                f"{option}: {path} {what} {clash[0]} ({clash[1]}); an output never overwrites an input"
            )
            continue
        earlier = next((j for j, (_, p, _) in enumerate(outs[:i]) if _same(path, p)), None)
        if earlier is not None:
            repeats.setdefault(earlier, []).append(option)
            continue
        reason = None if is_dir else refusal(option, path)
        reason = reason or _writable(option, path, directory=is_dir)
        if reason is not None:
            problems.append(reason)
    # One line per shared path, however many options repeat it (--json X --csv X --log X: one line).
    for j, options in repeats.items():
        first, path, _ = outs[j]
        problems.append(f"{', '.join(options)}: {path} is also {first}; every output needs its own file")
    if problems:
        raise MeasureError("\n".join(_unique(problems)))


def _unique(lines: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(lines))
