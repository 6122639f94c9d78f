"""The ``specmeter`` command: a typer app, one module per command; heavy imports happen inside commands."""

from __future__ import annotations

import os

import typer

from specmeter.cli import bench, compat, demo, distill, doctor, select, train, tune
from specmeter.cli import compare as compare_cmd
from specmeter.cli import drift as drift_cmd
from specmeter.cli import golden as golden_cmd
from specmeter.cli import load as load_cmd
from specmeter.cli import monitor as monitor_cmd
from specmeter.cli import plan as plan_cmd
from specmeter.cli import report as report_cmd
from specmeter.cli import roi as roi_cmd
from specmeter.cli import runs as runs_cmd
from specmeter.cli import serve as serve_cmd

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
app.command("compat")(compat.compat)
app.command("doctor")(doctor.doctor)
app.command("tune")(tune.tune)
app.command("select")(select.select)
app.command("serve")(serve_cmd.serve)
app.command("load")(load_cmd.load)
app.command("monitor")(monitor_cmd.monitor)
app.command("golden")(golden_cmd.golden)
app.command("drift")(drift_cmd.drift)
app.add_typer(runs_cmd.app, name="runs")
app.command("compare")(compare_cmd.compare)
app.command("report")(report_cmd.report)
app.command("roi")(roi_cmd.roi)
app.command("plan")(plan_cmd.plan)


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
