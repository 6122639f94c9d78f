"""The demo's summary as printed, without running the demo: story checks with their thresholds and margins
(pass, and by how much a miss missed), the method × domain table with the split category's rows, and the
router by category (``bundled.view`` on a summary built from synthetic records)."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from specmeter.bundled.demo import method_checks, split_aside, story_checks
from specmeter.bundled.view import check_text, render_summary
from specmeter.metrics.records import ModelInfo, RequestRecord, RunRecord
from specmeter.selection.route_analysis import analyse_routes


def _row(domain: str, draft: str, alpha: float, speedup: float, **kw: Any) -> dict[str, Any]:
    letter = {"draft-general": "A", "draft-tiny": "B", "draft-legal": "C"}.get(draft, "·")
    return {"domain": domain, "draft": draft, "candidate": letter, "alpha": alpha,
            "speedup_measured": speedup, "outputs_matched": [40, 40], "category": None, **kw}  # fmt: skip


ROWS = [
    _row("legal", "draft-general", 0.015, 0.51),
    _row("legal", "draft-tiny", 0.013, 0.60),
    _row("legal", "draft-legal", 0.803, 1.80),
    _row("general", "draft-general", 0.542, 1.41),
    _row("general", "draft-legal", 0.080, 0.66, outputs_matched=[39, 40]),
]


def test_story_checks_carry_threshold_and_margin() -> None:
    checks = {c["check"]: c for c in story_checks(ROWS)}
    c = checks["legal: α(C) ≥ 0.60"]
    assert (c["passed"], c["threshold"], c["rule"]) == (True, 0.60, ">=")
    assert c["margin"] == pytest.approx(0.203)
    miss = checks["general: α(A) ≥ 0.60"]
    assert miss["passed"] is False and miss["margin"] == pytest.approx(-0.058)
    below = checks["legal: α(B) < 0.50"]
    assert below["passed"] is True and below["margin"] == pytest.approx(0.487)
    gap = checks["legal: α(C) ≥ α(A) + 0.20"]
    assert gap["passed"] is True and gap["measured"] == pytest.approx(0.788)
    same = checks["greedy outputs equal target-only outputs"]  # one of 200 outputs differed
    assert same["passed"] is False and same["measured"] == pytest.approx(199 / 200)
    assert same["margin"] == pytest.approx(-0.005)


def test_check_text_says_the_threshold_and_by_how_much() -> None:
    checks = {c["check"]: c for c in story_checks(ROWS)}
    assert check_text(checks["general: α(A) ≥ 0.60"]) == (
        "general: α(A) ≥ 0.60 — measured 0.542, threshold 0.60: missed by 0.058"
    )
    assert check_text(checks["legal: α(C) ≥ 0.60"]) == (
        "legal: α(C) ≥ 0.60 — measured 0.803, threshold 0.60: 0.203 to spare"
    )
    assert check_text(checks["legal: best E_meas ≥ 1.3x"]).endswith("threshold 1.30: 0.500 to spare")
    unmeasured = story_checks([])[0]
    assert unmeasured["passed"] is None and check_text(unmeasured) == "legal: α(C) ≥ 0.60 — not measured"
    # A summary written before thresholds were recorded still prints.
    assert check_text({"check": "old", "measured": 0.5, "passed": True}) == "old — measured 0.500"


TARGET = ModelInfo("target", "/m/target", "LlamaForCausalLM", 1000, 4000, 64, "float32", 4, 2, 8)
DRAFT = ModelInfo("draft-legal", "/m/c", "LlamaForCausalLM", 100, 400, 16, "float32", 1, 2, 8)
SUFFIX = ModelInfo("suffix", "", "suffix", 0, 0, 0, "float32", 0, 0, 0, method="suffix")
# (category, baseline, draft-legal, suffix) latencies: redline to suffix (4.00×), the other legal text to
# the draft (2.00×; legal as a whole: the draft 2.00×, suffix 1.90×), news to the target alone.
TIMES = [("legal/redline", 2.0, 1.0, 0.5), ("legal/nda", 2.0, 1.0, 1.6), ("general/news", 1.0, 2.0, 1.5)]


def _run(draft: ModelInfo | None, column: int) -> RunRecord:
    requests = tuple(RequestRecord(f"r{i}", t[0], 10, 20, t[column], 0.01, 0.01) for i, t in enumerate(TIMES))
    return RunRecord(TARGET, draft, 0 if draft is None else 4, 0.0, 1.0, requests)


def _table_row(row: dict[str, Any], method: str) -> dict[str, Any]:
    name = {"draft-legal": "C draft-legal"}.get(row["draft"], row["draft"])
    return {**row, "name": name, "method": method, "k": 4, "alpha_ci": None, "tau": 2.0, "tau_ci": None,
            "speedup_measured_ci": None, "extra_memory_bytes": 0}  # fmt: skip


def test_summary_prints_the_split_category_the_router_and_the_checks() -> None:
    table = [
        _table_row(_row("legal", "draft-legal", 0.80, 1.8), "draft_model"),
        _table_row(_row("legal", "suffix", 0.39, 1.01), "suffix"),
        _table_row(_row("legal", "suffix", 0.49, 1.30, category="legal/redline"), "suffix"),
    ]
    router = analyse_routes(_run(None, 1), [_run(DRAFT, 2), _run(SUFFIX, 3)])
    aside = split_aside(_run(None, 1), [_run(DRAFT, 2), _run(SUFFIX, 3)])
    summary = {
        "rows": [], "winners": {}, "danger_zone_pairs": [], "tune": None, "load": None,
        "roi": {"seed": None, "measured": None},
        "methods": {"table": table, "names": {"draft-legal": "C draft-legal"}, "by_domain": {}, "lines": [],
                    "category_router": router, "split_aside": aside},
    }  # fmt: skip
    # Redline has one method's row only, so its two checks are not measured; C leads the rest of legal.
    summary["checks"] = [*story_checks(ROWS), *method_checks(summary["methods"])]
    console = Console(record=True, width=200)
    render_summary(summary, console)
    out = console.export_text()
    lines = out.splitlines()
    assert "methods × domains" in out and "router by category" in out
    split = [line for line in lines if line.startswith("│ suffix") and "│ legal/redline" in line]
    assert len(split) == 1 and "1.30×" in split[0]  # the method × domain table's row of its own
    redline = next(line for line in lines if line.startswith("│ legal/redline"))
    assert "suffix ‡" in redline  # routed elsewhere than legal's single choice, the draft
    assert "C draft-legal" in next(line for line in lines if line.startswith("│ legal/nda"))
    assert "target alone" in next(line for line in lines if line.startswith("│ general/news"))
    assert "routed E_meas over all traffic: 2.00×" in out  # 5 / (0.5 + 1.0 + 1.0)
    assert "routed E_meas on legal: 2.67× against C draft-legal for all of legal 2.00×: +33%" in out
    assert "miss  general: α(A) ≥ 0.60 — measured 0.542, threshold 0.60: missed by 0.058" in out
    assert (
        "6 of 10 checks pass; missed: general: α(A) ≥ 0.60 by 0.058; greedy outputs equal target-only "
        "outputs by 0.005; not measured: legal/redline: a model-free method has the highest E_meas (÷ the "
        "best other); legal/redline: its E_meas interval lies above C's (lower − upper end)"
    ) in " ".join(out.split())


def test_method_checks_read_the_split_category_and_the_rest_of_its_domain() -> None:
    base, runs = _run(None, 1), [_run(DRAFT, 2), _run(SUFFIX, 3)]
    aside = split_aside(base, runs)
    # legal/nda alone: the draft 2.0 / 1.0 = 2.00×, suffix 2.0 / 1.6 = 1.25×; news and redline left out.
    assert aside["legal"]["requests"] == 1 and aside["legal"]["left_out"] == ["legal/redline"]
    es = {c["draft"]: c["speedup_measured"] for c in aside["legal"]["by_candidate"]}
    assert es == pytest.approx({"draft-legal": 2.0, "suffix": 1.25})
    redline = [
        {**_table_row(_row("legal", "draft-legal", 0.66, 1.56, category="legal/redline"), "draft_model"),
         "speedup_measured_ci": [1.40, 1.70]},
        {**_table_row(_row("legal", "suffix", 0.90, 2.40, category="legal/redline"), "suffix"),
         "speedup_measured_ci": [2.10, 2.70]},
        _table_row(_row("legal", "ngram", 0.79, 1.16, category="legal/redline"), "ngram:min=5,max=5"),
    ]  # fmt: skip
    lead, above, rest = method_checks({"table": redline, "split_aside": aside})
    assert lead["check"].startswith("legal/redline: a model-free method")
    assert lead["passed"] is True and lead["measured"] == pytest.approx(2.40 / 1.56)
    assert above["passed"] is True and above["measured"] == pytest.approx(2.10 - 1.70)
    assert rest["passed"] is True and rest["measured"] == pytest.approx(2.0 / 1.25)
    # The distilled draft ahead on redline, its interval overlapping; too few requests for an interval.
    redline[1] = {**redline[1], "speedup_measured": 1.30, "speedup_measured_ci": [1.0, 1.5]}
    lead, above, _ = method_checks({"table": redline, "split_aside": aside})
    assert lead["passed"] is False and lead["margin"] == pytest.approx(1.30 / 1.56 - 1.0)
    assert above["passed"] is False and above["margin"] == pytest.approx(1.0 - 1.70)
    redline[0] = {**redline[0], "speedup_measured_ci": None}
    assert method_checks({"table": redline, "split_aside": aside})[1]["passed"] is None
    assert [c["passed"] for c in method_checks({})] == [None, None]
