"""Server-kind adapters: vLLM (several engines, resets), SGLang gauges, TGI histogram, llama.cpp, unknown."""

from __future__ import annotations

import pytest

from specmeter.monitoring.acceptance import acceptance_from_delta
from specmeter.monitoring.adapters import (
    ACCEPTED,
    DRAFT_TOKENS,
    DRAFTS,
    KINDS,
    QUEUE_RUNNING,
    QUEUE_WAITING,
    SERVER_CHOICES,
    Reading,
    counter_delta,
    detect_kind,
    kind_from_option,
    position_key,
    queue_names,
    read_counters,
)
from specmeter.monitoring.promtext import ScrapeError, metrics_url, parse_metrics


def vllm(engines: dict[str, tuple[int, int, int, list[int]]], *, suffix: str = "_total") -> str:
    lines = [
        "# HELP vllm:spec_decode_num_drafts Number of spec decoding drafts.",
        "# TYPE vllm:spec_decode_num_drafts counter",
    ]
    for engine, (s, d, a, pos) in engines.items():
        lab = f'engine="{engine}",model_name="m"'
        lines += [
            f"vllm:spec_decode_num_drafts{suffix}{{{lab}}} {s}",
            f"vllm:spec_decode_num_draft_tokens{suffix}{{{lab}}} {d}",
            f"vllm:spec_decode_num_accepted_tokens{suffix}{{{lab}}} {a}",
            f"vllm:spec_decode_num_drafts_created{{{lab}}} 1.7e9",
        ]
        lines += [
            f'vllm:spec_decode_num_accepted_tokens_per_pos{suffix}{{{lab},position="{i}"}} {n}'
            for i, n in enumerate(pos)
        ]
    return "\n".join(lines) + "\n"


def reading(text: str, t: float, kind: str | None = None) -> Reading:
    snap = parse_metrics(text)
    object.__setattr__(snap, "mono_time", t)
    return read_counters(snap, kind)  # type: ignore[arg-type]


def test_vllm_engines_are_summed_and_positions_found() -> None:
    r = reading(vllm({"0": (10, 40, 30, [9, 8, 7, 6]), "1": (5, 20, 10, [4, 3, 2, 1])}), 0.0)
    assert r.kind == "vllm" and r.positions == 4
    assert sum(r.counters[DRAFTS].values()) == 15
    assert sum(r.counters[position_key(0)].values()) == 13
    assert r.has_spec


def test_counters_without_total_suffix_are_accepted() -> None:
    r = reading(vllm({"0": (10, 40, 30, [9, 8, 7, 6])}, suffix=""), 0.0)
    assert sum(r.counters[ACCEPTED].values()) == 30


def test_delta_handles_a_reset_engine_per_series() -> None:
    before = reading(
        vllm({"0": (100, 400, 300, [90, 80, 70, 60]), "1": (50, 200, 100, [40, 30, 20, 10])}), 0.0
    )
    # Engine 1 restarted (its counters went down); engine 0 kept counting.
    after = reading(vllm({"0": (110, 440, 330, [99, 88, 77, 66]), "1": (4, 16, 8, [3, 2, 2, 1])}), 10.0)
    d = counter_delta(before, after)
    assert d.values[DRAFTS] == 10 + 4
    assert d.values[DRAFT_TOKENS] == 40 + 16
    assert d.values[ACCEPTED] == 30 + 8
    assert d.values[position_key(0)] == 9 + 3
    assert DRAFTS in d.resets and d.seconds == 10.0
    acc = acceptance_from_delta("vllm", d, k=4)
    assert acc.acceptance_rate == pytest.approx(38 / 56)
    assert acc.acceptance_length == pytest.approx(1 + 38 / 14)
    assert acc.drafts_per_s == pytest.approx(1.4)


def test_new_engine_series_counts_from_zero() -> None:
    before = reading(vllm({"0": (10, 40, 30, [9, 8, 7, 6])}), 0.0)
    after = reading(vllm({"0": (12, 48, 36, [11, 10, 8, 7]), "1": (3, 12, 6, [3, 2, 1, 0])}), 1.0)
    d = counter_delta(before, after)
    assert d.values[DRAFTS] == 2 + 3 and not d.resets


def test_metrics_without_spec_counters() -> None:
    r = reading('vllm:generation_tokens_total{engine="0",model_name="m"} 12\n', 0.0)
    assert r.kind == "vllm" and not r.has_spec
    acc = acceptance_from_delta("vllm", counter_delta(r, r))
    assert acc.source == "none" and acc.acceptance_rate is None and acc.unavailable


