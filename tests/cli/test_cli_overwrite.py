"""Outputs never destroy a file (issue 29, item 12): links, devices and FIFOs are refused, someone else's file
is replaced only with --force, and a command's own earlier output is replaced without it.

The matrix reuses test_cli_outputs' (every command, every output file option): each refusal is one
``error:`` line naming the option, exit 2 (compat: 3), before any work, and the path and what a link points
to are left as they were. Today's code renamed its temporary file over the link or FIFO, or opened it.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_cli_outputs import (
    CASES,
    Case,
    _assert_one_error,
    _ids,
    _run,
    inputs,  # noqa: F401 (the same inputs: a fixture, for paths below)
)
from typer.testing import CliRunner

from specmeter.cli.app import COMMANDS, app
from specmeter.store import RunStore

runner = CliRunner()

FILES = [c for c in CASES if not c.directory]


@pytest.fixture
def paths(request: pytest.FixtureRequest) -> dict[str, Path]:
    value: dict[str, Path] = request.getfixturevalue("inputs")
    return value


@pytest.fixture(autouse=True)
def _never_the_real_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECMETER_STORE", str(tmp_path / "env-store.sqlite"))


@pytest.mark.parametrize("case", FILES, ids=_ids(FILES))
def test_a_link_at_the_output_path_is_refused(
    case: Case, paths: dict[str, Path], tmp_path: Path, monkeypatch: Any
) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    _assert_one_error(_run(case, paths, tmp_path, link, monkeypatch), case, f"{link} is a symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "keep me\n"


@contextlib.contextmanager
def _fifo(path: Path) -> Iterator[Path]:
    """A FIFO with a reader open, so that a writer that opened it anyway would not hang the test."""
    os.mkfifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        yield path
    finally:
        os.close(reader)


@pytest.mark.parametrize("case", FILES, ids=_ids(FILES))
def test_a_fifo_at_the_output_path_is_refused(
    case: Case, paths: dict[str, Path], tmp_path: Path, monkeypatch: Any
) -> None:
    with _fifo(tmp_path / "pipe") as pipe:
        result = _run(case, paths, tmp_path, pipe, monkeypatch)
        _assert_one_error(result, case, f"{pipe} is a FIFO (named pipe), not a regular file")
        assert stat.S_ISFIFO(os.lstat(pipe).st_mode)


@pytest.mark.parametrize("case", FILES, ids=_ids(FILES))
def test_someone_elses_file_is_refused_without_force(
    case: Case, paths: dict[str, Path], tmp_path: Path, monkeypatch: Any
) -> None:
    theirs = tmp_path / "theirs"
    theirs.write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}\n')
    before = theirs.read_bytes()
    result = _run(case, paths, tmp_path, theirs, monkeypatch)
    if case.option == "--store":  # the run store refuses another file itself, as it always did
        assert result.exit_code == 2 and "not a usable run store" in result.stderr, result.output
    elif case.option == "--history":
        _assert_one_error(result, case, f"{theirs} exists and is not", "--force or not")
    else:
        _assert_one_error(result, case, f"{theirs} exists and is not", "(use --force to")
    assert theirs.read_bytes() == before


# ------------------------------------------------------------------------- runs export, --force, reruns


def _store_with_a_run(path: Path) -> Path:
    result = {"schema_version": 1, "kind": "bench", "complete": True,
              "run": {"config": {}, "environment": {}, "started_at": "2026-01-01T00:00:00+00:00",
                      "models": {"target": None, "drafts": {}}},
              "baseline": {"summary": None, "by_category": {}}, "candidates": []}  # fmt: skip
    with RunStore(path) as db:
        db.begin_run(result)
    return path


@pytest.mark.parametrize("suffix", [".json", ".csv", ".jsonl"])
def test_runs_export_over_a_models_config_needs_force(tmp_path: Path, suffix: str) -> None:
    # The probe's case: runs export -o model/config.json overwrote the model's config, silently.
    store = _store_with_a_run(tmp_path / "runs.sqlite")
    config = tmp_path / "model" / f"config{suffix}"
    config.parent.mkdir()
    config.write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}\n')
    argv = ["runs", "export", "1", "-o", str(config), "--store", str(store)]
    refused = runner.invoke(app, argv)
    assert refused.exit_code == 2, refused.output
    assert refused.stderr.strip().splitlines() == [
        f"error: --out: {config} exists and is not "
        + {".json": "a specmeter JSON file (one that starts with schema_version and kind)",
           ".csv": "a specmeter per-request CSV",
           ".jsonl": "a specmeter per-request log or a golden set written by specmeter golden"}[suffix]
        + " (use --force to replace it)"
    ]  # fmt: skip
    assert "hidden_size" in config.read_text()
    forced = runner.invoke(app, [*argv, "--force"])
    assert forced.exit_code == 0, forced.output
    assert "hidden_size" not in config.read_text()
    again = runner.invoke(app, argv)  # now it is specmeter's own export: no --force needed
    assert again.exit_code == 0, again.output


def test_force_never_writes_through_a_link_or_into_a_device(tmp_path: Path) -> None:
    store = _store_with_a_run(tmp_path / "runs.sqlite")
    target = tmp_path / "precious.json"
    target.write_text("{}\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    result = runner.invoke(app, ["runs", "export", "1", "-o", str(link), "--store", str(store), "--force"])
    assert result.exit_code == 2 and "is a symbolic link" in result.stderr, result.output
    assert link.is_symlink() and target.read_text() == "{}\n"
    null = runner.invoke(app, ["roi", "--speedup", "1.5", "--monthly-tokens", "1B", "--baseline-throughput",
                               "100", "--baseline-price", "2", "--json", os.devnull, "--force"])  # fmt: skip
    assert null.exit_code == 2, null.output
    assert null.stderr.strip() == (
        f"error: --json: {os.devnull} is a character device, not a regular file; an output is only ever "
        "written to a regular file"
    )
    assert stat.S_ISCHR(os.lstat(os.devnull).st_mode)


ROI = ("roi", "--speedup", "1.5", "--monthly-tokens", "1B", "--baseline-throughput", "100",
       "--baseline-price", "2")  # fmt: skip


def test_a_command_replaces_its_own_output_and_an_empty_file(tmp_path: Path) -> None:
    out = tmp_path / "roi.json"
    out.write_text("")  # empty: free to replace
    for _ in range(2):
        result = runner.invoke(app, [*ROI, "--json", str(out)])
        assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert (data["schema_version"], data["kind"]) == (1, "roi")


@pytest.mark.parametrize("command", [*sorted(COMMANDS), "runs export"])
def test_every_command_that_writes_files_takes_force(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "--force" in result.output, result.output


def test_exports_are_replaced_by_exports_in_every_format(tmp_path: Path) -> None:
    store = _store_with_a_run(tmp_path / "runs.sqlite")
    for name in ("r.json", "r.csv", "r.jsonl"):
        for _ in range(2):
            result = runner.invoke(
                app, ["runs", "export", "1", "-o", str(tmp_path / name), "--store", str(store)]
            )
            assert result.exit_code == 0, result.output


def test_a_csv_is_not_replaced_by_a_result_json(tmp_path: Path) -> None:
    # Same kind, not just any specmeter file: --json over a per-request CSV is refused.
    store = _store_with_a_run(tmp_path / "runs.sqlite")
    csv_out = tmp_path / "rows.csv"
    assert (
        runner.invoke(app, ["runs", "export", "1", "-o", str(csv_out), "--store", str(store)]).exit_code == 0
    )
    result = runner.invoke(app, [*ROI, "--json", str(csv_out)])
    assert result.exit_code == 2 and "is not a specmeter JSON file" in result.stderr, result.output
    assert csv_out.read_text().startswith("run,draft,k,id,")


@pytest.mark.slow  # over 3 s: make test-slow (the default suite stays under 3 minutes)
def test_bench_reruns_over_its_own_outputs(tiny: Any, tmp_path: Path) -> None:
    from specmeter.workloads import bundled_prompts

    outs = {"--json": tmp_path / "r.json", "--csv": tmp_path / "r.csv", "--log": tmp_path / "r.jsonl"}
    argv = ["bench", "--target", str(tiny.target), "--draft", str(tiny.draft), "--prompts",
            str(bundled_prompts("smoke")), "--k", "2", "--limit", "1", "--max-tokens", "4", "--cost-repeats",
            "1", "-q", "--no-store"]  # fmt: skip
    argv += [a for option, path in outs.items() for a in (option, str(path))]
    for _ in range(2):
        result = runner.invoke(app, argv)
        assert result.exit_code == 0, result.output
    assert json.loads(outs["--json"].read_text())["complete"] is True
