"""`load --prompts` takes several golden sets, as bench and select do (issue 38)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from specmeter.cli.app import app

runner = CliRunner()


def test_several_prompts_files_are_read_together(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps({"id": "q1", "prompt": "one"}) + "\n", "utf-8")
    b.write_text(json.dumps({"id": "q1", "prompt": "two"}) + "\n", "utf-8")
    args = ["load", "--endpoint", "http://127.0.0.1:9", "--concurrency", "1", "--no-metrics"]
    result = runner.invoke(app, [*args, "--prompts", str(a), "--prompts", str(b)])
    # Both files were read: the second's id clashes with the first's, before any request is sent.
    assert result.exit_code == 2, result.output
    assert "id 'q1' is also in" in result.output and "unique across the --prompts files" in result.output
