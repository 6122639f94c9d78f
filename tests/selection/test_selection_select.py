"""select's ranking, separation, per-domain choice and router gain on synthetic runs with known speedups."""

from __future__ import annotations

import numpy as np
import pytest
from selection_builders import DRAFT, DRAFT_B, TARGET

from specmeter.metrics.records import ModelInfo, RequestRecord, RunRecord, StepRecord
from specmeter.selection.mix import MixError
from specmeter.selection.select_analysis import analyse_select, domains_of

# Per category: (speedup of draft A, α of A, speedup of draft B, α of B)
PROFILE = {
    "general/chat": (2.0, 0.75, 1.1, 0.5),
    "legal/nda": (0.8, 0.25, 2.5, 0.75),
    "legal/ip": (0.9, 0.25, 2.4, 0.75),
}
N_PER_CATEGORY = 12


def _requests(draft: str | None, seed: int = 0) -> tuple[RequestRecord, ...]:
    rng = np.random.default_rng(seed)
    out = []
    for category, (e_a, alpha_a, e_b, alpha_b) in PROFILE.items():
        for i in range(N_PER_CATEGORY):
            base = 1.0 + i * 0.25  # prompts of different difficulty, identical across runs
            speedup, alpha = {None: (1.0, 0.0), "A": (e_a, alpha_a), "B": (e_b, alpha_b)}[draft]
            latency = base / speedup * (1.0 if draft is None else rng.uniform(0.98, 1.02))
            accepted = round(4 * alpha)
            steps = (
                ()
                if draft is None
                else tuple(StepRecord(4, accepted, accepted + 1, 0, 0, 4) for _ in range(5))
            )
            out.append(RequestRecord(f"{category}-{i}", category, 10, 30, latency, 0.01, 0.01, steps))
    return tuple(out)


def _run(draft: ModelInfo | None, name: str | None, k: int = 4) -> RunRecord:
    return RunRecord(TARGET, draft, k if draft else 0, 0.0, 1.0, _requests(name, seed=k))


BASE = _run(None, None)
A, B = _run(DRAFT, "A"), _run(DRAFT_B, "B")


def _harmonic(weights: dict[str, float], speedups: dict[str, float]) -> float:
    # equal baseline totals per category: E = Σw / Σ(w/E)
    return sum(weights.values()) / sum(w / speedups[c] for c, w in weights.items())


def test_without_a_mix_the_domains_are_the_categories_in_golden_set_proportions() -> None:
    weights, assignment = domains_of(["a", "b", "b", "b"], None)
    assert weights == {"a": 0.25, "b": 0.75} and assignment == {"a": "a", "b": "b"}
    with pytest.raises(MixError):
        domains_of(["a"], {"z": 1.0})


def test_ranking_follows_the_mix() -> None:
    general_heavy = analyse_select(BASE, [A, B], {"general": 0.9, "legal": 0.1})
    legal_heavy = analyse_select(BASE, [A, B], {"general": 0.1, "legal": 0.9})
    assert [r["draft"] for r in general_heavy["ranking"]] == ["draft", "draft_b"]
    assert [r["draft"] for r in legal_heavy["ranking"]] == ["draft_b", "draft"]
    assert [r["rank"] for r in legal_heavy["ranking"]] == [1, 2]
    # legal = 0.9 spread over two categories of equal size and equal baseline time
    expected_b = _harmonic(
        {"general/chat": 0.1, "legal/nda": 0.45, "legal/ip": 0.45}, {c: p[2] for c, p in PROFILE.items()}
    )
    assert legal_heavy["ranking"][0]["speedup_weighted"] == pytest.approx(expected_b, rel=0.02)
    lo, hi = legal_heavy["ranking"][0]["speedup_weighted_ci"]
    assert lo <= legal_heavy["ranking"][0]["speedup_weighted"] <= hi
    assert legal_heavy["domains"]["legal"] == {
        "weight": 0.9,
        "categories": ["legal/ip", "legal/nda"],
        "requests": 24,
    }


