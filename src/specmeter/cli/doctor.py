"""``specmeter doctor``: run it before measuring — is this machine fit to time speculative decoding?

Threads against cores, the frequency governor and boost, other busy processes (a short window judged with
the thresholds of a measuring run), steal, memory, the torch build and the accelerator, each with concrete
advice (``specmeter.hygiene.doctor``). Exit 0; with ``--strict``, exit 4 (the code a measuring command run
with ``--strict`` gives on a busy machine) when the machine would be judged busy or unusable right now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from specmeter.cli.common import check_outputs, console, fail

_STYLE = {"ok": "green", "info": "cyan", "warn": "bold yellow", "bad": "bold red"}


def doctor(
    seconds: Annotated[
        float, typer.Option("--seconds", help="How long to watch for other busy processes.")
    ] = 2.0,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the checks as JSON.")] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 4 when the machine is busy or unusable right now.")
    ] = False,
) -> None:
    """Is this machine fit to measure? Threads vs cores, governor, busy processes, torch, the accelerator."""
    from specmeter.hygiene.doctor import diagnose
    from specmeter.hygiene.verdict import EXIT_NOISY_MACHINE
    from specmeter.report.files import write_json_atomic

    if not 0.2 <= seconds <= 600:
        fail(f"--seconds: {seconds:g} is outside 0.2..600")
    check_outputs({"--json": json_out})
    with console.status("checking the machine…", spinner="dots") as status:
        report = diagnose(sample_s=seconds, progress=lambda msg: status.update(f"doctor: {msg}…"))
    table = Table(title="specmeter doctor", title_justify="left", title_style="bold")
    for column in ("check", "", "finding", "advice"):
        table.add_column(column)
    for c in report["checks"]:
        table.add_row(
            c["name"], Text(c["status"], style=_STYLE[c["status"]]), Text(c["finding"]), Text(c["advice"])
        )
    console.print(table)
    style = {"ready": "bold green", "warnings": "bold yellow", "not ready": "bold red"}[report["status"]]
    advice = [c for c in report["checks"] if c["status"] in ("warn", "bad")]
    summary = (
        "ready to measure"
        if not advice
        else f"{len(advice)} thing(s) to fix before measuring: "
        + "; ".join(c["advice"] or c["finding"] for c in advice)
    )
    console.print(Text(f"Doctor: {summary}.", style=style), soft_wrap=True)
    if json_out is not None:
        try:
            write_json_atomic(json_out, {"schema_version": 1, "kind": "doctor", **report})
        except OSError as e:
            fail(f"--json {json_out}: cannot write ({e.strerror or e})")
    if strict and report["verdict"] != "quiet":
        raise typer.Exit(EXIT_NOISY_MACHINE)
