"""Ctrl-C before anything was measured: exit 130, one line, and no empty "partial" run left in the store.

KeyboardInterrupt is raised where Python would raise it for a SIGINT (inside model loading, inside the cost
curve), by patching the function that runs at that moment. Ctrl-C during the runs themselves (finished
requests kept) is covered in test_cli_bench.py; load's in tests/load/test_load_exits.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

import pytest
from typer.testing import CliRunner, Result

from specmeter.cli.app import app
from specmeter.store import RunStore

runner = CliRunner()


def _interrupt(*args: Any, **kwargs: Any) -> NoReturn:
    raise KeyboardInterrupt


def _bench(tiny: Any, tmp_path: Path) -> Result:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "a", "prompt": "The parties agree"}) + "\n")
    return runner.invoke(app, [
        "bench", "--target", str(tiny.target), "--draft", str(tiny.draft), "--prompts", str(prompts),
        "--max-tokens", "4", "--cost-repeats", "1", "--store", str(tmp_path / "runs.sqlite"),
    ])  # fmt: skip


def _one_line(result: Result) -> str:
    assert result.exit_code == 130, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    ("where", "said"),
    [
        (
            "specmeter.measuring.models.load_models",
            "Interrupted while loading the models; nothing was measured.",
        ),
        (
            "specmeter.engine.runner.measure_costs",
            "Interrupted while measuring the cost curve; nothing was measured",
        ),
    ],
)
def test_ctrl_c_before_the_first_request(
    tiny: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, said: str
) -> None:
    monkeypatch.setattr(where, _interrupt)
    assert said in _one_line(_bench(tiny, tmp_path))
    store = tmp_path / "runs.sqlite"
    if store.exists():  # the run was begun before the cost curve: it must be gone again
        with RunStore(store) as db:
            assert db.list_runs() == []


def test_ctrl_c_in_a_command_that_does_not_handle_it(tiny: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # serve loading its models: typer would exit 130 without a word.
    monkeypatch.setattr("specmeter.server.local_engine.LocalEngine.load", _interrupt)
    line = _one_line(runner.invoke(app, ["serve", "--target", str(tiny.target), "--port", "0"]))
    assert line == "Interrupted (Ctrl-C)."
