"""Hostile input files (issue 29): every reader answers with a line naming the file, never a traceback."""

from __future__ import annotations

import json
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
