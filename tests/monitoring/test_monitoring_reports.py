"""Per-request speculative reports: each engine's shape found in a response and read as one vocabulary."""

from __future__ import annotations

import pytest

from specmeter.load.result import _counters_cover_requests
from specmeter.monitoring.acceptance import ServerAcceptance, acceptance_from_requests, steps_from_report
from specmeter.monitoring.adapters import request_report


def test_vllm_report_rides_the_final_chunk_unchanged() -> None:
    report = {"num_spec_steps": 2, "num_draft_tokens": 6, "num_accepted_draft_tokens": 4}
    chunk = {"choices": [], "usage": {"completion_tokens": 7}, "metrics": {"speculative_decoding": report}}
    assert request_report(chunk) == report
    assert request_report({"choices": [{"text": "x"}]}) is None


def test_llamacpp_timings_only_once_it_drafted() -> None:
    assert request_report({"timings": {"predicted_n": 3}}) is None
    timings = {"predicted_n": 9, "draft_n": 8, "draft_n_accepted": 5}
    assert request_report({"timings": timings}) == timings


def test_vllm_detailed_steps_are_exact_even_with_short_drafts() -> None:
    # k = 4 but the last draft was cut to 1: the histogram alone cannot place it, the per-step arrays can.
    report = {
        "num_spec_steps": 3,
        "num_draft_tokens": 9,
        "num_accepted_draft_tokens": 5,
        "acceptance_histogram": [0, 1, 0, 0, 1],
        "num_spec_tokens": 4,
        "per_step_accepted": [4, 0, 1],
        "per_step_drafted": [4, 4, 1],
    }
    steps = steps_from_report(report)
    assert steps is not None
    assert [(s.drafted, s.accepted) for s in steps] == [(4, 4), (4, 0), (1, 1)]
    assert steps_from_report({**report, "per_step_accepted": [4, 0, 2]}) is None  # accepted > drafted
    assert steps_from_report({**report, "per_step_accepted": [4, 0]}) is None  # lengths differ
    assert steps_from_report({**report, "num_draft_tokens": 12}) is None  # contradicts its own total


def test_sglang_meta_info_in_both_spellings_and_places() -> None:
    old = {"spec_verify_ct": 10, "spec_accept_token_num": 24, "spec_draft_token_num": 30}
    new = {"spec_verify_ct": 10, "spec_num_correct_drafts": 24, "spec_num_proposed_drafts": 27}
    a = request_report({"text": "x", "meta_info": old})
    b = request_report({"choices": [{"text": "x", "meta_info": new}]})
    assert a is not None and b is not None
    assert (a["engine"], a["num_spec_tokens"]) == ("sglang", 3)
    assert "num_spec_tokens" not in b  # 27 drafts over 10 steps: not all full, k unknown
    acc = acceptance_from_requests([a, b])
    assert acc is not None and acc.kind == "sglang"
    assert (acc.steps, acc.drafted_tokens, acc.accepted_tokens) == (20, 57, 48)
    assert acc.acceptance_length == pytest.approx(1 + 48 / 20)
    assert acc.unavailable == ()
    # A request that never verified a draft (max_tokens 1) counts zero; malformed counts are no report.
    assert request_report({"meta_info": {"spec_verify_ct": 0, "spec_accept_rate": 0.0}}) is not None
    assert request_report({"meta_info": {**old, "spec_accept_token_num": -1}}) is None
    # The spelling of fill_spec_decoding_meta (spec_decoding_meta.py) and the newest histogram name.
    mid = {"spec_verify_ct": 4, "spec_accepted_drafts": 6, "spec_proposed_drafts": 12}
    c = request_report({"meta_info": {**mid, "spec_correct_drafts_histogram": [1, 1, 1, 1]}})
    assert c is not None and (c["num_accepted_draft_tokens"], c["num_draft_tokens"]) == (6, 12)
    assert c["acceptance_histogram"] == [1, 1, 1, 1]


def test_sglang_rates_without_counts_give_a_derived_report() -> None:
    # SGLang computed rate = A/(S·k) and length = completion tokens / S from counts it did not send.
    # Request 1: S = 10, k = 3, A = 24 → rate 0.8, C = A + S + 1 = 35 → length 3.5.
    # Request 2: S = 5, A = 5 → rate 1/3, C = 11 → length 2.2.
    first = {"spec_verify_ct": 10, "spec_accept_rate": 0.8, "spec_accept_length": 3.5}
    second = {"spec_verify_ct": 5, "spec_accept_rate": 1 / 3, "spec_accept_length": 2.2}
    one = request_report({"meta_info": first})
    two = request_report({"choices": [{"meta_info": second}]})
    assert one is not None and two is not None and one["derived_from_rates"] is True
    acc = acceptance_from_requests([one, two])
    assert acc is not None and acc.kind == "sglang" and acc.source == "per_request"
    assert acc.steps == 15
    assert acc.acceptance_rate == pytest.approx((24 + 5) / (30 + 15))  # Σ rate·S / Σ S = ΣA / ΣD
    assert acc.acceptance_length == pytest.approx(1 + (24 + 5) / 15)  # not SGLang's 3.5 or 2.2
    assert acc.drafted_tokens is None and acc.accepted_tokens is None  # not counted
    assert acc.estimated == ("acceptance_rate",)
    assert any("derived from SGLang's own" in n for n in acc.notes)
    # The defaults some versions write before the counts (rate 0.0, length 0) are not a measurement.
    placeholder = {"spec_verify_ct": 3, "spec_accept_rate": 0.0, "spec_accept_length": 0}
    assert request_report({"meta_info": placeholder}) is None
    # Counted reports win; derived ones beside them are left out, and said so.
    counts = {"spec_verify_ct": 10, "spec_accept_token_num": 24, "spec_draft_token_num": 30}
    counted = request_report({"meta_info": counts})
    assert counted is not None
    both = acceptance_from_requests([counted, two])
    assert both is not None and (both.steps, both.accepted_tokens) == (10, 24)
    assert any("left out" in n for n in both.notes)


def _acc(source: str, steps: int | None, drafted: int, accepted: int) -> ServerAcceptance:
    return ServerAcceptance(
        kind="llamacpp", source=source, steps=steps, drafted_tokens=drafted, accepted_tokens=accepted
    )


def test_load_takes_the_counters_only_when_they_counted_exactly_the_run() -> None:
    reports = _acc("per_request", None, 100, 80)
    assert _counters_cover_requests(_acc("counters", 30, 100, 80), reports)
    assert not _counters_cover_requests(_acc("counters", 31, 104, 82), reports)  # other traffic too
    assert not _counters_cover_requests(_acc("counters", None, 100, 80), reports)  # nothing more to add
    assert not _counters_cover_requests(_acc("counters", 30, 100, 80), _acc("per_request", 30, 100, 80))