def test_sglang_gauges() -> None:
    text = (
        'sglang:spec_accept_length{model_name="m"} 3.2\nsglang:spec_accept_rate{model_name="m"} 0.55\n'
        'sglang:generation_tokens_total{model_name="m"} 1000\n'
    )
    r = reading(text, 0.0)
    assert r.kind == "sglang" and r.has_spec
    acc = acceptance_from_delta("sglang", counter_delta(r, r), r.gauges)
    assert acc.source == "gauges"
    assert (acc.acceptance_length, acc.acceptance_rate) == (3.2, 0.55)
    assert acc.steps is None and acc.per_position is None
    assert any("gauges" in u for u in acc.unavailable)


def tgi(count: int, total: int, buckets: list[int]) -> str:
    lines = [f'tgi_request_skipped_tokens_bucket{{le="{i}"}} {n}' for i, n in enumerate(buckets)]
    lines += [
        f'tgi_request_skipped_tokens_bucket{{le="+Inf"}} {count}',
        f"tgi_request_skipped_tokens_sum {total}",
        f"tgi_request_skipped_tokens_count {count}",
        "tgi_request_generated_tokens_sum 500",
    ]
    return "\n".join(lines) + "\n"


def test_tgi_histogram_gives_tau_and_positions_and_estimated_alpha() -> None:
    # speculate = 3: buckets at 0..3; steps accepting exactly j: 2, 3, 1, 4 -> cumulative 2, 5, 6, 10.
    r0 = reading(tgi(0, 0, [0, 0, 0, 0]), 0.0)
    r1 = reading(tgi(10, 0 * 2 + 1 * 3 + 2 * 1 + 3 * 4, [2, 5, 6, 10]), 5.0)
    assert r1.kind == "tgi" and r1.positions == 3
    acc = acceptance_from_delta("tgi", counter_delta(r0, r1), k=None)
    assert acc.acceptance_length == pytest.approx(1 + 17 / 10)
    assert [p["cumulative"] for p in acc.per_position or []] == pytest.approx([0.8, 0.5, 0.4])
    assert acc.drafted_estimated and acc.drafted_tokens == 30
    assert acc.acceptance_rate == pytest.approx(17 / 30)


def test_llamacpp_fork_counters_have_no_steps() -> None:
    # Forks exported only D and A as llamacpp:n_drafted_total / n_drafted_accepted_total.
    def text(drafted: int, accepted: int, predicted: int) -> str:
        return (
            f"llamacpp:n_drafted_total {drafted}\nllamacpp:n_drafted_accepted_total {accepted}\n"
            f"llamacpp:tokens_predicted_total {predicted}\n"
        )

    r0, r1 = reading(text(0, 0, 100), 0.0), reading(text(400, 260, 1000), 2.0)
    acc = acceptance_from_delta("llamacpp", counter_delta(r0, r1))
    assert acc.acceptance_rate == pytest.approx(0.65)
    assert acc.acceptance_length is None
    assert acc.tokens_per_s == pytest.approx(450.0)


def test_detect_kind_and_urls() -> None:
    assert detect_kind(parse_metrics("tgi_queue_size 0\n")) == "tgi"
    assert detect_kind(parse_metrics("process_cpu_seconds_total 1\n")) == "unknown"
    assert metrics_url("http://h:8000") == "http://h:8000/metrics"
    assert metrics_url("http://h:8000/custom/path") == "http://h:8000/custom/path"


def test_malformed_exposition_is_a_scrape_error() -> None:
    with pytest.raises(ScrapeError, match="malformed"):
        parse_metrics('vllm:x{engine="0" 3\n')


def test_llamacpp_upstream_names_win_over_fork_names() -> None:
    text = (
        "llamacpp:spec_decode_num_drafts_total 10\nllamacpp:spec_decode_num_draft_tokens_total 38\n"
        "llamacpp:spec_decode_num_accepted_tokens_total 30\nllamacpp:n_drafted_total 999\n"
        'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 9\n'
        'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 8\n'
    )
    r = reading(text, 1.0)
    assert r.kind == "llamacpp" and r.positions == 2
    acc = acceptance_from_delta("llamacpp", counter_delta(reading("", 0.0, "llamacpp"), r))
    assert (acc.steps, acc.drafted_tokens, acc.accepted_tokens) == (10, 38, 30)
    assert acc.acceptance_length == pytest.approx(4.0)
    assert [p["cumulative"] for p in acc.per_position or []] == pytest.approx([0.9, 0.8])


