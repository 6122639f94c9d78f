"""Console labels say the whole definition of docs/metrics.md, not half of it."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from specmeter.report.view import render_result


def test_the_stalls_label_names_the_rhythm_gap_rule(result: dict[str, Any]) -> None:
    console = Console(record=True, width=160)
    render_result(result, console)
    out = console.export_text()
    # A stall is > 3× the median of the request's gaps of at least 1 ms (bursts set no rhythm).
    assert "stalls (> 3× median of gaps ≥ 1 ms)" in out
