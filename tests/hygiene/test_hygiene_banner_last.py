"""``bench --batch``: the batch table is inside the machine's frame, so a busy run's line is the last one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.measuring import bench_run as measuring_bench
from specmeter.measuring.run import Outcome

BUSY = {"verdict": "busy", "message": "MACHINE BUSY: other processes used 1.00 cores on average"}
BATCH = {"batch": 4, "waves": "2 waves of 4", "assumes": "the cost surface", "candidates": [
    {"draft": "d", "k": 4, "acceptance_length": 2.5, "speedup_measured_decode": 1.2,
     "speedup_measured_decode_ci": [1.1, 1.3], "speedup_predicted_waves": 1.25, "error": 0.04,
     "speedup_predicted": 1.3}]}  # fmt: skip


def test_bench_batch_ends_with_the_busy_line(
    tiny: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = {"kind": "bench", "run": {"config": {}}, "baseline": {"summary": None}, "candidates": [],
              "hygiene": BUSY, "bench": {"batch": BATCH}}  # fmt: skip

    def run_bench(cfg: Any, reporter: Any, render: Any = None) -> Outcome:
        render(result)
        return Outcome(result, 0)

    monkeypatch.setattr(measuring_bench, "run_bench", run_bench)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "a", "category": "c", "prompt": "hi"}) + "\n")
    args = ["bench", "--target", str(tiny.target), "--draft", str(tiny.draft), "--prompts", str(prompts),
            "--batch", "4", "--no-store"]  # fmt: skip
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    banner = f"⚠ {BUSY['message']}"
    assert "decode-only E at batch size 4" in out.output
    assert lines[0] == banner and lines[-1] == banner
