"""The ``specmeter`` command: a typer app, one module per command; heavy imports happen inside commands."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperGroup

from specmeter.cli import bench, compat, demo, distill, doctor, select, train, tune, whatif
from specmeter.cli import compare as compare_cmd
from specmeter.cli import drift as drift_cmd
from specmeter.cli import golden as golden_cmd
from specmeter.cli import load as load_cmd
from specmeter.cli import monitor as monitor_cmd
from specmeter.cli import plan as plan_cmd
from specmeter.cli import replay as replay_cmd
from specmeter.cli import report as report_cmd
from specmeter.cli import roi as roi_cmd
from specmeter.cli import runs as runs_cmd
from specmeter.cli import serve as serve_cmd
from specmeter.cli import sweep as sweep_cmd
from specmeter.cli.common import err_console, fail
from specmeter.cli.options import refuse_repeated_options, writes_files
from specmeter.exitcodes import EXIT_INTERRUPTED, help_epilog


class _Specmeter(TyperGroup):
    """The root command: ``bundled:NAME`` arguments become the bundled model's or golden set's path before
    any option is parsed (``bundled.names``), so every path option of every command takes them."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: typer's own click Context
        from specmeter.bundled.names import BundledNameError, resolve_bundled_args

        try:
            args = resolve_bundled_args(args)
        except BundledNameError as e:
            fail(str(e))
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_Specmeter,
    name="specmeter",
    help="Does speculative decoding pay off on your traffic? Acceptance, real speedup, jitter, memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
COMMANDS: dict[str, Callable[..., None]] = {
    "bench": bench.bench,
    "demo": demo.demo,
    "train": train.train,
    "distill": distill.distill,
    "compat": compat.compat,
    "doctor": doctor.doctor,
    "tune": tune.tune,
    "select": select.select,
    "whatif": whatif.whatif,
    "serve": serve_cmd.serve,
    "load": load_cmd.load,
    "sweep": sweep_cmd.sweep,
    "monitor": monitor_cmd.monitor,
    "golden": golden_cmd.golden,
    "replay": replay_cmd.replay,
    "drift": drift_cmd.drift,
    "compare": compare_cmd.compare,
    "report": report_cmd.report,
    "roi": roi_cmd.roi,
    "plan": plan_cmd.plan,
}


def _interruptible(command: Callable[..., None]) -> Callable[..., None]:
    """Ctrl-C where a command does not handle it itself (loading models, reading files): one line and
    exit 130 instead of typer's silent 130 (commands that keep partial results say what they kept)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except KeyboardInterrupt:
            err_console.print("[yellow]Interrupted (Ctrl-C).[/]")
            raise typer.Exit(EXIT_INTERRUPTED) from None

    return run


for _name, _command in COMMANDS.items():  # every command writes files: each takes --force
    app.command(_name, epilog=help_epilog(_name))(_interruptible(writes_files(_command)))
app.add_typer(runs_cmd.app, name="runs", epilog=help_epilog("runs"))
refuse_repeated_options(app)  # every command, runs' included: "--x given twice" rather than the last kept


def _print_version(value: bool) -> None:
    """``--version`` as click runs an eager option: while parsing, before a command is looked for (the
    group's own callback would only run once a command was given: "Missing command")."""
    if value:
        from specmeter import __version__

        typer.echo(f"specmeter {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", is_eager=True, callback=_print_version
    ),
) -> None:
    # transformers' own progress bars and warnings would interleave with ours; users see rich progress.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    app()
