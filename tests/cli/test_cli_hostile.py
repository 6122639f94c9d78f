"""Hostile input files (issue 29): every reader answers with a line naming the file, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner, Result

from specmeter.cli.app import app
from specmeter.jsonsafe import MAX_DEPTH

runner = CliRunner()
DEEP = "[" * 100_000  # json.loads raises RecursionError on it
TOO_DEEP = f"invalid JSON (nested deeper than {MAX_DEPTH} levels"


def no_traceback(result: Result) -> None:
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


@pytest.mark.parametrize(
    ("command", "good"),
    [
        (["golden", "--from", "{log}", "--out", "{dir}/g.jsonl"], {"prompt": "hello"}),
        (["drift", "--requests", "{log}"], {"time": 1, "accepted_tokens": 1, "drafted_tokens": 2}),
        (
            ["monitor", "--requests", "{log}", "--once", "--history", "{dir}/h.sqlite"],
            {"time": 1, "accepted_tokens": 1, "drafted_tokens": 2},
        ),
    ],
)
def test_a_deeply_nested_log_line_is_a_bad_line_named_by_file_and_line(
    tmp_path: Path, command: list[str], good: dict[str, object]
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(good) + "\n" + DEEP + "\n", encoding="utf-8")
    result = runner.invoke(app, [a.format(log=log, dir=tmp_path) for a in command])
    no_traceback(result)
    assert f"{log}:2: {TOO_DEEP} at column {MAX_DEPTH + 1})" in result.output


def test_a_deeply_nested_train_corpus_is_one_line(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"text": "hello world"}\n' + DEEP + "\n", encoding="utf-8")
    result = runner.invoke(app, ["train", "--corpus", str(corpus), "--out", str(tmp_path / "m")])
    assert_usage_error(result, f"{corpus}:2: {TOO_DEEP}")


def test_a_deeply_nested_distill_corpus_is_one_line(tmp_path: Path) -> None:
    from specmeter.training.data import CorpusError
    from specmeter.training.distill import read_prompts

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"prompt": "hello world"}\n' + DEEP + "\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=rf"corpus.jsonl:2: invalid JSON \(nested deeper than {MAX_DEPTH}"):
        read_prompts(corpus)


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{file}", "--out", "{dir}/r.html"],
        ["compare", "{file}", "{file}"],
        ["roi", "--from-sweep", "{file}", "--traffic", "10", "--price-baseline", "4"],
        [
            "roi",
            "--from-whatif",
            "{file}",
            "--alpha",
            "0.5",
            "--monthly-tokens",
            "1B",
            "--baseline-throughput",
            "100",
            "--baseline-price",
            "2",
        ],
    ],
)
def test_a_deeply_nested_result_file_is_one_line(tmp_path: Path, command: list[str]) -> None:
    file = tmp_path / "r.json"
    file.write_text(DEEP, encoding="utf-8")
    result = runner.invoke(app, [a.format(file=file, dir=tmp_path) for a in command])
    assert_usage_error(result, str(file), f"nested deeper than {MAX_DEPTH} levels")


def test_a_deeply_nested_golden_set_and_model_config_are_file_errors(tmp_path: Path) -> None:
    from specmeter.modeldir import ModelDirError
    from specmeter.modeldir.files import read_json
    from specmeter.workloads.loader import WorkloadError, load_workload

    prompts = tmp_path / "golden.jsonl"
    prompts.write_text('{"id": "a", "prompt": "hi"}\n' + DEEP + "\n", encoding="utf-8")
    with pytest.raises(
        WorkloadError, match=rf"golden.jsonl:2: invalid JSON \(nested deeper than {MAX_DEPTH}"
    ):
        load_workload(prompts)
    config = tmp_path / "config.json"
    config.write_text('{"a": ' + DEEP, encoding="utf-8")
    with pytest.raises(ModelDirError, match="nested deeper than"):
        read_json(config)


# ------------------------------------------------------------------ lone surrogates (item 8)

SURROGATE_LINE = '{"id": "b", "prompt": "bad \\ud800x here"}'  # legal JSON, not text
NOT_TEXT = "invalid JSON (\\ud800 is a lone surrogate, not text at column 28)"


@pytest.mark.parametrize("command", ["bench", "whatif"])
def test_a_prompt_with_a_lone_surrogate_is_one_line_naming_file_and_line(
    tiny: Any, tmp_path: Path, command: str
) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "a", "prompt": "hello"}\n' + SURROGATE_LINE + "\n", encoding="utf-8")
    args = [command, "--target", str(tiny.target), "--draft", str(tiny.draft), "--prompts", str(prompts)]
    result = runner.invoke(app, [*args, "--max-tokens", "4", "--no-store"])
    assert_usage_error(result, f"{prompts}:2: {NOT_TEXT}")


def test_golden_and_train_refuse_a_line_with_a_lone_surrogate(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"prompt": "hello there"}\n' + SURROGATE_LINE + "\n", encoding="utf-8")
    out = tmp_path / "g.jsonl"
    result = runner.invoke(app, ["golden", "--from", str(log), "--out", str(out)])
    no_traceback(result)
    assert result.exit_code == 0 and f"{log}:2: {NOT_TEXT}" in result.output
    assert [json.loads(line)["prompt"] for line in out.read_text(encoding="utf-8").splitlines()] == [
        "hello there"
    ]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"text": "hello world"}\n{"text": "bad \\udfff"}\n', encoding="utf-8")
    result = runner.invoke(app, ["train", "--corpus", str(corpus), "--out", str(tmp_path / "m")])
    assert_usage_error(result, f"{corpus}:2: invalid JSON (\\udfff is a lone surrogate, not text")


# ------------------------------------------------------------------ extreme numbers (item 9)

GOOD = [{"time": 1796040000 + 600 * i, "accepted_tokens": 3, "drafted_tokens": 4} for i in range(4)]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"time": 1e18}, "time 1e+18 is out of range (Unix seconds or ms, 1970 to 3000)"),
        ({"time": -1e18}, "time -1e+18 is out of range"),
        ({"time": 10**400}, "time 100000000000… (401 characters) is out of range"),
        ({"time": "0001-01-01T00:00"}, "time '0001-01-01T00:00' is out of range"),
        ({"accepted_tokens": 1e308, "drafted_tokens": 1e308}, "field 'accepted': 1e+308 is more than 10^12"),
        ({"drafted_tokens": 10**30}, "field 'drafted': 100000000000… (31 characters) is more than 10^12"),
    ],
)
@pytest.mark.parametrize("command", ["drift", "monitor"])
def test_extreme_times_and_counts_in_a_request_log_are_bad_lines(
    tmp_path: Path, command: str, bad: dict[str, object], reason: str
) -> None:
    log = tmp_path / "log.jsonl"
    lines = [json.dumps(row) for row in GOOD] + [json.dumps(GOOD[0] | bad)]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = [command, "--requests", str(log), "--json", str(tmp_path / "out.json")]
    if command == "monitor":
        args += ["--once", "--history", str(tmp_path / "h.sqlite")]
    result = runner.invoke(app, args)
    no_traceback(result)
    assert f"{log}:5: {reason}" in result.output


def _sweep(baseline_rps: float, spec_rps: float, e: float = 1.3) -> dict[str, object]:
    capacity = {
        "baseline": {"run": "k=0", "level": "c=1", "requests_per_s": baseline_rps},
        "speculative": {"run": "k=2", "level": "c=1", "requests_per_s": spec_rps},
    }
    section = {"levels": ["c=1"], "cells": [], "best": [{"level": "c=1", "run": "k=2", "e": e}],
               "capacity": capacity, "failures": [], "validate": None}  # fmt: skip
    return {"schema_version": 1, "kind": "sweep", "baseline": {}, "candidates": [], "sweep": section}


@pytest.mark.parametrize(
    ("sweep", "what"),
    [
        (_sweep(1e-300, 2.0), "the baseline's capacity of 1e-300 req/s per instance needs 1e+301 instances"),
        (_sweep(2.0, 1e-300), "the speculative capacity of 1e-300 req/s"),
        (_sweep(2.0, 2.6, e=1e-300), "the batch-1 E's capacity of 2e-300 req/s"),
    ],
)
def test_roi_from_a_sweep_with_an_absurd_capacity_is_one_line(
    tmp_path: Path, sweep: dict[str, object], what: str
) -> None:
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(sweep), encoding="utf-8")
    result = runner.invoke(
        app, ["roi", "--from-sweep", str(path), "--traffic", "10", "--price-baseline", "4"]
    )
    assert_usage_error(result, f"--from-sweep: {path}: {what}", "more than 1,000,000: check the capacity")
    whatif = tmp_path / "whatif.json"
    cells = [{"alpha": a, "k": 4, "batch": 1, "e": 0.5 + 2 * a} for a in (0.2, 0.8)]
    whatif.write_text(json.dumps({"schema_version": 1, "kind": "whatif", "baseline": {}, "candidates": [],
                                  "whatif": {"cells": cells, "batches": [1], "ks": [4]}}))  # fmt: skip
    args = ["roi", "--from-whatif", str(whatif), "--traffic", "10", "--price-baseline", "4"]
    for extra in (["--alpha", "0.5"], ["--target-roi", "6", "--engineering-cost", "1000"]):
        result = runner.invoke(app, [*args, *extra, "--baseline-capacity", "1e-300"])
        assert_usage_error(
            result, "the baseline's capacity of 1e-300 req/s per instance needs 1e+301 instances"
        )


# ------------------------------------------------------------------ names too long (item 11)


@pytest.mark.parametrize(
    "command",
    [
        ["golden", "--from", "{long}", "--out", "{dir}/g.jsonl"],
        ["drift", "--requests", "{long}"],
        ["monitor", "--requests", "{long}", "--once", "--history", "{dir}/h.sqlite"],
        ["report", "{long}", "--out", "{dir}/r.html"],
        ["train", "--corpus", "{long}", "--out", "{dir}/m"],
    ],
)
def test_an_input_name_too_long_for_the_file_system_is_one_line(tmp_path: Path, command: list[str]) -> None:
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    long = tmp_path / ("n" * (limit + 10) + ".jsonl")
    result = runner.invoke(app, [a.format(long=long, dir=tmp_path) for a in command])
    assert_usage_error(result, f"is {limit + 16} bytes long; this file system allows {limit}")


# ------------------------------------------------------------------ terminal escapes (item 13)

EVIL = "\x1b[2J\x1b]0;pwned\x1b\\[red]x"  # clear the screen, set the window title
SHOWN = "\\x1b[2J\\x1b]0;pwned\\x1b\\[red]x"


@pytest.mark.parametrize(
    "command",
    [["drift", "--requests", "{log}"], ["monitor", "--requests", "{log}", "--once", "--history", "{h}"]],
)
def test_a_domain_from_a_log_is_shown_escaped(tmp_path: Path, command: list[str]) -> None:
    log = tmp_path / "log.jsonl"
    rows = [
        {"time": 1796040000 + 3600 * i, "domain": EVIL, "accepted_tokens": 3, "drafted_tokens": 4}
        for i in range(48)
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = runner.invoke(
        app, [a.format(log=log, h=tmp_path / "h.sqlite") for a in command], env={"COLUMNS": "300"}
    )
    no_traceback(result)
    assert "\x1b" not in result.output and SHOWN in result.output, result.output


def test_a_category_in_a_golden_warning_is_shown_not_obeyed(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"prompt": "hello there", "category": EVIL}) + "\n", encoding="utf-8")
    args = ["golden", "--from", str(log), "--out", str(tmp_path / "g.jsonl"), "--category-field", "category"]
    result = runner.invoke(app, [*args, "--n", "5"], env={"COLUMNS": "300"})
    no_traceback(result)
    assert "\x1b" not in result.output
    assert f"warning: {SHOWN}: 5 wanted, only 1 unique" in result.output, result.output


# ------------------------------------------------------------------ the real reason (item 14)


def test_when_every_log_line_is_skipped_drift_and_monitor_say_why(tmp_path: Path) -> None:
    # Issue 29: drift said "no request has a time stamp" when every line had been rejected for another reason.
    log = tmp_path / "log.jsonl"
    lines = ["{bad"] * 3 + [json.dumps({"time": 1e18, "accepted_tokens": 1, "drafted_tokens": 2})] * 2
    lines += [json.dumps({"x": 1}), json.dumps({"accepted_tokens": 9, "drafted_tokens": 2})]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    why = (
        f"--requests: no usable request in {log}: every line was skipped (3 × invalid JSON, 2 × time out of "
        "range, 1 × no speculative-decoding counts found, 1 × accepted tokens exceed drafted tokens)"
    )
    drift = runner.invoke(app, ["drift", "--requests", str(log)])
    no_traceback(drift)
    assert drift.exit_code == 2 and drift.stderr.strip().splitlines()[-1] == f"error: {why}"
    args = ["monitor", "--requests", str(log), "--once", "--history", str(tmp_path / "h.sqlite")]
    monitor = runner.invoke(app, args)
    no_traceback(monitor)
    assert monitor.exit_code == 1 and monitor.stderr.strip().splitlines()[-1] == f"error: {why}"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert_usage_error(
        runner.invoke(app, ["drift", "--requests", str(empty)]),
        f"--requests: no usable request in {empty}: it holds no line",
    )
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(row) + "\n" for row in GOOD), encoding="utf-8")
    reference = runner.invoke(app, ["drift", "--requests", str(good), "--reference", str(log)])
    no_traceback(reference)
    assert reference.exit_code == 2
    assert reference.stderr.strip().splitlines()[-1] == "error: " + why.replace("--requests", "--reference")


def test_a_json_array_golden_log_goes_on_after_an_element_it_refuses(tmp_path: Path) -> None:
    array = tmp_path / "log.json"
    deep = "[" * 300 + "]" * 300  # parses, so its end is known: only this element is refused
    array.write_text(
        '[{"prompt": "hello there"},\n' + deep + ',\n{"prompt": "bad \\ud800"},\n{"prompt": "second one"}]',
        encoding="utf-8",
    )
    out = tmp_path / "g.jsonl"
    result = runner.invoke(app, ["golden", "--from", str(array), "--out", str(out)])
    no_traceback(result)
    assert f"{array}:2: {TOO_DEEP} at column {MAX_DEPTH + 1}): skipped" in result.output
    assert (
        f"{array}:3: invalid JSON (\\ud800 is a lone surrogate, not text at column 17): skipped"
        in result.output
    )
    prompts = [json.loads(line)["prompt"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(prompts) == ["hello there", "second one"]
