"""specmeter report: a stored run (with timeline) or a result file, escaping, ROI options, screenshots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.workloads import bundled_prompts

runner = CliRunner()


EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def stored(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    res = runner.invoke(app, [
        "bench", "--target", str(tiny.target), "--draft", str(tiny.draft), "--prompts",
        str(bundled_prompts("smoke")), "--k", "2,3", "--limit", "3", "--max-tokens", "12",
        "--cost-repeats", "1", "-q", "--store", str(root / "s.sqlite"), "--json", str(root / "r.json"),
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    return root


def report(stored: Path, *args: str) -> Any:
    return runner.invoke(app, ["report", *args, "--store", str(stored / "s.sqlite")])


def test_report_of_a_stored_run_has_its_timeline(stored: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = report(stored, "latest", "--out", str(out))
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    for chart in (
        "acceptance",
        "speedup",
        "positions",
        "models",
        "k",
        "gaps",
        "timeline",
        "memory",
        "traffic",
    ):
        assert f'data-chart="{chart}"' in text, chart
    assert "<b>source</b> run 1" in text and "GPU time per token" in text
    bad = report(stored, "1", "--out", str(out), "--request", "no-such-id")
    assert bad.exit_code == 2 and "no request with id 'no-such-id'" in bad.output


def test_report_of_a_result_file_escapes_names(stored: Path, tmp_path: Path) -> None:
    data = json.loads((stored / "r.json").read_text())
    data["candidates"][0]["draft"] = EVIL
    data["candidates"][0]["by_category"] = {EVIL: data["candidates"][0]["summary"]}
    data["run"]["config"]["target"] = EVIL
    (tmp_path / "evil.json").write_text(json.dumps(data))
    out = tmp_path / "r.html"
    res = report(stored, str(tmp_path / "evil.json"), "--out", str(out))
    assert res.exit_code == 0, res.output
    text = out.read_text(encoding="utf-8")
    assert "<script" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "timeline needs the run's request records" in text


def test_roi_options_fill_the_roi_section(stored: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    res = report(stored, "1", "--out", str(out), "--monthly-tokens", "2B", "--baseline-throughput", "1500",
                 "--baseline-price", "4", "--spec-price", "5", "--engineering-cost", "30k")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "monthly savings" in out.read_text(encoding="utf-8")
    half = report(stored, "1", "--out", str(out), "--monthly-tokens", "2B")
    assert half.exit_code == 2 and "ROI needs" in half.output


def test_screenshot_without_a_browser_is_a_clear_error(
    stored: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECMETER_CHROMIUM", str(tmp_path / "no-chromium-here"))
    res = report(stored, "1", "--out", str(tmp_path / "r.html"), "--screenshot", str(tmp_path / "r.png"))
    assert res.exit_code == 2 and "no chromium found" in res.output
    assert (tmp_path / "r.html").is_file()  # the report itself was written first
    bad = report(stored, "1", "--screenshot", str(tmp_path / "r.png"), "--screenshot-size", "huge")
    assert bad.exit_code == 2 and "--screenshot-size" in bad.output