def trtllm(drafted: list[int], accepted: dict[int, int]) -> str:
    lab = 'model_name="m",engine_type="trtllm"'
    name = "trtllm_spec_decode_{}_tokens_total{{" + lab + ',token_position="{}"}} {}'
    lines = [name.format("drafted", i, n) for i, n in enumerate(drafted)]
    lines += [name.format("accepted", i, n) for i, n in accepted.items()]
    lines += [
        f"trtllm_spec_decode_num_draft_tokens_total{{{lab}}} 1000",
        f"trtllm_spec_decode_acceptance_length{{{lab}}} 9",
    ]
    return "\n".join(lines) + "\n"


def test_trtllm_per_position_counters_are_one_consistent_set() -> None:
    # Position 3 was never accepted yet, so TensorRT-LLM has not created its series: it counts 0.
    r0 = reading(trtllm([4, 4, 3, 2], {0: 3, 1: 2}), 0.0)
    r1 = reading(trtllm([10, 10, 9, 7], {0: 8, 1: 6, 2: 4}), 5.0)
    assert r1.kind == "trtllm" and r1.positions == 4 and "tau_gauge" not in r1.gauges
    acc = acceptance_from_delta("trtllm", counter_delta(r0, r1), r1.gauges)
    # The iteration counter (1000, unchanged) is not mixed with the per-request set.
    assert (acc.steps, acc.drafted_tokens, acc.accepted_tokens) == (6, 23, 13)
    assert acc.acceptance_length == pytest.approx(1 + 13 / 6)
    assert [p["cumulative"] for p in acc.per_position or []] == pytest.approx([5 / 6, 4 / 6, 4 / 6, 0.0])


def test_kind_option_maps_to_a_kind() -> None:
    assert kind_from_option("auto") is None
    assert kind_from_option("specmeter") == "vllm"
    assert all(kind_from_option(kind) == kind for kind in KINDS)
    assert set(KINDS) < set(SERVER_CHOICES)


# Queue gauges as each server writes them (names from the sources cited in adapters' docstring).
QUEUE_TEXT = {
    "vllm": (
        "# TYPE vllm:num_requests_running gauge\n"
        'vllm:num_requests_running{engine="0",model_name="m"} 3.0\n'
        'vllm:num_requests_running{engine="1",model_name="m"} 4.0\n'
        "# TYPE vllm:num_requests_waiting gauge\n"
        'vllm:num_requests_waiting{engine="0",model_name="m"} 2.0\n'
        'vllm:num_requests_waiting{engine="1",model_name="m"} 0.0\n'
        'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10\n'
    ),
    "llamacpp": (
        "# HELP llamacpp:requests_processing Number of requests processing.\n"
        "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 7\n"
        "# HELP llamacpp:requests_deferred Number of requests deferred.\n"
        "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred 2\n"
    ),
    "sglang": (
        "# TYPE sglang:num_running_reqs gauge\n"
        'sglang:num_running_reqs{model_name="m",engine_type="unified",tp_rank="0"} 7.0\n'
        "# TYPE sglang:num_queue_reqs gauge\n"
        'sglang:num_queue_reqs{model_name="m",engine_type="unified",tp_rank="0"} 2.0\n'
    ),
    "tgi": "# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size 7\n"
    "# TYPE tgi_queue_size gauge\ntgi_queue_size 2\n",
}


@pytest.mark.parametrize("kind", sorted(QUEUE_TEXT))
def test_queue_gauges_per_kind_are_summed_over_series(kind: str) -> None:
    snapshot = parse_metrics(QUEUE_TEXT[kind])
    assert detect_kind(snapshot) == kind
    reading = read_counters(snapshot)
    assert reading.queue == {QUEUE_RUNNING: 7.0, QUEUE_WAITING: 2.0}
    assert set(queue_names(kind)) == {QUEUE_RUNNING, QUEUE_WAITING}


def test_no_queue_gauges_reads_empty() -> None:
    assert read_counters(parse_metrics(vllm({"0": (4, 16, 8, [3, 2, 2, 1])}))).queue == {}
    assert queue_names("trtllm") == {} and queue_names("unknown") == {}
