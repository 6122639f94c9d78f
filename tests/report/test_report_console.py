"""Console rendering of a whole result: key figures, danger flags, verdict, missing values."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from report_fixtures import LEGAL_REASONS
from rich.console import Console

from specmeter.report.console import DANGER_STYLE, render_result, verdict


def render(result: dict[str, Any]) -> str:
    console = Console(record=True, width=160)
    render_result(result, console)
    return console.export_text()


def test_header_shows_the_run(result: dict[str, Any]) -> None:
    out = render(result)
    for text in ("specmeter bench", "demo-target", "golden.jsonl", "draft-a, draft-c", "0.00 (top_p 1.00)"):
        assert text in out
    assert "requests     40" in out


def test_candidate_tables_show_key_figures(result: dict[str, Any]) -> None:
    out = render(result)
    expected = [
        "0.652 (1,304/2,000) [0.61, 0.69]",  # α with count and CI
        "0.710 (1,304/1,837) [0.68, 0.74]",  # β with A/(A+R)
        "2.70 (766 steps) [2.55, 2.86]",  # τ
        "0.81/0.81 0.66/0.81 0.52/0.79 0.40/0.77",  # per position
        "0.120 (t_D(1) 1.20 ms / t_T(1) 10.0 ms)",  # c with the cost curve
        "2.41× [2.20, 2.60]",  # E_meas with CI
        "2.55×",  # decode-only
        "2.34× / 2.61× / 2.38×",  # E_seed / E_lev / E_cal
        "2.34× / 2.61× / —",  # draft-a has no calibrated figure
        "45.0 ms / 80.0 ms",  # TTFT
        "12.3 ms / 19.8 ms",  # TPOT
        "24.8 ms / 27.1 ms",  # baseline TPOT
        "30.5 ms / 61.0 ms",  # gaps
        "0.42 (2.0×)",  # jitter
        "12 (1.6%)",  # stalls
        "81.3",  # tokens/s
        "13.0 GiB / 2.00 GiB",  # W_T / W_D
        "2.29 GiB",  # extra memory
        "5.60 GiB (-57% vs baseline)",  # weight traffic per token
        "3.20 GiB/token per extra GiB",  # bandwidth efficiency
    ]
    for text in expected:
        assert text in out, text


def test_category_table_and_danger_reasons(result: dict[str, Any]) -> None:
    out = render(result)
    assert "by category" in out
    assert "0.210 (210/1,000) [0.17, 0.25]" in out
    assert "0.84× [0.79, 0.90]" in out
    assert "DANGER ZONE — legal × draft-a @ k=4" in out
    assert LEGAL_REASONS[0] in out
    # The overall danger flag of draft-a and its reason are printed too.
    assert "DANGER ZONE — draft-a @ k=4: Acceptance rate α = 0.48 is below 0.5." in out
    assert "DANGER ZONE — legal × draft-c" not in out


def test_danger_flags_are_red() -> None:
    console = Console(record=True, width=160, force_terminal=True, color_system="standard")
    result: dict[str, Any] = {
        "candidates": [
            {"draft": "d", "k": 2, "summary": {"danger_zone": True, "danger_reasons": ["α is low."]}}
        ]
    }
    render_result(result, console)
    ansi = console.export_text(styles=True)
    assert "\x1b[1;31m⚠ DANGER ZONE — d @ k=2: α is low.\x1b[0m" in ansi
    assert "\x1b[1;31mDANGER " in ansi  # the table cell
    assert DANGER_STYLE == "bold red"


def test_verdict_names_the_best(result: dict[str, Any]) -> None:
    line = verdict(result)
    assert line.plain.startswith("Verdict: best candidate draft-c @ k=4 — E_meas 2.41× [2.20, 2.60]")
    assert "danger zone" not in line.plain
    assert "Verdict: best candidate draft-c @ k=4" in render(result)


def test_verdict_warns_when_best_is_dangerous_on_a_category(result: dict[str, Any]) -> None:
    result["candidates"][1]["summary"]["speedup_measured"] = 1.05
    line = verdict(result)
    assert "best candidate draft-a @ k=4" in line.plain
    assert "danger zone" in line.plain
    assert "α = 0.48 is below 0.5" in line.plain


def test_verdict_when_none_pays_off(result: dict[str, Any]) -> None:
    result["candidates"][0]["summary"]["speedup_measured"] = 0.91
    result["candidates"][1]["summary"]["speedup_measured"] = 0.97
    line = verdict(result)
    assert "no candidate pays off" in line.plain
    assert "draft-c @ k=4" in line.plain
    assert "0.97×" in line.plain
    assert line.style == DANGER_STYLE


def test_verdict_without_measurements() -> None:
    assert "no measured speedup" in verdict({"candidates": []}).plain
    assert "no measured speedup" in verdict({"candidates": [{"draft": "d", "summary": None}]}).plain


def test_partial_and_missing_values_render() -> None:
    result: dict[str, Any] = {
        "schema_version": 1,
        "kind": "bench",
        "complete": False,
        "run": {"config": {"target": "t", "k": 4}, "environment": {}, "started_at": None},
        "baseline": {"summary": None, "by_category": {}},
        "candidates": [
            {"draft": "d", "k": 4, "summary": None, "by_category": {"legal": {"acceptance_rate": None}}},
            {"draft": "e", "k": 4, "summary": {"acceptance_rate": 0.5, "ttft_ms": {"p50": None}}},
        ],
    }
    out = render(result)
    assert "Interrupted: partial results" in out
    assert "—" in out
    assert "legal" in out


def test_empty_result_renders() -> None:
    out = render({})
    assert "No candidate measured." in out
    assert "no measured speedup" in out


def test_report_never_imports_torch() -> None:
    code = (
        "import sys, specmeter.report.console, specmeter.report.files;"
        "assert 'torch' not in sys.modules, 'report imported torch'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
