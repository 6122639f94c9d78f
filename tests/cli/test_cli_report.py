"""specmeter report: a stored run (with timeline) or a result file, escaping, ROI options, screenshots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
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


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("candidates", 0, "k"), "four", "candidates[0].k: expected an integer >= 0 or null, got 'four'"),
        (("candidates", 0, "summary", "acceptance_rate"), float("nan"), "summary.acceptance_rate"),
        (("candidates", 0, "summary", "per_position", 0, "cumulative"), 1.5, "per_position[0].cumulative"),
        (("candidates", 0, "summary", "speedup_measured_ci"), "wide", "speedup_measured_ci"),
        (("baseline", "summary", "ttft_ms"), [1, 2], "baseline.summary.ttft_ms"),
        (("candidates",), {"draft": "x"}, "candidates: expected a list"),
    ],
)
def test_result_files_are_checked_field_by_field(
    stored: Path, tmp_path: Path, path: tuple[Any, ...], value: Any, field: str
) -> None:
    # report, compare and roi read the same file through one validation (docs/results.md): a bad field is one
    # error line naming it, exit 2, never a traceback from the chart or the bootstrap that would trip on it.
    data = json.loads((stored / "r.json").read_text())
    at = data
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))  # NaN is written as the NaN token that Python's json reads back
    good = str(stored / "r.json")
    roi = ["--monthly-tokens", "1B", "--baseline-throughput", "100", "--baseline-price", "2"]
    for args in (["report", str(bad), "--out", str(tmp_path / "r.html")], ["compare", good, str(bad)],
                 ["compare", str(bad), good], ["roi", str(bad), *roi]):  # fmt: skip
        assert_usage_error(runner.invoke(app, args), f"{bad}: ", field)
    assert not (tmp_path / "r.html").exists()


def test_files_specmeter_writes_pass_the_check(stored: Path) -> None:
    from specmeter.report.validate import validate_result

    assert validate_result(json.loads((stored / "r.json").read_text())) == []


SWEEP_CELL = {"run": "k=2", "k": 2, "level": "c=1", "concurrency": 1, "e": 1.3, "e_ci": [1.1, 1.5],
              "alpha": 0.6, "tau": 2.1, "ttft_ms": {"p50": 10.0, "p99": 20.0}, "stalls": 0,
              "requests_per_s": 2.0, "counters": {"equal": True}}  # fmt: skip


def _sweep_result(**changes: Any) -> dict[str, Any]:
    section = {"levels": ["c=1"], "cells": [dict(SWEEP_CELL)], "drift": None, "schedule": None,
               "best": [{"level": "c=1", "k": 2, "e": 1.3, "e_ci": [1.1, 1.5], "sure": True}],
               "capacity": {"headline": "2.0 → 2.6 req/s",
                            "baseline": {"run": "k=0", "level": "c=1", "requests_per_s": 2.0},
                            "speculative": {"run": "k=2", "level": "c=1", "requests_per_s": 2.6}},
               "failures": [], "validate": None}  # fmt: skip
    for key, value in changes.items():
        if key.startswith("cell_"):
            section["cells"][0][key.removeprefix("cell_")] = value
        else:
            section[key] = value
    return {"schema_version": 1, "kind": "sweep", "baseline": {}, "candidates": [], "sweep": section}


def test_a_sweep_section_that_passes_renders(tmp_path: Path) -> None:
    src, out = tmp_path / "sweep.json", tmp_path / "r.html"
    src.write_text(json.dumps(_sweep_result()))
    res = runner.invoke(app, ["report", str(src), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "Sweep: E_meas(k, level)" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        # Each was a traceback inside html_sweep.sweep_section (or economics.capacityroi for roi).
        ({"levels": 3}, "sweep.levels: expected a list or null, got 3"),
        ({"cell_e_ci": 5}, "sweep.cells[0].e_ci: expected [lo, hi] or null, got 5"),
        ({"cell_counters": [1]}, "sweep.cells[0].counters: expected an object or null"),
        ({"cells": {"run": "k=2"}}, "sweep.cells: expected a list or null"),
        ({"best": ["k=2"]}, "sweep.best[0]: expected an object"),
        ({"capacity": {"baseline": "fast"}}, "sweep.capacity.baseline: expected an object or null"),
        ({"drift": [{"level": "c=1", "ci": "wide"}]}, "sweep.drift[0].ci: expected [lo, hi] or null"),
        ({"validate": {"levels": [{"e": "x"}]}}, "sweep.validate.levels[0].e: expected a number"),
        ({"cell_alpha": 1.5}, "sweep.cells[0].alpha: expected a number in [0, 1] or null, got 1.5"),
    ],
)
def test_a_malformed_sweep_section_is_one_line_naming_the_field(
    tmp_path: Path, changes: dict[str, Any], field: str
) -> None:
    bad = tmp_path / "sweep.json"
    bad.write_text(json.dumps(_sweep_result(**changes)))
    out = tmp_path / "r.html"
    assert_usage_error(runner.invoke(app, ["report", str(bad), "--out", str(out)]), f"{bad}: {field}")
    assert not out.exists()
    roi = ["roi", "--from-sweep", str(bad), "--traffic", "10", "--price-baseline", "4"]
    assert_usage_error(runner.invoke(app, roi), f"--from-sweep: {bad}: {field}")


@pytest.mark.parametrize(
    ("cell", "field"),
    [
        ({"alpha": "high"}, "whatif.cells[0].alpha: expected a number in [0, 1], got 'high'"),
        ({"alpha": None}, "whatif.cells[0].alpha: expected a number in [0, 1], got None"),
        ({"k": 2.5}, "whatif.cells[0].k: expected an integer >= 1, got 2.5"),
        ({"batch": "8"}, "whatif.cells[0].batch: expected an integer >= 1, got '8'"),
        ({"e_ci": [1]}, "whatif.cells[0].e_ci: expected [lo, hi] or null"),
    ],
)
def test_a_malformed_whatif_section_is_one_line_naming_the_field(
    tmp_path: Path, cell: dict[str, Any], field: str
) -> None:
    cells = [{"alpha": a, "k": 4, "batch": 1, "e": 0.5 + 2 * a} for a in (0.2, 0.8)]
    cells[0].update(cell)
    section = {"cells": cells, "batches": [1], "ks": [4]}
    bad = tmp_path / "whatif.json"
    bad.write_text(json.dumps({"schema_version": 1, "kind": "whatif", "baseline": {}, "candidates": [],
                               "whatif": section}))  # fmt: skip
    out = tmp_path / "r.html"
    assert_usage_error(runner.invoke(app, ["report", str(bad), "--out", str(out)]), f"{bad}: {field}")
    assert not out.exists()
