"""Helpers shared by commands: one-line user errors, option parsing, the console, progress on the terminal."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, overload

import typer
from rich.console import Console
from rich.markup import escape
from rich.segment import Segment

from specmeter import jsonsafe
from specmeter.measuring.config import SEED_MAX
from specmeter.measuring.errors import EXIT_INTERRUPTED, EXIT_USAGE, MeasureError, MeasureInterrupted
from specmeter.measuring.outputs import PathOption, check_output_paths
from specmeter.safetext import printable

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from specmeter.measuring.progress import Task
    from specmeter.store import RunStore

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "RichReporter",
    "TerminalConsole",
    "check_outputs",
    "check_range",
    "check_seed",
    "check_training",
    "console",
    "end",
    "err_console",
    "fail",
    "measure_errors",
    "open_store",
    "parse_float_list",
    "parse_int_list",
    "parse_option",
    "read_json_option",
    "resolve_store",
    "run_inputs",
    "stdout_is_terminal",
    "store_path",
    "training_progress",
]

V = TypeVar("V")
R = TypeVar("R")


class TerminalConsole(Console):
    """rich's Console that never writes a control character it was handed as text (issue 29).

    Every command prints text from outside: a server's error message, a category or domain from a log, a
    run note, a model directory's name, a Prometheus label. rich drops a carriage return or a bell but
    passes an escape character, so ``ESC [2J`` in a domain name cleared the user's screen and ``ESC ]8;``
    forged a link. Here each text segment goes through ``safetext.printable`` as rich writes it (``\\x1b``,
    ``\\x9b``, ``\\ud800`` appear as such); the segments that rich itself marks as control (a live view's
    cursor moves) and the styles rich renders pass unchanged. One place, so no view can forget it;
    rich markup in outside text is the caller's to escape (``safetext.markup``, or ``markup=False``).
    """

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            s if s.control else Segment(printable(s.text), s.style, s.control) for s in buffer
        )


# Redirected to a file or CI log, rich would wrap the result tables at 80 columns; 120 keeps rows whole.
# COLUMNS still wins when set.
console = TerminalConsole(
    stderr=False, highlight=False, width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 120
)
err_console = TerminalConsole(stderr=True, highlight=False)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Stop with a user-facing error: one line (or one line per problem), no traceback."""
    for line in message.splitlines() or [message]:
        err_console.print(f"[bold red]error:[/] {escape(line)}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def check_outputs(
    outputs: Mapping[str, PathOption],
    inputs: Mapping[str, PathOption] | None = None,
    *,
    directories: Mapping[str, PathOption] | None = None,
    code: int = EXIT_USAGE,
) -> None:
    """Every output path of a command checked before it does any work (``measuring.check_output_paths``):
    its problems as ``error:`` lines and exit ``code`` (2, or compat's 3)."""
    try:
        check_output_paths(outputs, inputs, directories=directories)
    except MeasureError as e:
        fail(str(e), code)


@contextmanager
def measure_errors() -> Iterator[None]:
    """The measuring core's errors as a command ends them: ``error:`` lines and exit 2, or 130 on Ctrl-C."""
    try:
        yield
    except MeasureError as e:
        fail(str(e))
    except MeasureInterrupted as e:
        console.print(f"[yellow]{escape(str(e))}[/]")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def end(exit_code: int) -> None:
    """Exit with ``exit_code`` (an Outcome's) unless it is 0: a command that returns exits 0."""
    if exit_code:
        raise typer.Exit(exit_code)


Errors = type[Exception] | tuple[type[Exception], ...]


@overload
def parse_option(parse: Callable[[V], R], value: V, errors: Errors, prefix: str = "") -> R: ...
@overload
def parse_option(parse: Callable[[V], R], value: V | None, errors: Errors, prefix: str = "") -> R | None: ...
def parse_option(parse: Callable[[V], R], value: V | None, errors: Errors, prefix: str = "") -> R | None:
    """``parse(value)`` for an option that was given, None for one that was not; the parser's ``errors`` end
    the command as one ``error:`` line (after ``prefix`` where the parser's message does not name the option).
    """
    if value is None:
        return None
    try:
        return parse(value)
    except errors as e:
        fail(f"{prefix}{e}")


def check_range(
    option: str,
    value: float | None,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    """Fail (one line naming the option) unless ``value`` is None or a finite number in the range.

    NaN and ±inf never pass: typer reads ``nan`` and ``inf`` as floats, and either would reach the
    measurement (a NaN temperature crashed mid-run, an infinite one reported α 1.000).
    """
    if value is None:
        return
    ok = math.isfinite(value)
    ok = ok and (low is None or (value > low if low_open else value >= low))
    ok = ok and (high is None or (value < high if high_open else value <= high))
    if ok:
        return
    if low is not None and high is not None:
        wanted = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    elif low is not None:
        wanted = f"{'>' if low_open else '>='} {low:g}"
    elif high is not None:
        wanted = f"{'<' if high_open else '<='} {high:g}"
    else:
        wanted = "a finite number"
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    fail(f"{option} must be {wanted}, got {shown}")


def check_seed(option: str, seed: int) -> None:
    if not 0 <= seed <= SEED_MAX:
        fail(f"{option} must be an integer from 0 to 2^62, got {seed}")


def parse_int_list(value: str, option: str) -> list[int]:
    """``"4"`` or ``"1,2,4,8"`` -> sorted unique positive ints; a bad value fails naming the option."""
    out: list[int] = []
    for part in value.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            fail(f"{option}: {value!r} is not a positive integer or a comma-separated list of them")
        out.append(int(part))
    return sorted(set(out))


def parse_float_list(
    value: str,
    option: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    unit: str = "",
) -> list[float]:
    """``"0.5"`` or ``"0.5,1,2"`` -> the numbers in the order given, repeats dropped; with a range, each
    must be finite and in it (``check_range``; without one, the config they go to checks them); a bad one
    fails naming the option (and the ``unit`` where one helps)."""
    out: list[float] = []
    for part in value.split(","):
        try:
            number = float(part)
        except ValueError:
            fail(f"{option}: {part.strip()!r} is not a number" + (f" ({unit})" if unit else ""))
        if low is not None or high is not None:
            check_range(option, number, low=low, high=high, low_open=low_open)
        out.append(number)
    return list(dict.fromkeys(out))


def read_json_option(path: Path, option: str) -> object:
    """The parsed JSON of the file an option names (``--from-sweep``, ``--from-whatif``); a file that cannot
    be read or parsed fails with one line naming the option and the path. The caller checks what it holds."""
    import json

    try:
        return jsonsafe.loads(path.read_text(encoding="utf-8"), surrogates=True)
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{option}: {path}: unreadable ({e})")
    except json.JSONDecodeError as e:
        fail(f"{option}: {path}: not JSON ({e.msg} at line {e.lineno})")


def training_progress(total: int, description: str, quiet: bool = False) -> Any:
    """train's and distill's progress on the terminal: a bar with the loss and the held-out loss."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]}"), TextColumn("held-out {task.fields[eval]}"),
        TimeRemainingColumn(), console=console, disable=quiet,
    )  # fmt: skip


def check_training(
    lr: float, seed: int, out: Path, work: Path | None, inputs: Mapping[str, PathOption]
) -> Path:
    """What train and distill both check before any work: ``--lr``, ``--seed``, the inputs, and the output and
    checkpoint directories; returns the checkpoint directory (``--work``, by default OUT.work)."""
    check_range("--lr", lr, low=0, low_open=True, high=1)
    check_seed("--seed", seed)
    check_outputs({}, inputs, directories={"--out": out, "--work": work})
    if work is None:  # the default, checked once --out passed (a bad --out is one error, not two)
        work = out.with_name(out.name + ".work")
        check_outputs({}, inputs, directories={"--out": out, "--work (default OUT.work)": work})
    return work


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def resolve_store(store: Path | None, no_store: bool) -> Path | None:
    """The run store a measuring command records into: ``--store``, else the default; None with --no-store."""
    return None if no_store else store_path(store)


def store_path(store: Path | None) -> Path:
    """The run store a command reads (``--store``, else the default)."""
    from specmeter.store.paths import default_store_path

    return store if store is not None else default_store_path()


def run_inputs(runs: Sequence[str | None], store: Path | None) -> dict[str, PathOption]:
    """The files a command reading RUNs opens (result JSON files and the run store), for check_outputs."""
    from specmeter.store import is_run_ref

    files = [Path(r) for r in runs if r is not None and not is_run_ref(r)]
    return {"RUN": files, "--store": store_path(store)}


def open_store(store: Path | None, *, create: bool = False) -> RunStore:
    """The RunStore at ``--store`` (or the default), or a one-line error naming the store."""
    from specmeter.store import RunStore, StoreError

    try:
        return RunStore(store_path(store), create=create)
    except StoreError as e:
        fail(str(e))


class _BarTask:
    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._progress, self._task = progress, task

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)

    def update(self, *, description: str | None = None, total: int | None = None) -> None:
        text = None if description is None else escape(description)
        self._progress.update(self._task, description=text, total=total)


class LineTask:
    """Progress when the console is not a terminal (output sent to a file, a CI log): a plain line every
    ``every`` seconds, with the share done, the time so far and the time left at the rate so far."""

    def __init__(
        self, out: Console, description: str, total: int, *, every: float = 5.0,
        clock: Callable[[], float] | None = None,
    ) -> None:  # fmt: skip
        import time

        self._clock = clock or time.monotonic
        self.console, self.description, self.total, self.every = out, description, max(1, total), every
        self.done = 0
        self.start = self._last = self._clock()

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = self._clock()
        if now - self._last >= self.every:
            self._last = now
            self.console.print(self.line(now), markup=False, highlight=False, soft_wrap=True)

    def update(self, *, description: str | None = None, total: int | None = None) -> None:
        self.description = description if description is not None else self.description
        self.total = max(1, total) if total is not None else self.total

    def line(self, now: float) -> str:
        elapsed = now - self.start
        share = min(1.0, self.done / self.total)
        left = f", about {_duration(elapsed * (1 - share) / share)} left" if share > 0 else ""
        return f"{self.description}: {self.done}/{self.total} ({share:.0%}), {_duration(elapsed)}{left}"


def _duration(value: float) -> str:
    seconds = round(value)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class RichReporter:
    """The measuring core's progress: on a terminal a spinner and a transient bar, elsewhere a line every
    few seconds (:class:`LineTask`); notes (not when quiet)."""

    def __init__(self, out: Console = console, *, quiet: bool = False) -> None:
        self.console, self.quiet = out, quiet

    @contextmanager
    def status(self, text: str) -> Iterator[None]:
        with self.console.status(escape(text), spinner="dots"):
            yield

    @contextmanager
    def task(self, description: str, total: int) -> Iterator[Task]:
        if not self.quiet and not self.console.is_terminal:
            yield LineTask(self.console, description, total)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=self.console, disable=self.quiet, transient=True,
        )  # fmt: skip
        with progress:
            yield _BarTask(progress, progress.add_task(escape(description), total=total))

    def note(self, text: str) -> None:
        if not self.quiet:
            self.console.print(text, soft_wrap=True, markup=False)

    def warn(self, text: str) -> None:
        self.console.print(f"[yellow]{escape(text)}[/]", soft_wrap=True)
