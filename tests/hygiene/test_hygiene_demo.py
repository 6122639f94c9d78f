"""``demo --strict``: a busy machine during any of the demo's runs ends it with exit code 4, and a busy run's
warning frames the summary above and below. The demo itself is faked here (a real ``demo --quick`` runs in
tests/cli/test_cli_demo.py); what is tested is the option, the exit code and the frame."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specmeter.bundled import demo as bundled_demo
from specmeter.cli.app import app
from specmeter.exitcodes import EXIT_NOISY_MACHINE, EXIT_OK
from specmeter.measuring.progress import Silent

BUSY = {"verdict": "busy", "message": "MACHINE BUSY: other processes used 1.00 cores on average"}
SUMMARY: dict[str, Any] = {"rows": [], "winners": {}, "danger_zone_pairs": [], "tune": None, "load": None,
                           "roi": {"seed": None, "measured": None}, "checks": []}  # fmt: skip


def test_strict_exit_is_4_when_any_run_was_busy() -> None:
    quiet = Silent()
    runs = {"general": {"hygiene": {"verdict": "quiet", "message": None}}, "legal": {"hygiene": BUSY}}
    assert bundled_demo.strict_exit(runs, quiet) == EXIT_NOISY_MACHINE
    assert quiet.warnings and "legal (busy)" in quiet.warnings[0] and "general" not in quiet.warnings[0]
    assert bundled_demo.strict_exit({"general": runs["general"], "tune-legal": {}}, Silent()) == EXIT_OK


@pytest.mark.parametrize("strict", [False, True])
def test_demo_strict_option_exit_code_and_frame(
    strict: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}

    def run_demo(out: Path, reporter: Any, **kwargs: Any) -> bundled_demo.DemoOutcome:
        seen.update(kwargs)
        runs = {"general": {"hygiene": {"verdict": "quiet", "message": None}}, "legal": {"hygiene": BUSY}}
        code = bundled_demo.strict_exit(runs, reporter) if kwargs["strict"] else EXIT_OK
        return bundled_demo.DemoOutcome(SUMMARY, code, runs)

    monkeypatch.setattr(bundled_demo, "run_demo", run_demo)
    args = ["demo", "--out", str(tmp_path / "demo"), "--no-store", *(["--strict"] if strict else [])]
    result = CliRunner().invoke(app, args)
    assert "Traceback" not in result.output
    assert seen["strict"] is strict
    assert result.exit_code == (EXIT_NOISY_MACHINE if strict else EXIT_OK), result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    banner = f"⚠ legal: {BUSY['message']}"
    # The busy run's line above the summary and as the very last line; the quiet run has none.
    assert lines[-1] == banner
    assert result.output.count(banner) == 2
    assert result.output.index(banner) < result.output.index("specmeter demo")
    assert "⚠ general" not in result.output


def test_demo_help_lists_strict() -> None:
    result = CliRunner().invoke(app, ["demo", "--help"])
    assert result.exit_code == 0 and "--strict" in result.output
