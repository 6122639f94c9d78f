"""Every output option of every command is checked before the command does any work (issue 12).

One matrix: each (command, output option) gets a directory where a file belongs (or a file where a
directory belongs), a path below a regular file, a path in ``/proc`` (``access()`` says writable to root,
creating a file there fails), and, where the command has inputs, an input. Each must end with exactly one
``error:`` line naming the option and exit 2 (compat: 3, its "cannot check"), and leave nothing behind.
Nothing here loads a model or sends a request once the check is in place; the few commands that would
otherwise start serving or training are stubbed or given one step so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from specmeter.cli.app import app

runner = CliRunner()

PROC = Path("/proc")


@dataclass(frozen=True)
class Case:
    name: str
    # {T} target, {D} draft, {P} prompts, {R} result file, {L} request log, {C} corpus, {Q} trace,
    # {K} k schedule, {W} whatif result, {SW} sweep result
    args: tuple[str, ...]
    option: str
    directory: bool = False  # the option names a directory the command fills (train --out)
    code: int = 2
    same_as: str | None = None  # an input placeholder the option must not be allowed to overwrite


SCRAPE = ("monitor", "--scrape", "http://127.0.0.1:9/metrics", "--once", "--interval", "1s")
SWEEP = ("sweep", "--endpoint", "0=http://127.0.0.1:9", "--endpoint", "2=http://127.0.0.1:9",
         "--prompts", "{P}")  # fmt: skip
ROI = ("roi", "--speedup", "1.5", "--monthly-tokens", "1B", "--baseline-throughput", "100",
       "--baseline-price", "2")  # fmt: skip
PROMETHEUS = ("monitor", "--prometheus", "http://127.0.0.1:9", "--once")
WHATIF = ("whatif", "--target", "{T}", "--draft", "{D}", "--prompts", "{P}", "--overlay", "{R}", "--no-store")
LOAD_TRACE = ("load", "--endpoint", "http://127.0.0.1:9", "--prompts", "{P}", "--trace", "{Q}")
MONEY = ("--monthly-tokens", "1B", "--baseline-throughput", "100", "--baseline-price", "2")
CASES = [
    Case(
        "bench", ("bench", "--target", "{T}", "--draft", "{D}", "--prompts", "{P}"), "--json", same_as="{P}"
    ),
    Case("bench", ("bench", "--target", "{T}", "--draft", "{D}", "--prompts", "{P}"), "--csv", same_as="{P}"),
    Case("bench", ("bench", "--target", "{T}", "--draft", "{D}", "--prompts", "{P}"), "--log", same_as="{T}"),
    Case("bench", ("bench", "--target", "{T}", "--draft", "{D}", "--prompts", "{P}"), "--store"),
    Case("tune", ("tune", "--target", "{T}", "--draft", "{D}", "--prompts", "{P}"), "--json", same_as="{P}"),
    Case("whatif", WHATIF, "--json", same_as="{R}"),  # --overlay (issue: it was overwritten, exit 0)
    Case("whatif", WHATIF, "--csv", same_as="{P}"),
    Case("whatif", WHATIF, "--log", same_as="{T}/config.json"),
    Case("select", ("select", "--target", "{T}", "--draft", "{D}", "--prompts", "{P}"), "--csv"),
    Case("demo", ("demo", "--quick"), "--out", directory=True),
    Case("demo", ("demo", "--quick", "--out", "{O}"), "--store"),
    Case(
        "train",
        (
            "train",
            "--corpus",
            "{C}",
            "--steps",
            "1",
            "--preset",
            "draft-tiny",
            "--work",
            "{O}",
            "--out",
            "{X}",
        ),
        "--out",
        directory=True,
    ),
    Case(
        "train",
        ("train", "--corpus", "{C}", "--steps", "1", "--preset", "draft-tiny", "--out", "{O}"),
        "--work",
        directory=True,
    ),
    Case(
        "distill",
        (
            "distill",
            "--target",
            "{T}",
            "--init",
            "{D}",
            "--corpus",
            "{C}",
            "--steps",
            "1",
            "--work",
            "{O}",
            "--out",
            "{X}",
        ),
        "--out",
        directory=True,
        same_as="{T}",
    ),
    Case(
        "distill",
        ("distill", "--target", "{T}", "--init", "{D}", "--corpus", "{C}", "--steps", "1", "--out", "{O}"),
        "--work",
        directory=True,
        same_as="{D}",
    ),
    Case("compat", ("compat", "{T}", "{D}"), "--json", code=3, same_as="{T}/config.json"),
    Case("doctor", ("doctor", "--seconds", "0.2"), "--json"),
    Case("serve", ("serve", "--target", "{T}", "--port", "0"), "--log", same_as="{T}/config.json"),
    Case("load", ("load", "--endpoint", "http://127.0.0.1:9", "--prompts", "{P}"), "--json"),
    Case("load", ("load", "--endpoint", "http://127.0.0.1:9", "--prompts", "{P}"), "--csv", same_as="{P}"),
    Case("load", ("load", "--endpoint", "http://127.0.0.1:9", "--prompts", "{P}"), "--log"),
    Case("load", LOAD_TRACE, "--json", same_as="{Q}"),  # --trace (it was overwritten)
    Case("load", (*LOAD_TRACE, "--tokenizer", "{T}"), "--log", same_as="{T}/config.json"),
    Case("sweep", SWEEP, "--json"),
    Case("sweep", SWEEP, "--csv", same_as="{P}"),
    Case("sweep", SWEEP, "--log", same_as="{P}"),
    Case("sweep", SWEEP, "--schedule-out"),
    Case("sweep", (*SWEEP, "--draft", "{D}"), "--json", same_as="{D}"),  # a local draft directory
    Case("sweep", SWEEP, "--store"),
    Case("sweep", SWEEP, "--logs", directory=True),
    Case("monitor", SCRAPE, "--history"),
    Case("monitor", SCRAPE, "--alerts-log"),
    Case("monitor", ("monitor", "--requests", "{L}", "--once"), "--json", same_as="{L}"),
    Case("monitor", PROMETHEUS, "--json"),
    Case("golden", ("golden", "--from", "{L}", "--out", "{O}.jsonl"), "--json", same_as="{L}"),
    Case("golden", ("golden", "--from", "{L}"), "--out", same_as="{L}"),
    Case("drift", ("drift", "--requests", "{L}"), "--json", same_as="{L}"),
    Case(
        "runs export", ("runs", "export", "1", "--format", "json", "--store", "{S}"), "--out", same_as="{S}"
    ),
    Case("report", ("report", "{R}"), "--out", same_as="{R}"),
    Case("report", ("report", "{R}"), "--screenshot"),
    Case("compare", ("compare", "{R}", "{R}"), "--json", same_as="{R}"),
    Case("roi", ROI, "--json"),
    Case("roi", ("roi", "--from-whatif", "{W}", "--alpha", "0.5", *MONEY), "--json", same_as="{W}"),
    Case(
        "roi",
        ("roi", "--from-sweep", "{SW}", "--traffic", "1", "--price-baseline", "2"),
        "--json",
        same_as="{SW}",
    ),
    Case(
        "serve",
        ("serve", "--target", "{T}", "--draft", "{D}", "--port", "0", "--k-schedule", "{K}"),
        "--log",
        same_as="{K}",
    ),
    Case("plan", ("plan", "--target", "{T}"), "--json", same_as="{T}/config.json"),
]


@pytest.fixture(scope="module")
def inputs(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("outputs")
    prompts = root / "golden.jsonl"
    prompts.write_text(json.dumps({"id": "a", "category": "c", "prompt": "hello there"}) + "\n")
    log = root / "requests.jsonl"
    record = {"id": "r1", "domain": "legal", "output_tokens": 8, "accepted_tokens": 3, "drafted_tokens": 8,
              "steps": 4, "latency_ms": 10.0, "prompt": "hi"}  # fmt: skip
    log.write_text(json.dumps(record) + "\n")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"text": f"document number {i} ."}) + "\n" for i in range(40)))
    result = root / "result.json"
    result.write_text(json.dumps({"schema_version": 1, "kind": "bench", "baseline": {}, "candidates": []}))
    store = root / "runs.sqlite"
    store.write_bytes(b"")
    trace = root / "trace.jsonl"
    trace.write_text(json.dumps({"t": 0.0, "input_tokens": 4, "output_tokens": 4}) + "\n")
    schedule = root / "schedule.json"
    schedule.write_text("[[1, 4, 2]]")
    cells = [{"alpha": a, "k": 2, "batch": 1, "e": 1 + a} for a in (0.2, 0.8)]
    whatif = root / "whatif.json"
    whatif.write_text(json.dumps({"kind": "whatif", "whatif": {"cells": cells, "batches": [1]}}))
    sweep = root / "sweep.json"
    capacity = {"baseline": {"run": "k=0", "requests_per_s": 1.0},
                "speculative": {"run": "k=2", "requests_per_s": 2.0}}  # fmt: skip
    sweep.write_text(json.dumps({"kind": "sweep", "sweep": {"capacity": capacity}}))
    return {"{T}": tiny.target, "{D}": tiny.draft, "{P}": prompts, "{L}": log, "{C}": corpus,
            "{R}": result, "{S}": store, "{Q}": trace, "{K}": schedule, "{W}": whatif,
            "{SW}": sweep}  # fmt: skip


def _fill(args: tuple[str, ...], inputs: dict[str, Path], out: Path) -> list[str]:
    filled = []
    for a in args:
        for key, value in inputs.items():
            a = a.replace(key, str(value))
        filled.append(a.replace("{O}", str(out / "out")).replace("{X}", str(out / "unused")))
    return filled


def _run(case: Case, inputs: dict[str, Path], tmp: Path, value: Path, monkeypatch: Any) -> Result:
    import specmeter.server.hosting as server

    def no_server(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("serve started although its --log cannot be written")

    monkeypatch.setattr(server, "run_foreground", no_server)
    monkeypatch.chdir(tmp)  # a default output (report.html, the monitor's history) would land here
    args = _fill(case.args, inputs, tmp)
    if f"{case.option}" in args:  # the option is part of the fixed arguments (train/distill --out)
        args[args.index(case.option) + 1] = str(value)
    else:
        args += [case.option, str(value)]
    return runner.invoke(app, args)


def _assert_one_error(result: Result, case: Case, *needles: str) -> None:
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == case.code, (case, result.output)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, lines
    for needle in (case.option, *needles):
        assert needle in errors[0], (needle, errors[0])


def _ids(cases: list[Case]) -> list[str]:
    return [f"{c.name} {c.option}" for c in cases]


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_wrong_kind_of_path(case: Case, inputs: dict[str, Path], tmp_path: Path, monkeypatch: Any) -> None:
    if case.directory:
        value = tmp_path / "a-file"
        value.write_text("keep me")
        needle = "is a file; give a directory"
    else:
        value = tmp_path / "a-directory"
        value.mkdir()
        needle = "is a directory; give a file path"
    _assert_one_error(_run(case, inputs, tmp_path, value, monkeypatch), case, needle)
    assert value.is_dir() != case.directory and (case.directory is False or value.read_text() == "keep me")


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_below_a_file(case: Case, inputs: dict[str, Path], tmp_path: Path, monkeypatch: Any) -> None:
    blocker = tmp_path / "plain-file"
    blocker.write_text("")
    result = _run(case, inputs, tmp_path, blocker / "x" / "out.json", monkeypatch)
    _assert_one_error(result, case, f"{blocker} is not a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain-file"]


@pytest.mark.skipif(not sys.platform.startswith("linux") or not PROC.is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_unwritable_place(case: Case, inputs: dict[str, Path], tmp_path: Path, monkeypatch: Any) -> None:
    result = _run(case, inputs, tmp_path, PROC / "specmeter-test-output", monkeypatch)
    _assert_one_error(result, case, f"no permission to create files in {PROC}")


SAME = [c for c in CASES if c.same_as is not None]


@pytest.mark.parametrize("case", SAME, ids=_ids(SAME))
def test_an_input_is_never_an_output(
    case: Case, inputs: dict[str, Path], tmp_path: Path, monkeypatch: Any
) -> None:
    assert case.same_as is not None
    target = Path(_fill((case.same_as,), inputs, tmp_path)[0])
    before = {p: p.read_bytes() for p in ([target] if target.is_file() else sorted(target.rglob("*")))}
    result = _run(case, inputs, tmp_path, target, monkeypatch)
    _assert_one_error(result, case, "an output never overwrites an input")
    assert {p: p.read_bytes() for p in before} == before


def test_one_path_for_three_outputs_is_one_error_before_any_work(
    inputs: dict[str, Path], tmp_path: Path, monkeypatch: Any
) -> None:
    # bench --json X --csv X --log X once exited 0 leaving only the JSON (issue 12). Refused up front: one
    # error: line naming both later options, exit 2, no model loaded, no file and no run in the store.
    import specmeter.engine.loader as loader

    def no_load(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a model was loaded although the outputs share one path")

    monkeypatch.setattr(loader, "load_model", no_load)
    out = tmp_path / "x"
    args = _fill(("bench", "--target", "{T}", "--draft", "{D}", "--prompts", "{P}"), inputs, tmp_path)
    result = runner.invoke(app, [*args, "--json", str(out), "--csv", str(out), "--log", str(out)])
    _assert_one_error(result, Case("bench", (), "--csv"), "--log", f"{out} is also --json")
    assert not out.exists()
    assert not Path(os.environ["SPECMETER_STORE"]).exists()


DEFAULT_WORK = [
    Case("train", ("train", "--corpus", "{C}", "--steps", "1", "--preset", "draft-tiny"), "--out", True),
    Case("distill", ("distill", "--target", "{T}", "--init", "{D}", "--corpus", "{C}", "--steps", "1"),
         "--out", True),
]  # fmt: skip


@pytest.mark.parametrize("case", DEFAULT_WORK, ids=_ids(DEFAULT_WORK))
def test_a_bad_out_is_one_error_not_two_with_the_default_work(
    case: Case, inputs: dict[str, Path], tmp_path: Path, monkeypatch: Any
) -> None:
    # Without --work the checkpoint directory is OUT.work: a bad --out used to add a second error line,
    # about a --work the user never gave. The default is checked (and named as such) only once --out passes.
    blocker = tmp_path / "plain-file"
    blocker.write_text("")
    result = _run(case, inputs, tmp_path, blocker / "x" / "out", monkeypatch)
    _assert_one_error(result, case, "not a directory")
    (tmp_path / "o.work").write_text("")
    result = _run(case, inputs, tmp_path, tmp_path / "o", monkeypatch)
    _assert_one_error(
        result, Case(case.name, (), "--work (default OUT.work)"), f"{tmp_path / 'o.work'} is a file"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.work", "plain-file"]


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_a_name_too_long_for_the_file_system(
    case: Case, inputs: dict[str, Path], tmp_path: Path, monkeypatch: Any
) -> None:
    # Issue 29: a 300-character name was an OSError errno 36 traceback (before the work, or after it).
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    value = tmp_path / ("n" * (limit + 45) + ".json")
    result = _run(case, inputs, tmp_path, value, monkeypatch)
    _assert_one_error(result, case, f"is {limit + 50} bytes long; this file system allows {limit}")
