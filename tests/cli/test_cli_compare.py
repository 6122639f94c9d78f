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


@pytest.fixture(scope="module")
def unlike(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two stored runs that measure different things: other prompts and another k."""
    root = tmp_path_factory.mktemp("unlike")
    other = root / "other.jsonl"
    other.write_text("".join(json.dumps({"id": f"o{i}", "prompt": f"Clause {i} of the lease"}) + "\n"
                             for i in range(10)))  # fmt: skip
    for prompts, k in ((bundled_prompts("smoke"), "3"), (other, "2")):
        res = runner.invoke(app, [
            "bench", "--target", str(tiny.target), "--draft", str(tiny.draft), "--prompts", str(prompts),
            "--k", k, "--limit", "10", "--max-tokens", "8", "--cost-repeats", "1", "-q",
            "--store", str(root / "s.sqlite"),
        ])  # fmt: skip
        assert res.exit_code == 0, res.output
    return root


def _errors(res: Any) -> list[str]:
    return [line for line in res.stderr.splitlines() if line.startswith("error: ")]


def test_runs_that_measure_different_things_get_no_significance(unlike: Path, tmp_path: Path) -> None:
    # Issue 12: different prompt sets (or k, kinds, targets) were compared as if the change explained the
    # difference. Now: said prominently, intervals withheld, --fail-on refused, unless --force.
    out = tmp_path / "cmp.json"
    res = compare(unlike, "1", "2", "--json", str(out))
    assert res.exit_code == 0, res.output
    assert res.output.count("NOT COMPARABLE") == 2  # above the tables and at the end
    assert "different prompt sets: 0 request ids in common of A's 10 and B's 10" in res.output
    assert "different draft lengths: draft@k=3 (A) against draft@k=2 (B)" in res.output
    assert "withheld: not comparable" in res.output and "▲" not in res.output and "▼" not in res.output
    data = json.loads(out.read_text())
    assert data["comparable"] is False and data["withheld"] is True and len(data["mismatches"]) == 2
    assert all(r["ci"] is None and not r["significant"] for b in data["blocks"] for r in b["rows"])
    refused = compare(unlike, "1", "2", "--fail-on", "alpha=0.05")
    assert refused.exit_code == 2 and len(_errors(refused)) == 1, refused.output
    assert "--fail-on: run 1 and run 2 are not comparable" in _errors(refused)[0]
    forced = compare(unlike, "1", "2", "--fail-on", "alpha=0.5", "--force", "--json", str(out))
    assert forced.exit_code == 0, forced.output
    assert "compared with --force although: different prompt sets" in forced.output
    assert json.loads(out.read_text())["withheld"] is False


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d.update(kind="load"), "different kinds of run: A is bench, B is load"),
        (lambda d: d["run"]["models"]["target"].update(name="other-target"), "different targets: A target"),
        (lambda d: d["run"]["config"].update(temperature=0.7), "different sampling temperatures: A 0, B 0.7"),
        (lambda d: d["run"]["config"].update(prompts="legal.jsonl"), "different prompt sets: A "),
    ],
)
def test_result_files_that_differ(runs: Path, tmp_path: Path, edit: Any, said: str) -> None:
    data = json.loads((runs / "r1.json").read_text())
    edit(data)
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(data))
    res = compare(runs, str(runs / "r1.json"), str(changed))
    assert res.exit_code == 0 and "NOT COMPARABLE" in res.output and said in res.output, res.output


def test_the_side_without_records_is_named(runs: Path) -> None:
    res = compare(runs, "1", str(runs / "r2.json"))
    assert f"run B ({runs / 'r2.json'}) has no per-request records" in res.output.replace("\n", " ")
    res = compare(runs, str(runs / "r2.json"), "1")
    assert f"run A ({runs / 'r2.json'}) has no per-request records" in res.output.replace("\n", " ")
    both = compare(runs, str(runs / "r1.json"), str(runs / "r2.json"))
    assert "and B (" in both.output and "have no per-request records" in both.output.replace("\n", " ")
