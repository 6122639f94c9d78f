"""specmeter compare: stored runs and result files, significance, --fail-on exit codes, JSON output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.workloads import bundled_prompts

runner = CliRunner()


WIDE = {"COLUMNS": "200"}


@pytest.fixture(scope="module")
def runs(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs 1 and 2: the layer-skip draft twice; run 3: a useless draft under the same name ("draft").

    Ten prompts: intervals need 10 requests (docs/metrics.md, "Statistics")."""
    root = tmp_path_factory.mktemp("compare")
    useless = root / "elsewhere" / "draft"
    shutil.copytree(tiny.random_draft, useless)
    for i, draft in enumerate([tiny.draft, tiny.draft, useless], start=1):
        res = runner.invoke(app, [
            "bench", "--target", str(tiny.target), "--draft", str(draft), "--prompts",
            str(bundled_prompts("smoke")), "--k", "3", "--limit", "10", "--max-tokens", "10",
            "--cost-repeats", "1", "-q", "--store", str(root / "s.sqlite"),
            "--json", str(root / f"r{i}.json"),
        ])  # fmt: skip
        assert res.exit_code == 0, res.output
    return root


def compare(runs: Path, *args: str) -> Any:
    return runner.invoke(
        app, ["compare", *args, "--store", str(runs / "s.sqlite"), "--resamples", "300"], env=WIDE
    )


def test_the_same_draft_twice_has_no_acceptance_change(runs: Path) -> None:
    res = compare(runs, "1", "2", "--fail-on", "alpha=0.05,tau=0.1,position=0.05")
    assert res.exit_code == 0, res.output
    assert "paired by request id" in res.output
    assert "[+0.000, +0.000]" in res.output  # greedy: identical acceptance, exactly
    assert "No significant regression" in res.output


def test_a_useless_draft_is_a_regression_and_exits_1(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    res = compare(runs, "latest~1", "latest", "--fail-on", "alpha=0.05", "--json", str(out))
    assert res.exit_code == 1, res.output
    assert "▼ worse" in res.output and "REGRESSION draft@k=3 · all: α" in res.output
    data = json.loads(out.read_text())
    assert data["a"] == "run 2" and data["b"] == "run 3" and data["regressions"] >= 1
    alpha = next(
        r
        for b in data["blocks"]
        if b["candidate"] == "draft@k=3"
        for r in b["rows"]
        if r["metric"] == "alpha"
    )
    assert alpha["diff"] < -0.3 and alpha["significant"] and alpha["regression"]
    # Without --fail-on the same comparison is informational: exit 0.
    assert compare(runs, "2", "3").exit_code == 0


def test_result_files_compare_approximately(runs: Path) -> None:
    res = compare(runs, str(runs / "r1.json"), str(runs / "r3.json"), "--fail-on", "alpha=0.05,ttft=5")
    assert res.exit_code == 1, res.output
    assert "approximate intervals" in res.output and "≈ [" in res.output
    assert "--fail-on ttft: not tested" in res.output
    mixed = compare(runs, "1", str(runs / "r2.json"))
    assert mixed.exit_code == 0 and "approximate" in mixed.output


def test_usage_errors_exit_2(runs: Path) -> None:
    for args, message in [
        (["1", "2", "--fail-on", "speed=1"], "--fail-on"),
        (["1", "99"], "no run 99"),
        (["1", "latest~9"], "fewer runs"),
        (["1", "nothing.json"], "no such result file"),
    ]:
        res = compare(runs, *args)
        assert res.exit_code == 2, (args, res.output)
        assert message in res.output and "Traceback" not in res.output