def test_separation_is_reported_for_a_clear_winner_and_a_tie() -> None:
    s = analyse_select(BASE, [A, B], {"general": 0.1, "legal": 0.9})
    sep = s["separation"]
    assert sep["first"] == "draft_b@k=4" and sep["second"] == "draft@k=4"
    assert sep["separated"] is True and sep["difference_ci"][0] > 0 and sep["probability_first_better"] == 1.0
    twin = RunRecord(TARGET, DRAFT_B, 2, 0.0, 1.0, B.requests)  # same times: a statistical tie
    tie = analyse_select(BASE, [B, twin], None)["separation"]
    assert tie["separated"] is False and tie["difference"] == pytest.approx(0.0)


def test_per_domain_choice_router_gain_and_danger() -> None:
    s = analyse_select(BASE, [A, B], {"general": 0.5, "legal": 0.5})
    routed = s["recommendation"]["by_domain"]
    assert routed["general"]["draft"] == "draft" and routed["legal"]["draft"] == "draft_b"
    router = s["recommendation"]["router"]
    single = s["recommendation"]["single"]
    speeds = {"general/chat": 2.0, "legal/nda": 2.5, "legal/ip": 2.4}
    assert router["speedup_weighted"] == pytest.approx(
        _harmonic({"general/chat": 0.5, "legal/nda": 0.25, "legal/ip": 0.25}, speeds), rel=0.02
    )
    assert router["gain_over_single"] == pytest.approx(
        router["speedup_weighted"] / single["speedup_weighted"] - 1
    )
    assert router["gain_over_single"] > 0.1 and router["gain_over_single_ci"][0] > 0
    assert router["drafts"] == ["draft", "draft_b"]
    assert router["extra_memory_bytes"] == sum(s["memory"][d]["extra_memory_bytes"] for d in router["drafts"])
    # draft A on legal: α 0.25 and slower than the target -> the danger zone for its speedup; α a warning
    legal_a = next(r for r in s["by_domain"]["legal"] if r["draft"] == "draft")
    assert legal_a["danger_zone"] is True and len(legal_a["danger_reasons"]) == 1
    assert "slower" in legal_a["danger_reasons"][0] and legal_a["verdict"] in ("slower", "unclear")
    assert legal_a["warnings"][0].startswith("α 0.25: most drafted tokens are discarded")
    assert legal_a["acceptance_rate"] == pytest.approx(0.25)
    lines = s["recommendation"]["lines"]
    assert any(line.startswith("legal: draft_b at k=4") for line in lines)
    assert any("router by domain" in line for line in lines)


def test_a_domain_where_nothing_pays_off_gets_no_draft() -> None:
    s = analyse_select(BASE, [A], {"general": 0.5, "legal": 0.5})
    assert s["recommendation"]["by_domain"]["legal"] is None
    assert any(
        line.startswith("legal: no candidate beats the target alone") for line in s["recommendation"]["lines"]
    )
    # the router sends legal traffic to the target alone: it beats draft A for everything
    assert s["recommendation"]["router"]["gain_over_single"] > 0
    assert s["recommendation"]["router"]["drafts"] == ["draft"]


def test_categories_outside_the_mix_weigh_nothing_and_memory_is_per_draft() -> None:
    s = analyse_select(BASE, [A, B], {"general": 1.0})
    assert s["unweighted_categories"] == ["legal/ip", "legal/nda"]
    assert s["ranking"][0]["draft"] == "draft"
    assert s["ranking"][0]["speedup_weighted"] == pytest.approx(2.0, rel=0.02)
    mem = s["memory"]["draft_b"]
    assert mem["weight_bytes"] == DRAFT_B.weight_bytes and mem["context_tokens"] == 40
    assert mem["extra_memory_bytes"] == DRAFT_B.weight_bytes + 40 * DRAFT_B.kv_bytes_per_token


def test_everything_slower_than_the_target_says_do_not_speculate() -> None:
    slow = RunRecord(TARGET, DRAFT, 4, 0.0, 1.0, tuple(
        RequestRecord(r.id, r.category, 10, 30, r.latency_s * 2, 0.01, 0.01, (StepRecord(4, 0, 1, 0, 0, 4),))
        for r in BASE.requests
    ))  # fmt: skip
    s = analyse_select(BASE, [slow], None)
    assert s["ranking"][0]["danger_zone"] is True
    assert s["recommendation"]["lines"][0].startswith("Do not speculate with one draft for all traffic")
    assert all(v is None for v in s["recommendation"]["by_domain"].values())
