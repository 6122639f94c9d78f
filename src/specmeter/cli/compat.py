"""``specmeter compat TARGET DRAFT``: can this draft serve this target? A verdict, every reason, an exit code.

Reads config, tokenizer files and safetensors headers only — no weights — so it takes a second even for
large checkpoints and fits a CI step. Exit codes:

* 0 compatible, 1 usable with caveats, 2 incompatible — the verdict;
* 3 the check could not be made (missing directory, no tokenizer, unreadable config or prompts file).

Other specmeter commands exit 2 on a usage error; compat cannot, because 2 is its "incompatible", and a CI
job must be able to tell "these models do not fit" from "the model directory was not there". A malformed
command line (an unknown option, a missing argument) is still rejected by the argument parser with 2
before compat runs, as for every command; that shows on a script's first run.
"""

from __future__ import annotations

from pathlib import Path

import typer

from specmeter.cli.common import check_outputs, console, fail
from specmeter.exitcodes import EXIT_CANNOT_CHECK
from specmeter.methods import MethodSpec, MethodSpecError, parse_candidate


def compat(
    target: Path = typer.Argument(..., help="Target model directory (Hugging Face format)."),
    draft_name: str = typer.Argument(
        ...,
        metavar="DRAFT",
        help="Draft model directory (Hugging Face format); a method spec (ngram, layers:n=2) has nothing "
        "to compare.",
    ),
    prompts: Path | None = typer.Option(
        None, "--prompts", help="Golden set to re-tokenize with both tokenizers (share identical)."
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the report as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No tables; the exit code says it all."),
) -> None:
    """Can DRAFT serve TARGET? Exit 0 compatible, 1 usable with caveats, 2 incompatible, 3 cannot check."""
    from specmeter.modeldir import ModelDirError, inspect_model
    from specmeter.report.files import write_json_atomic
    from specmeter.selection.compat import check_compat
    from specmeter.selection.tokens import check_tokenization
    from specmeter.selection.view_compat import render_compat
    from specmeter.workloads import WorkloadError, load_workload

    try:
        method = parse_candidate(draft_name)
    except MethodSpecError as e:
        fail(f"DRAFT: {e}")
    if isinstance(method, MethodSpec):  # n-gram, suffix, layers:n, an EAGLE head: the target's tokenizer
        from specmeter.selection.compat import check_method

        verdict = check_method(target, method)
        if verdict.exit_code == EXIT_CANNOT_CHECK:
            fail(verdict.line, EXIT_CANNOT_CHECK)
        if not quiet:
            console.print(verdict.line, highlight=False, markup=False)
        raise typer.Exit(verdict.exit_code)
    draft = Path(draft_name)
    check_outputs(
        {"--json": json_out}, {"TARGET": target, "DRAFT": draft, "--prompts": prompts}, code=EXIT_CANNOT_CHECK
    )
    try:
        t = inspect_model(target)
        d = inspect_model(draft)
    except ModelDirError as e:
        fail(str(e), EXIT_CANNOT_CHECK)
    tokenization = None
    if prompts is not None:
        try:
            workload = load_workload(prompts)
        except WorkloadError as e:
            fail(str(e), EXIT_CANNOT_CHECK)
        tokenization = check_tokenization(workload, t.tokenizer.tokenizer, d.tokenizer.tokenizer)
    report = check_compat(t, d, tokenization)
    if json_out is not None:
        try:
            write_json_atomic(json_out, report.to_dict())
        except OSError as e:
            fail(f"--json {json_out}: cannot write ({e.strerror or e})", EXIT_CANNOT_CHECK)
    if not quiet:
        render_compat(report, console)
    raise typer.Exit(report.exit_code)
