"""Every exit code of every ``specmeter`` command, in one table (issue 12: "exit codes CI can trust").

The codes mean the same thing in every command that uses them; ``compat`` alone gives 1 and 2 its own
meanings (its verdict), because a CI step must tell "these models do not fit" from "the directory was not
there" (3). 3 is "the check could not be made" for ``drift`` too: a window without requests is not a
drop. The table is rendered into each command's ``--help`` (:func:`help_epilog`) and stated in
docs/results.md ("Exit codes"); a test keeps the three in step. Code names are the constants below, which
the rest of the package imports instead of writing numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EXIT_CANNOT_CHECK",
    "EXIT_CAVEATS",
    "EXIT_CODES",
    "EXIT_FAILED",
    "EXIT_INCOMPATIBLE",
    "EXIT_INTERRUPTED",
    "EXIT_NOISY_MACHINE",
    "EXIT_NOTHING_TO_COMPARE",
    "EXIT_OK",
    "EXIT_USAGE",
    "ExitCode",
    "codes_for",
    "help_epilog",
    "markdown_table",
]

EXIT_OK = 0
EXIT_FAILED = 1  # the command ran, and its check failed or nothing could be measured
EXIT_USAGE = 2  # a problem with the input: options, files, models, output paths; nothing was measured
EXIT_CAVEATS = 1  # compat only: the draft can serve the target, with caveats
EXIT_INCOMPATIBLE = 2  # compat only: the draft cannot serve the target
EXIT_CANNOT_CHECK = 3  # compat only: the check could not be made
EXIT_NOTHING_TO_COMPARE = 3  # drift: a window without requests; like compat's 3, the check could not be made
EXIT_NOISY_MACHINE = 4  # --strict: the machine was busy or unusable; everything measured is written
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT); whatever was measured is on disk

ALL = "*"
STRICT = ("bench", "tune", "select", "demo", "whatif", "load", "doctor")


@dataclass(frozen=True)
class ExitCode:
    code: int
    meaning: str
    commands: tuple[str, ...]  # the commands that use it; ("*",) = every command
    exclude: tuple[str, ...] = ()


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(EXIT_OK, "success", (ALL,), exclude=("compat",)),
    ExitCode(EXIT_OK, "compatible", ("compat",)),
    ExitCode(EXIT_FAILED, "a significant regression beyond --fail-on", ("compare",)),
    ExitCode(EXIT_FAILED, "a significant drop", ("drift",)),
    ExitCode(
        EXIT_FAILED,
        "nothing measured (no request completed), or more failed requests than --max-error-rate",
        ("load",),
    ),
    ExitCode(
        EXIT_FAILED,
        "nothing measured: --once without one good scrape, a failed Prometheus query, "
        "no usable request record",
        ("monitor",),
    ),
    ExitCode(EXIT_FAILED, "no usable record in the logs", ("golden",)),
    ExitCode(
        EXIT_FAILED,
        "a configuration failed (did not start, never became healthy, died mid-level, none of its "
        "requests completed), a level none of whose requests completed, the baseline could not be "
        "measured, or more failed requests than --max-error-rate; what was measured is written",
        ("sweep",),
    ),
    ExitCode(EXIT_FAILED, "runs delete: not confirmed", ("runs",)),
    ExitCode(EXIT_FAILED, "--ray: a shard's task failed on the cluster; nothing is written", ("replay",)),
    ExitCode(EXIT_CAVEATS, "usable with caveats", ("compat",)),
    ExitCode(
        EXIT_USAGE,
        "usage error: a bad option, input file, model or output path, told in one error: line; "
        "nothing was measured",
        (ALL,),
        exclude=("compat",),
    ),
    ExitCode(EXIT_INCOMPATIBLE, "incompatible (a malformed command line also exits 2)", ("compat",)),
    ExitCode(
        EXIT_CANNOT_CHECK, "cannot check: a missing or unreadable model, prompts file or output", ("compat",)
    ),
    ExitCode(
        EXIT_NOTHING_TO_COMPARE,
        "nothing to compare: the current or the reference window holds no request, or no domain is in both",
        ("drift",),
    ),
    ExitCode(
        EXIT_NOISY_MACHINE,
        "--strict and the machine was busy or unusable during the run (everything measured is written)",
        STRICT,
    ),
    ExitCode(EXIT_INTERRUPTED, "interrupted (Ctrl-C); whatever was measured is on disk", (ALL,)),
)


def codes_for(command: str) -> list[ExitCode]:
    """The exit codes ``command`` (``bench``, ``runs export``) can end with, in code order."""
    top = command.split()[0]
    return [c for c in EXIT_CODES if (ALL in c.commands or top in c.commands) and top not in c.exclude]


def help_epilog(command: str) -> str:
    """The exit-code table of one command, for the end of its ``--help``."""
    return "Exit codes: " + "; ".join(f"{c.code} {c.meaning}" for c in codes_for(command)) + "."


def markdown_table() -> str:
    """The table as docs/results.md states it ("Exit codes")."""
    rows = ["| code | meaning | commands |", "|---|---|---|"]
    for c in EXIT_CODES:
        commands = "every command" if ALL in c.commands else ", ".join(f"`{n}`" for n in c.commands)
        if c.exclude:
            commands += " but " + ", ".join(f"`{n}`" for n in c.exclude)
        rows.append(f"| {c.code} | {c.meaning} | {commands} |")
    return "\n".join(rows)
