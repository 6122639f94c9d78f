"""docs/metrics.md states each definition once, its worked examples are what the code computes, and the
Prometheus rules and the Grafana dashboard name the quantities as the docs do (issue 20)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
import yaml
from metrics_builders import emissions, request, step

from specmeter.metrics.acceptance import (
    acceptance_counts,
    acceptance_length,
    acceptance_rate,
    per_position_acceptance,
)
from specmeter.metrics.costmodel import step_mix
from specmeter.metrics.latency import BURST_GAP_S, STALL_FACTOR, per_token_gaps, stalls, tpot
from specmeter.metrics.records import CostCurve
from specmeter.metrics.speedup import speedup_calibrated
from specmeter.metrics.stats import MIN_CI_REQUESTS

DOCS = Path(__file__).resolve().parents[2] / "docs"
METRICS_MD = (DOCS / "metrics.md").read_text(encoding="utf-8")
FLAT = " ".join(METRICS_MD.split())
ASSETS = resources.files("specmeter") / "assets"


@pytest.mark.parametrize(
    "term",
    [
        "draft acceptance rate",
        "mean acceptance length",
        "per-position acceptance",
        "per-draft rate",
        "per-token acceptance probability",
        "speedup, calibrated",
        "TPOT",
        "stalls",
        "tokens/s",
        "decode tokens/s",
        "achieved bandwidth",
        "copy bandwidth",
        "bandwidth fraction",
        "Intervals need 10 requests.",
    ],
)
def test_each_definition_is_stated_once(term: str) -> None:
    assert METRICS_MD.count(f"**{term}**") == 1, term


def test_tau_is_not_said_to_reach_k_plus_one_whenever_everything_is_accepted() -> None:
    assert "τ = k + 1 means every draft was accepted" not in FLAT
    # the docs' example: everything accepted at k = 4, τ = 3.5 because one draft was short
    assert "`[(d=4, a=4), (d=1, a=1)]` accepts everything with τ = 3.5 at k = 4" in FLAT
    counts = acceptance_counts([step(4, 4), step(1, 1)])
    assert acceptance_rate(counts) == 1.0 and acceptance_length(counts) == 3.5


def test_the_worked_examples_are_what_the_code_computes() -> None:
    # per-position: (1,0)×3 + (2,2)
    assert "(1,0)×3 + (2,2) give q = [0.25, 1.0] and P = [0.25, 0.25]" in FLAT
    rates = per_position_acceptance([step(1, 0)] * 3 + [step(2, 2)])
    assert [p.conditional for p in rates] == [0.25, 1.0] and [p.cumulative for p in rates] == [0.25, 0.25]
    # E_cal with one short draft per pair of steps
    assert "E_cal = 2.33" in FLAT
    flat = CostCurve(target_s=(0.010,) * 5, draft_s=0.002)
    assert speedup_calibrated(step_mix([step(4, 4), step(1, 1)] * 10), flat) == pytest.approx(7 / 3)
    # TPOT with a three-token first chunk
    assert "TPOT = 0.2 s / 4 = 0.05 s" in FLAT
    r = request(
        "a", output_tokens=5, ttft_s=0.1, latency_s=0.3, emitted=emissions((0.1, 3), (0.2, 1), (0.3, 1))
    )
    assert tpot(r) == pytest.approx(0.05) and per_token_gaps(r) == pytest.approx([0.1, 0.1])
    # stalls with zero gaps
    assert "emissions at 0.10, 0.10, 0.10, 0.10, 0.11 s: no stall" in FLAT
    assert stalls(request("b", output_tokens=5, emitted=emissions(*[(0.10, 1)] * 4, (0.11, 1)))) == 0
    assert f"longer than {STALL_FACTOR:g} × their own request's median *rhythm* gap" in FLAT
    assert f"the gaps of at least {BURST_GAP_S * 1000:g} ms" in FLAT


def test_the_interval_threshold_in_the_docs_is_the_codes() -> None:
    assert MIN_CI_REQUESTS == 10
    assert f"With fewer than {MIN_CI_REQUESTS} requests (or pairs) every interval is `null`" in FLAT


def test_rules_and_dashboard_name_the_per_draft_rate_and_show_when_it_is_p_i() -> None:
    # metrics.md defines the quantity the counters give, under its own name
    assert "**per-draft rate** V_i = #{s: a_s ≥ i+1} / S" in FLAT
    text = (ASSETS / "prometheus" / "rules.yml").read_text(encoding="utf-8")
    header = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    assert '"per-draft rate" V_i, not P_i' in " ".join(header.split())
    rules = {r.get("record"): r for g in yaml.safe_load(text)["groups"] for r in g["rules"]}
    per_pos = [name for name, r in rules.items() if name and "per_pos_total" in r["expr"]]
    assert per_pos == ["specmeter:spec_decode_position_acceptance_per_draft:rate5m"]
    d_over_s = rules["specmeter:spec_decode_draft_tokens_per_draft:rate5m"]["expr"]
    assert "num_draft_tokens_total" in d_over_s and "num_drafts_total" in d_over_s
    dashboard = json.loads((ASSETS / "grafana" / "specmeter.json").read_text(encoding="utf-8"))
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    for p in panels:
        exprs = " ".join(t["expr"] for t in p["targets"])
        if "per_pos_total" in exprs or "specmeter_per_position_acceptance" in exprs:
            assert "per draft" in p["title"], p["title"]
            assert "per-draft rate" in p["description"] and "P_i" in p["description"]
    assert any("D/S" in p["title"] for p in panels)
