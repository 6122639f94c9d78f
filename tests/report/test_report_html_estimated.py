"""The HTML report marks what a server's figures only estimate (≈, TGI's D = S·k) and says when per-position
rates are the per-draft rates V_i of a server's counters rather than P_i (docs/metrics.md)."""

from __future__ import annotations

from typing import Any

from specmeter.load.result import _apply_server
from specmeter.monitoring.acceptance import ServerAcceptance
from specmeter.report.html import render_report

ESTIMATED = ["drafted_tokens", "acceptance_rate", "rejections", "beta"]
POSITIONS = [
    {"position": 1, "cumulative": 0.8, "conditional": 0.8, "count": 60, "reached": None},
    {"position": 2, "cumulative": 0.5, "conditional": 0.625, "count": 60, "reached": None},
]


def load_result(*, estimated: list[str], definition: str | None) -> dict[str, Any]:
    summary: dict[str, Any] = {"acceptance_rate": 0.8, "accepted_tokens": 200, "drafted_tokens": 240,
                               "beta": 0.9, "per_position": POSITIONS}  # fmt: skip
    if definition is not None:
        summary["per_position_definition"] = definition
    return {
        "kind": "load", "run": {"config": {}}, "complete": True, "baseline": {"summary": None},
        "candidates": [{
            "draft": "m @ http://x", "k": 4, "concurrency": 1, "summary": summary,
            "load": {"effective_concurrency": 0.9, "completed": 10, "failed": 0},
            "server": {"kind": "tgi", "used": "metrics",
                       "metrics": {"estimated": estimated, "per_position_definition": "per_draft"}},
        }],
    }  # fmt: skip


def _candidates(html: str) -> str:
    start = html.index("<h2>Candidates</h2>")
    return html[start : html.index("<h2>", start + 5)]


def test_estimated_alpha_and_beta_are_marked_and_noted() -> None:
    html = _candidates(render_report(load_result(estimated=ESTIMATED, definition="per_draft")))
    assert "≈0.800 (200/240)" in html and "≈0.900" in html
    assert "estimated assuming every draft had k tokens" in html and "acceptance_rate" in html
    measured = _candidates(render_report(load_result(estimated=[], definition="per_draft")))
    assert "≈" not in measured and "estimated" not in measured


def test_per_position_chart_is_labelled_by_its_definition() -> None:
    per_draft = render_report(load_result(estimated=[], definition="per_draft"))
    assert "solid: V_i" in per_draft and "solid: P_i" not in per_draft
    assert "V_i (per draft)" in per_draft and "not P_i" in per_draft
    p_i = render_report(load_result(estimated=[], definition="P_i"))
    assert "solid: P_i, dashed: conditional q_i" in p_i and "V_i" not in p_i
    # A load result written before the summary kept the key: the server block says what the rates are.
    older = render_report(load_result(estimated=[], definition=None))
    assert "solid: V_i" in older


def test_load_summary_keeps_the_per_position_definition() -> None:
    acceptance = ServerAcceptance("tgi", "counters", steps=60, per_position=POSITIONS,
                                  per_position_definition="per_draft")  # fmt: skip
    summary: dict[str, Any] = {"per_position": None}
    _apply_server(summary, acceptance)
    assert summary["per_position"] == POSITIONS and summary["per_position_definition"] == "per_draft"
