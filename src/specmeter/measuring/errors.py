"""How the measuring core reports what stops it, and the exit codes a command turns outcomes into.

The core never exits the program: a problem the user must fix raises :class:`MeasureError`, Ctrl-C before
anything was measured raises :class:`MeasureInterrupted`, and a run that was measured (completely or up to
an interruption) returns an exit code from the closing helper (``measuring.run.close``). The CLI prints a
``MeasureError`` as ``error: ...`` lines and exits with :data:`EXIT_USAGE`.
"""

from __future__ import annotations

from specmeter.exitcodes import EXIT_INTERRUPTED, EXIT_NOISY_MACHINE, EXIT_OK, EXIT_USAGE

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_NOISY_MACHINE",
    "EXIT_OK",
    "EXIT_USAGE",
    "MeasureError",
    "MeasureInterrupted",
]

# The codes themselves, with every command's, are the one table in specmeter.exitcodes.


class MeasureError(Exception):
    """A problem the user must fix, found before or while measuring.

    The message is one line per problem (usually one), each naming the option, file, line or field at
    fault, e.g. ``--max-tokens must be >= 1, got 0`` or ``golden.jsonl:3: prompt 'x' renders to no tokens``.
    """

    @property
    def lines(self) -> list[str]:
        return str(self).splitlines() or [str(self)]


class MeasureInterrupted(Exception):
    """Ctrl-C at a moment when nothing had been measured yet; the message says so in one line."""
