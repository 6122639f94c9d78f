"""``select --mix legal=0.7,general=0.3`` on the two shipped golden sets: several ``--prompts`` combined."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.workloads import bundled_prompts

runner = CliRunner()


def test_select_mixes_domains_from_two_golden_sets(tiny: Any, tmp_path: Path) -> None:
    legal, general = bundled_prompts("legal"), bundled_prompts("general")
    out = tmp_path / "select.json"
    result = runner.invoke(app, [
        "select", "--target", str(tiny.target), "--draft", str(tiny.draft), "--prompts", str(legal),
        "--prompts", str(general), "--mix", "legal=0.7,general=0.3", "--k", "2", "--limit", "2",
        "--max-tokens", "4", "--cost-repeats", "1", "--json", str(out), "--no-store", "--quiet",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["run"]["config"]["prompts"] == [str(legal), str(general)]
    domains = data["select"]["domains"]
    assert {d: (v["weight"], v["requests"]) for d, v in domains.items()} == {
        "legal": (0.7, 2),
        "general": (0.3, 2),
    }


def test_a_mix_is_checked_against_every_file_and_ids_must_not_collide(tiny: Any, tmp_path: Path) -> None:
    legal = bundled_prompts("legal")
    args = ["select", "--target", str(tiny.target), "--draft", str(tiny.draft), "--no-store"]
    one = runner.invoke(app, [*args, "--prompts", str(legal), "--mix", "legal=0.7,general=0.3"])
    assert_usage_error(one, "general")
    twice = runner.invoke(app, [*args, "--prompts", str(legal), "--prompts", str(legal), "--mix", "legal=1"])
    assert_usage_error(twice, "given twice")
