"""Assertions shared by the CLI tests (a uniquely named module: the test dirs have no __init__.py)."""

from __future__ import annotations

from typer.testing import Result


def assert_usage_error(result: Result, *needles: str) -> str:
    """Exit 2, no traceback, exactly one ``error:`` line on stderr that contains every needle."""
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]
