"""The demo's runs in the store: each one said ("Recorded as run N"), its benches comparable with a bench."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.store import RunStore
from specmeter.workloads import bundled_prompts

runner = CliRunner()


@pytest.mark.slow  # a whole quick demo, on the tiny models
def test_demo_runs_are_announced_and_its_benches_compare_with_a_bench(tiny: Any, tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    for name, model in (("target", tiny.target), ("draft-general", tiny.random_draft),
                        ("draft-tiny", tiny.random_draft), ("draft-legal", tiny.draft)):  # fmt: skip
        (models / name).symlink_to(model)
    store = tmp_path / "runs.sqlite"
    demo = runner.invoke(app, ["demo", "--quick", "--models", str(models), "--out", str(tmp_path / "d"),
                               "--store", str(store)])  # fmt: skip
    assert demo.exit_code == 0, demo.output
    with RunStore(store) as s:
        runs = s.list_runs()
        configs = {r.id: s.result(r.id)["run"]["config"] for r in runs}
    recorded = {int(n) for n in re.findall(r"Recorded as run (\d+)", demo.output)}
    assert recorded == {r.id for r in runs}  # the tune run among them
    assert sorted({r.kind for r in runs}) == ["bench", "tune"]
    (legal,) = [i for i, c in configs.items() if c.get("domain") == "legal" and "section" not in c]
    bench = runner.invoke(app, [
        "bench", "--target", str(models / "target"), "--draft", str(models / "draft-general"),
        "--draft", str(models / "draft-tiny"), "--draft", str(models / "draft-legal"), "--k", "4",
        "--prompts", str(bundled_prompts("legal")), "--limit", "8", "--max-tokens", "32",
        "--cost-repeats", "3", "--store", str(store), "--quiet",
    ])  # fmt: skip
    assert bench.exit_code == 0, bench.output
    compare = runner.invoke(
        app, ["compare", str(legal), "latest", "--store", str(store)], env={"COLUMNS": "200"}
    )
    assert compare.exit_code == 0, compare.output
    assert "different" not in compare.output and "--force" not in compare.output
