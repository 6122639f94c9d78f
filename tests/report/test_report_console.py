"""Console rendering of a whole result: key figures, danger flags, verdict, missing values."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from report_fixtures import LEGAL_REASONS
from rich.console import Console

from specmeter.report.view import DANGER_STYLE, render_result, verdict


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
    # One sentence for draft-a: its own reason in full, then its category in the danger zone, compactly.
    flat = " ".join(out.split())
    assert "DANGER ZONE — draft-a @ k=4: Acceptance rate α = 0.48 is below 0.5." in flat
    assert "In 1 of 2 categories (α < 0.50 or E_meas < 1.00×): legal (α 0.21; E_meas 0.84×)." in flat
    assert LEGAL_REASONS[0] not in out  # the category's full sentences are not repeated
    assert "DANGER ZONE — draft-c" not in flat


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
        "import sys, specmeter.report.view, specmeter.report.files;"
        "assert 'torch' not in sys.modules, 'report imported torch'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _many_categories(n: int, overall: bool) -> dict[str, Any]:
    """A candidate in the danger zone on n categories (the legal set with a general draft: 20+)."""
    reasons = ["acceptance rate 0.21 < 0.50: most drafted tokens are thrown away"]
    cats = {
        f"legal/c{i:02d}": {
            "requests": 10, "acceptance_rate": 0.2 + i / 100, "speedup_measured": 0.9 if i % 2 else 1.1,
            "danger_zone": True, "danger_reasons": reasons,
        }
        for i in range(n)
    }  # fmt: skip
    cats["general"] = {"requests": 10, "acceptance_rate": 0.7, "speedup_measured": 1.4, "danger_zone": False}
    summary = {"requests": 210, "acceptance_rate": 0.3, "danger_zone": overall,
               "danger_reasons": reasons if overall else []}  # fmt: skip
    return {"candidates": [{"draft": "draft-general", "k": 4, "summary": summary, "by_category": cats}]}


@pytest.mark.parametrize("overall", [True, False])
def test_danger_zone_is_one_sentence_per_candidate_with_categories_listed_compactly(overall: bool) -> None:
    # issue 12: the legal set printed one full danger sentence per category (20+ lines)
    out = render(_many_categories(21, overall))
    assert out.count("DANGER ZONE") == 1
    assert out.count("most drafted tokens are thrown away") == (1 if overall else 0)
    note = next(line for line in out.splitlines() if "DANGER ZONE" in line)
    assert "draft-general @ k=4" in note
    assert "21 of 22 categories" in out.replace("\n", " ")
    flat = " ".join(out.split())
    assert "legal/c00 (α 0.20; E_meas" not in flat  # c00: E_meas 1.1 is fine
    assert "legal/c00 (α 0.20)" in flat and "legal/c01 (α 0.21; E_meas 0.90×)" in flat
    assert "general (" not in flat


def test_weight_bandwidth_and_its_share_of_the_copy_bandwidth_are_printed() -> None:
    # issue 20: achieved_bytes_per_s and bandwidth_fraction were defined but never output
    s = {"achieved_bytes_per_s": 1.5 * 2**30, "copy_bytes_per_s": 6 * 2**30, "bandwidth_fraction": 0.25,
         "decode_tokens_per_s": 40.0, "tokens_per_s": 30.0}  # fmt: skip
    out = render({"baseline": {"summary": s}, "candidates": [{"draft": "d", "k": 2, "summary": s}]})
    assert "1.50 GiB/s (25% of 6.00 GiB/s copy)" in out
    assert "tokens/s decode" in out and "40.0" in out

    from specmeter.report.html import render_report

    html = render_report({"baseline": {"summary": s}, "candidates": [{"draft": "d", "k": 2, "summary": s}]})
    assert "1.50 GiB/s (25% of 6.00 GiB/s copy)" in html and "weight bandwidth (share of copy)" in html
