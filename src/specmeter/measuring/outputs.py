"""Output paths checked before anything is measured: outputs never overwrite inputs or each other.

One function for every command that writes files, so a mistake costs a second instead of a run (or the
golden set it was measured on). Each path is named by its option in the message.

A missing parent directory is created when the file is first written (``report.files`` does that), as a
user who writes ``--json results/today.json`` expects; what must already hold is that the nearest existing
ancestor is a directory this process may write in. Paths are compared after resolving symlinks, ``..``
and ``~``, and existing files by identity, so a hard link or a second spelling of the same file is caught.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from specmeter.measuring.errors import MeasureError

__all__ = ["check_output_paths"]

PathOption = Path | Sequence[Path] | None


def _items(paths: Mapping[str, PathOption]) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    for option, value in paths.items():
        if value is None:
            continue
        for p in [value] if isinstance(value, Path) else value:
            out.append((option, Path(p).expanduser()))
    return out


def _same(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): then only the spelling can make them equal
        return False


def _nearest_existing(path: Path) -> Path:
    for parent in path.resolve().parents:
        if parent.exists():
            return parent
    return Path(path.resolve().anchor)


def _writable(option: str, path: Path) -> str | None:
    """Why ``path`` cannot be written as a file, or None."""
    if path.is_dir():
        return f"{option}: {path} is a directory; give a file path"
    if path.exists():
        if not os.access(path, os.W_OK):
            return f"{option}: cannot write {path}: permission denied"
        return None
    ancestor = _nearest_existing(path)
    if not ancestor.is_dir():
        return f"{option}: cannot write {path}: {ancestor} is not a directory"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{option}: cannot write {path}: no permission to create files in {ancestor}"
    return None


def check_output_paths(
    outputs: Mapping[str, PathOption], inputs: Mapping[str, PathOption] | None = None
) -> None:
    """Raise :class:`MeasureError` (one line per problem) unless every output can be written safely.

    ``outputs`` and ``inputs`` map an option name (``"--json"``) to a path, several paths, or None (not
    given). An output fails when it is the same file as an input or as another output, is a directory,
    exists but cannot be written, or lies below something that is not a writable directory.
    """
    outs = _items(outputs)
    ins = _items(inputs or {})
    problems: list[str] = []
    for i, (option, path) in enumerate(outs):
        clash = next(((o, p) for o, p in ins if _same(path, p)), None)
        if clash is not None:
            problems.append(
                f"{option}: {path} is {clash[0]} ({clash[1]}); an output never overwrites an input"
            )
            continue
        earlier = next(((o, p) for o, p in outs[:i] if _same(path, p)), None)
        if earlier is not None:
            problems.append(f"{option}: {path} is also {earlier[0]}; every output needs its own file")
            continue
        reason = _writable(option, path)
        if reason is not None:
            problems.append(reason)
    if problems:
        raise MeasureError("\n".join(_unique(problems)))


def _unique(lines: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(lines))
