"""`--seed` says what it seeds (issue 20): sampling, never the bootstrap, whose seed is fixed at 0."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app


@pytest.mark.parametrize("command", ["bench", "tune", "select"])
def test_seed_help_says_sampling_and_a_fixed_bootstrap_seed(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())
    help_text = text.split("--seed", 1)[1][:200]
    assert "sampling" in help_text
    assert "(and the bootstrap)" not in help_text
    assert "Bootstrap intervals always use seed 0" in help_text


def test_no_interval_takes_a_seed_from_the_command_line() -> None:
    # summaries and select's weighted speedups bootstrap with seed 0 (docs/metrics.md, "Statistics")
    import inspect

    from specmeter.metrics.summary import summarize
    from specmeter.selection.select_analysis import analyse_select

    assert "seed" not in inspect.signature(summarize).parameters
    assert "seed" not in inspect.signature(analyse_select).parameters
