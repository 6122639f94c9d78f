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

from specmeter.cli.common import check_outputs, console, fail


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
    from specmeter.hygiene.view_doctor import render_doctor
    from specmeter.report.files import write_json_atomic

    if not 0.2 <= seconds <= 600:
        fail(f"--seconds: {seconds:g} is outside 0.2..600")
    check_outputs({"--json": json_out})
    with console.status("checking the machine…", spinner="dots") as status:
        report = diagnose(sample_s=seconds, progress=lambda msg: status.update(f"doctor: {msg}…"))
    render_doctor(report, console)
    if json_out is not None:
        try:
            write_json_atomic(json_out, {"schema_version": 1, "kind": "doctor", **report})
        except OSError as e:
            fail(f"--json {json_out}: cannot write ({e.strerror or e})")
    if strict and report["verdict"] != "quiet":
        raise typer.Exit(EXIT_NOISY_MACHINE)
