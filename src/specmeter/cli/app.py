"""The ``specmeter`` command: a typer app, one module per command; heavy imports happen inside commands."""

from __future__ import annotations

import os

import typer

from specmeter.cli import bench, demo, distill, train

app = typer.Typer(
    name="specmeter",
    help="Does speculative decoding pay off on your traffic? Acceptance, real speedup, jitter, memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("bench")(bench.bench)
app.command("demo")(demo.demo)
app.command("train")(train.train)
app.command("distill")(distill.distill)


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
