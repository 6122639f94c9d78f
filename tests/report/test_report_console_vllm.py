"""vLLM in the console and HTML: the engine in the header and, per run, its counters against the records."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from specmeter.report.view import render_result, vllm_check_lines


def _result(match: bool) -> dict[str, Any]:
    counters = {"num_drafts": 10, "num_draft_tokens": 40, "num_accepted_tokens": 31, "generation_tokens": 52}
    return {
        "kind": "bench",
        "run": {"config": {"target": "t", "drafts": ["d"], "k": [4]}},
        "candidates": [],
        "vllm": {
            "version": "0.32.0",
            "settings": {"method": "draft_model", "tensor_parallel_size": 2, "dtype": "bfloat16"},
            "runs": {"d@k=4": {"vllm_counters": counters, "counts_match": match, "tokens_match": True}},
        },
    }


def test_counters_that_match_are_said_to_match() -> None:
    (line,) = vllm_check_lines(_result(True))
    assert "40 drafted, 31 accepted" in line.plain and "equal to specmeter's records" in line.plain
    assert line.style == "green"


def test_a_mismatch_is_loud() -> None:
    (line,) = vllm_check_lines(_result(False))
    assert "DIFFERENT" in line.plain and line.style == "bold red"


def test_header_names_the_engine_and_native_results_have_no_vllm_lines() -> None:
    console = Console(width=160, record=True)
    render_result(_result(True), console)
    text = console.export_text()
    assert "vLLM 0.32.0 · draft_model · tp 2 · dtype bfloat16" in text
    assert vllm_check_lines({"kind": "bench"}) == []


def test_html_names_the_engine_and_warns_about_a_mismatch() -> None:
    from specmeter.report.html import render_report

    good = render_report(_result(True))
    assert "vLLM 0.32.0, draft_model" in good and "DIFFERENT" not in good
    bad = render_report(_result(False))
    assert "class='verdict warn'>vLLM&#x27;s counters for d@k=4" in bad and "DIFFERENT" in bad
