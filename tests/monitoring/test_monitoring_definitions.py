"""Server counters read with the definitions of docs/metrics.md: TGI's prefill observations, estimated D,
and restarts detected per engine."""

from __future__ import annotations

import pytest

from specmeter.monitoring.acceptance import acceptance_from_delta
from specmeter.monitoring.adapters import (
    ACCEPTED,
    DRAFT_TOKENS,
    DRAFTS,
    Reading,
    counter_delta,
    read_counters,
)
from specmeter.monitoring.promtext import parse_metrics


def reading(text: str, t: float) -> Reading:
    snap = parse_metrics(text)
    object.__setattr__(snap, "mono_time", t)
    return read_counters(snap)


def tgi(count: int, total: int, buckets: list[int], requests: int | None) -> str:
    lines = [f'tgi_request_skipped_tokens_bucket{{le="{i}"}} {n}' for i, n in enumerate(buckets)]
    lines += [
        f'tgi_request_skipped_tokens_bucket{{le="+Inf"}} {count}',
        f"tgi_request_skipped_tokens_sum {total}",
        f"tgi_request_skipped_tokens_count {count}",
    ]
    if requests is not None:
        lines.append(f"tgi_request_success {requests}")
    return "\n".join(lines) + "\n"


def test_tgi_prefill_observations_are_not_steps() -> None:
    # issue 20: 10 requests × 5 steps, every step accepting all k = 4, plus TGI's one 0-observation per
    # request for its prefill: count 60, sum 200, buckets le=0..3 hold the 10 zeros, le=4 all 60.
    # Before: α 200/240 = 0.833, β 0.952, τ 1 + 200/60 = 4.33, full_drafts True. Expected 1, 1, 5.
    r0 = reading(tgi(0, 0, [0, 0, 0, 0, 0], 0), 0.0)
    r1 = reading(tgi(60, 200, [10, 10, 10, 10, 60], 10), 5.0)
    acc = acceptance_from_delta("tgi", counter_delta(r0, r1), k=4)
    assert acc.steps == 50
    assert acc.acceptance_length == pytest.approx(5.0)
    assert acc.acceptance_rate == pytest.approx(1.0)
    assert acc.beta == pytest.approx(1.0)
    assert [p["cumulative"] for p in acc.per_position or []] == pytest.approx([1.0] * 4)
    # D was not measured: no evidence the drafts were full, and everything resting on S·k says so
    assert acc.full_drafts is None
    assert acc.drafted_estimated
    assert set(acc.estimated) == {"drafted_tokens", "acceptance_rate", "rejections", "beta"}
    assert acc.as_dict()["estimated"] == list(acc.estimated)


def test_tgi_without_a_request_counter_says_the_prefill_was_not_removed() -> None:
    r0 = reading(tgi(0, 0, [0, 0, 0, 0, 0], None), 0.0)
    r1 = reading(tgi(60, 200, [10, 10, 10, 10, 60], None), 5.0)
    acc = acceptance_from_delta("tgi", counter_delta(r0, r1), k=4)
    assert acc.steps == 60
    assert any("prefill" in n and "not removed" in n for n in acc.notes)


def test_measured_drafted_tokens_show_full_drafts() -> None:
    values = {DRAFTS: 10.0, DRAFT_TOKENS: 40.0, ACCEPTED: 30.0}
    from specmeter.monitoring.adapters import CounterDelta

    acc = acceptance_from_delta("vllm", CounterDelta(values, (), 1.0), k=4)
    assert acc.full_drafts is True and acc.estimated == () and not acc.drafted_estimated
    short = acceptance_from_delta("vllm", CounterDelta({**values, DRAFT_TOKENS: 38.0}, (), 1.0), k=4)
    assert short.full_drafts is False and short.beta is None


def vllm(engines: dict[str, tuple[int, int, int]], start: float | None = None) -> str:
    lines = []
    for engine, (s, d, a) in engines.items():
        lab = f'engine="{engine}",model_name="m"'
        lines += [
            f"vllm:spec_decode_num_drafts_total{{{lab}}} {s}",
            f"vllm:spec_decode_num_draft_tokens_total{{{lab}}} {d}",
            f"vllm:spec_decode_num_accepted_tokens_total{{{lab}}} {a}",
        ]
    if start is not None:
        lines.append(f"process_start_time_seconds {start}")
    return "\n".join(lines) + "\n"


def test_a_reset_of_one_counter_resets_the_whole_engine() -> None:
    # issue 20: an engine restarting from (S, D, A) = (100, 400, 300) to (90, 360, 310) — A already back
    # above its old value — gave α = 10/360 = 0.028. Every counter of the engine restarted: 310/360.
    before = reading(vllm({"0": (100, 400, 300), "1": (50, 200, 100)}), 0.0)
    after = reading(vllm({"0": (90, 360, 310), "1": (60, 240, 130)}), 10.0)
    d = counter_delta(before, after)
    assert d.values[ACCEPTED] == 310 + 30  # engine 0 from zero, engine 1 its increase
    assert d.values[DRAFT_TOKENS] == 360 + 40
    assert set(d.resets) == {DRAFTS, DRAFT_TOKENS, ACCEPTED}
    only_zero = counter_delta(
        reading(vllm({"0": (100, 400, 300)}), 0.0), reading(vllm({"0": (90, 360, 310)}), 10.0)
    )
    acc = acceptance_from_delta("vllm", only_zero, k=4)
    assert acc.acceptance_rate == pytest.approx(310 / 360)


def test_a_new_process_start_time_is_a_restart_even_when_every_counter_rose() -> None:
    before = reading(vllm({"0": (100, 400, 300)}, start=1000.0), 0.0)
    after = reading(vllm({"0": (120, 480, 390)}, start=2000.0), 10.0)
    d = counter_delta(before, after)
    assert (d.values[DRAFTS], d.values[DRAFT_TOKENS], d.values[ACCEPTED]) == (120, 480, 390)
    same = counter_delta(before, reading(vllm({"0": (120, 480, 390)}, start=1000.0), 10.0))
    assert (same.values[DRAFTS], same.values[ACCEPTED]) == (20, 90) and not same.resets


def test_the_monitor_view_marks_estimated_alpha_and_per_draft_rates() -> None:
    from specmeter.monitoring.view_live import window_line
    from specmeter.monitoring.windows import Window

    r0 = reading(tgi(0, 0, [0, 0, 0, 0, 0], 0), 0.0)
    r1 = reading(tgi(60, 140, [10, 20, 30, 40, 60], 10), 5.0)
    acc = acceptance_from_delta("tgi", counter_delta(r0, r1), k=4)
    line = window_line(Window("http://tgi", "tgi", 0.0, 5.0, acc))
    assert "α ≈" in line  # D = S·k is an estimate
    assert acc.per_position_definition == "per_draft" and "(per draft)" in line
    vllm_window = acceptance_from_delta("vllm", counter_delta(*(reading(vllm({"0": v}), t) for v, t in (
        ((0, 0, 0), 0.0), ((10, 40, 30), 1.0)))), k=4)  # fmt: skip
    assert "α 0.750" in window_line(Window("http://v", "vllm", 0.0, 1.0, vllm_window))
