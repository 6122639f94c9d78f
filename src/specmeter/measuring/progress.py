"""What the measuring core tells the person waiting: a small protocol, so it runs the same anywhere.

The CLI passes a rich implementation (a spinner, a progress bar, lines on the terminal); ``demo`` passes
the same one; tests and library callers pass :class:`Silent` or their own recorder. The core only ever
calls these methods, never prints.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

__all__ = ["Reporter", "Silent", "Task"]


class Task(Protocol):
    """One counted piece of work (a progress bar)."""

    def advance(self, n: int = 1) -> None: ...

    def update(self, *, description: str | None = None, total: int | None = None) -> None: ...


class Reporter(Protocol):
    def status(self, text: str) -> AbstractContextManager[None]:
        """A step that cannot count its progress (the cost curve), shown while the block runs."""
        ...

    def task(self, description: str, total: int) -> AbstractContextManager[Task]:
        """A counted step (requests over prompts), shown while the block runs."""
        ...

    def note(self, text: str) -> None:
        """A line of information (where the run was recorded); quiet reporters drop it."""
        ...

    def warn(self, text: str) -> None:
        """A line the user must see even when quiet (an interruption and what it kept)."""
        ...


class _NoTask:
    def advance(self, n: int = 1) -> None:
        pass

    def update(self, *, description: str | None = None, total: int | None = None) -> None:
        pass


class Silent:
    """A reporter that shows nothing; ``warnings`` keeps what would have been shown as a warning."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.warnings: list[str] = []

    @contextmanager
    def status(self, text: str) -> Iterator[None]:
        yield

    @contextmanager
    def task(self, description: str, total: int) -> Iterator[Task]:
        yield _NoTask()

    def note(self, text: str) -> None:
        self.notes.append(text)

    def warn(self, text: str) -> None:
        self.warnings.append(text)
