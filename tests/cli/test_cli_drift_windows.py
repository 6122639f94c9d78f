"""`drift --since` that means the same on any day, and a window without requests told apart from a drop."""

from __future__ import annotations

from pathlib import Path

from test_cli_drift import write_log
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.exitcodes import EXIT_FAILED, EXIT_NOTHING_TO_COMPARE, codes_for

runner = CliRunner()


def test_since_a_duration_counts_back_from_the_last_request(tmp_path: Path) -> None:
    log = write_log(tmp_path / "prod.jsonl", drop="legal")
    result = runner.invoke(app, ["drift", "--requests", str(log), "--since", "24h"])
    assert result.exit_code == EXIT_FAILED, result.output  # the planted drop, as with the date
    assert "current:   2026-11-30 11:58 → 2026-12-01 11:58 (800 requests)" in result.stdout
    assert "reference: 2026-11-29 11:58 → 2026-11-30 11:58 (800 requests)" in result.stdout
    assert any(
        line.startswith("legal α") and "significant drop" in line for line in result.stdout.splitlines()
    )
    half = runner.invoke(app, ["drift", "--requests", str(log), "--since", "12h", "--window", "12h"])
    assert "current:   2026-11-30 23:58 → 2026-12-01 11:58 (400 requests)" in half.stdout, half.output


def test_a_window_without_requests_exits_3_not_1(tmp_path: Path) -> None:
    log = write_log(tmp_path / "prod.jsonl", drop="legal")
    for since, said in (
        ("2026-12-05T00:00", "the current window holds no request: nothing to compare"),
        ("2026-11-29T12:00", "holds no request: nothing to compare"),  # the day before: no log yet
    ):
        result = runner.invoke(app, ["drift", "--requests", str(log), "--since", since])
        assert result.exit_code == EXIT_NOTHING_TO_COMPARE == 3, result.output
        assert said in result.stderr and "Traceback" not in result.output
    assert [c.code for c in codes_for("drift") if c.code in (1, 3)] == [1, 3]
    assert "3 nothing to compare" in runner.invoke(app, ["drift", "--help"]).stdout.replace("\n", " ")


def test_readme_step_5_runs_on_a_log_from_any_day(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    step = next(
        line for line in readme.splitlines() if line.startswith("specmeter drift --requests requests.jsonl")
    )
    args = step.split()[1:]
    assert "2026-" not in step  # no date that is only right on one day
    log = write_log(tmp_path / "requests.jsonl", drop=None, seed=2)
    result = runner.invoke(app, [a.replace("requests.jsonl", str(log)) for a in args])
    assert result.exit_code == 0, result.output
