"""The ``specmeter`` command: a typer app, one module per command; heavy imports happen inside commands."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import typer

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
from specmeter.cli.common import err_console
from specmeter.exitcodes import EXIT_INTERRUPTED, help_epilog

app = typer.Typer(
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


for _name, _command in COMMANDS.items():
    app.command(_name, epilog=help_epilog(_name))(_interruptible(_command))
app.add_typer(runs_cmd.app, name="runs", epilog=help_epilog("runs"))


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True),
) -> None:
    # transformers' own progress bars and warnings would interleave with ours; users see rich progress.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if version:
        from specmeter import __version__

        typer.echo(f"specmeter {__version__}")
        raise typer.Exit()


def main() -> None:
    app()
