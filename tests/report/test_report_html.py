"""The self-contained HTML report: sections, charts that really drew, escaping, no external resources."""

from __future__ import annotations

import copy
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from specmeter.economics import RoiInputs
from specmeter.metrics.records import Emission, RequestRecord
from specmeter.report.html import render_report, write_report

EVIL = "<script>alert('x')</script>"
NUMERIC = {"x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "width", "height"}


class Charts(HTMLParser):
    """Collects every chart SVG's drawn marks and all numbers in their geometry."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, list[tuple[str, dict[str, str]]]] = {}
        self.current: str | None = None
        self.tags: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append(tag)
        self.urls += [v for k, v in a.items() if k in ("src", "href")]
        if tag == "svg" and "chart" in a.get("class", ""):
            self.current = a["data-chart"]
            self.charts[self.current] = []
        elif self.current is not None:
            self.charts[self.current].append((tag, a))

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.current = None


def parse(text: str) -> Charts:
    p = Charts()
    p.feed(text)
    return p


def numbers(attrs: dict[str, str]) -> list[float]:
    out = [float(attrs[k]) for k in NUMERIC if k in attrs]
    for k in ("points", "d"):
        out += [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?|nan|inf", attrs.get(k, ""))]
    return out


def assert_every_chart_drew(p: Charts, expected: set[str]) -> None:
    assert set(p.charts) == expected
    for name, elements in p.charts.items():
        marks = [a for tag, a in elements if "mark" in a.get("class", "").split()]
        assert marks, f"chart {name} drew no data"
        for tag, a in elements:
            values = numbers(a)
            assert all(math.isfinite(v) for v in values), f"{name}: non-finite coordinate in <{tag}>"
            assert all(-50 <= v <= 2000 for v in values), f"{name}: <{tag}> drawn off the canvas: {values}"
        # Data marks have visible size.
        for a in marks:
            if "width" in a:
                assert float(a["width"]) > 0 and float(a["height"]) > 0, name


def records(bad_id: str = "legal-7") -> dict[str, list[RequestRecord]]:
    """Three runs of two requests; the candidate stalls on ``bad_id``."""

    def rec(rid: str, times: list[float], tokens: int) -> RequestRecord:
        em = tuple(Emission(t, tokens if i else 1) for i, t in enumerate(times))
        return RequestRecord(
            rid, "legal", 10, sum(e.tokens for e in em), times[-1], times[0], times[0], (), em
        )

    steady = [0.02 + 0.01 * i for i in range(30)]
    stall = [*steady[:10], *(t + 0.4 for t in steady[10:])]
    return {
        "baseline": [rec("general-1", steady, 1), rec(bad_id, steady, 1)],
        "draft-a@k=4": [rec("general-1", steady[:12], 3), rec(bad_id, stall, 2)],
        "draft-c@k=4": [rec("general-1", steady[:10], 4), rec(bad_id, steady[:12], 3)],
    }


ALL_CHARTS = {"acceptance", "speedup", "positions", "models", "k", "gaps", "memory", "traffic"}


def test_report_from_a_result_file_has_every_section_and_chart(result: dict[str, Any]) -> None:
    text = render_report(result, source="result.json")
    for heading in ("Candidates", "Acceptance and speedup per category", "Per-position acceptance",
                    "Speedup: measured against the models", "Stutter", "Memory and bandwidth",
                    "Return on investment"):  # fmt: skip
        assert f"<h2>{heading}" in text
    p = parse(text)
    assert_every_chart_drew(p, ALL_CHARTS)
    assert "timeline needs the run's request records" in text  # no timeline without records
    assert "DANGER" in text and "legal" in text
    assert "Verdict: best candidate draft-c @ k=4" in text
    assert "0.652 (1,304/2,000) [0.61, 0.69]" in text


def test_with_records_the_gap_ecdf_and_a_stalling_timeline_appear(result: dict[str, Any]) -> None:
    text = render_report(result, records=records())
    p = parse(text)
    assert_every_chart_drew(p, ALL_CHARTS | {"timeline"})
    assert any(tag == "path" for tag, _ in p.charts["gaps"])  # an ECDF, not the quantile bars
    timeline = p.charts["timeline"]
    assert "Request legal-7" in text  # the most-stalling request is chosen by default
    assert [a for _, a in timeline if "stall" in a.get("class", "")], "the stall is drawn"
    chosen = render_report(result, records=records(), request_id="general-1")
    assert "Request general-1" in chosen


def test_failed_requests_are_listed_with_their_reason(result: dict[str, Any]) -> None:
    assert "Failed requests" not in render_report(result, records=records())
    recs = records()
    cut = recs["draft-a@k=4"][1]
    recs["draft-a@k=4"][1] = RequestRecord(
        cut.id, cut.category, cut.prompt_tokens, cut.output_tokens, cut.latency_s, cut.ttft_s, cut.prefill_s,
        emissions=cut.emissions, finish_reason="interrupted", error="stalled: no data for 60s <b>",
    )  # fmt: skip
    text = render_report(result, records=recs)
    assert "<h2>Failed requests</h2>" in text and "1 requests failed or were cut short." in text
    assert "<td>draft-a@k=4</td><td>legal-7</td><td>legal</td><td>interrupted</td>" in text
    assert "stalled: no data for 60s &lt;b&gt;" in text


def test_user_text_is_escaped_everywhere(result: dict[str, Any]) -> None:
    evil = copy.deepcopy(result)
    evil["run"]["config"]["target"] = EVIL
    evil["run"]["config"]["drafts"] = [EVIL]
    evil["candidates"][0]["draft"] = EVIL
    evil["candidates"][0]["by_category"] = {EVIL: evil["candidates"][0]["by_category"]["legal"]}
    evil["candidates"][0]["summary"]["danger_reasons"] = [EVIL]
    recs = {f"{EVIL}@k=4": records(bad_id=EVIL)["draft-a@k=4"], "baseline": records(bad_id=EVIL)["baseline"]}
    text = render_report(evil, records=recs, source=EVIL, notes=[EVIL])
    assert "<script" not in text.lower()
    assert "&lt;script&gt;" in text
    p = parse(text)
    assert "script" not in p.tags
    assert_every_chart_drew(p, ALL_CHARTS | {"timeline"})


def test_self_contained_no_external_resources(result: dict[str, Any]) -> None:
    text = render_report(result, records=records())
    p = parse(text)
    assert p.urls == []
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in text
    assert {"link", "img", "iframe", "script"}.isdisjoint(p.tags)


def test_partial_runs_are_flagged_and_missing_data_is_explained(result: dict[str, Any]) -> None:
    partial = copy.deepcopy(result)
    partial["complete"] = False
    assert "Interrupted run: partial results" in render_report(partial)
    baseline_only = copy.deepcopy(result)
    baseline_only["candidates"] = []
    text = render_report(baseline_only)
    assert "No candidate drafted anything" in text and "No measured speedup" in text
    p = parse(text)
    assert set(p.charts) <= {"gaps", "traffic"}
    for name in p.charts:
        assert [a for _, a in p.charts[name] if "mark" in a.get("class", "")]


def test_roi_section_turns_speedups_into_money(result: dict[str, Any]) -> None:
    plain = render_report(result)
    assert "GPU time per token" in plain and "-58.5%" in plain  # 1/2.41 − 1 for draft-c
    roi = RoiInputs(monthly_tokens=1e9, baseline_throughput=1000, baseline_price=4.0, spec_price=7.0,
                    speedup=1.0, engineering_cost=20_000)  # fmt: skip
    text = render_report(result, roi=roi)
    assert "monthly savings" in text and "ROI (12 months)" in text
    # draft-c at 2.41×: cost after = 1111.11 × 7 / (4 × 2.41)
    assert f"{1e9 / 3.6e6 * 7 / 2.41:,.0f}" in text


def test_write_report_is_atomic(tmp_path: Path, result: dict[str, Any]) -> None:
    out = tmp_path / "sub" / "report.html"
    write_report(out, render_report(result))
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), None])
def test_non_finite_figures_are_skipped_not_drawn(result: dict[str, Any], value: float | None) -> None:
    broken = copy.deepcopy(result)
    broken["candidates"][1]["summary"]["acceptance_rate"] = value
    broken["candidates"][1]["summary"]["speedup_measured_ci"] = [value, value]
    broken["candidates"][1]["summary"]["per_position"][1]["cumulative"] = value
    assert_every_chart_drew(parse(render_report(broken)), ALL_CHARTS)


def test_danger_sentence_is_said_once_per_candidate_not_in_every_category_row() -> None:
    # issue 12: the HTML report repeated the full danger sentence in every category row
    reason = "acceptance rate 0.21 < 0.50: most drafted tokens are thrown away"
    cats = {
        f"legal/c{i:02d}": {"requests": 10, "acceptance_rate": 0.21, "speedup_measured": 1.2,
                            "danger_zone": True, "danger_reasons": [reason]}
        for i in range(12)
    }  # fmt: skip
    result = {
        "kind": "bench",
        "candidates": [
            {
                "draft": "draft-general",
                "k": 4,
                "summary": {"acceptance_rate": 0.21, "danger_zone": True, "danger_reasons": [reason]},
                "by_category": cats,
            }
        ],
    }
    text = render_report(result)
    assert text.count("most drafted tokens are thrown away") == 1  # the candidate row only
    assert "In 12 of 12 categories" in text
    assert text.count("DANGER: α 0.21</td>") == 12  # the category rows: the figure, not the sentence
