"""Latency metrics against hand-computed cases."""

from __future__ import annotations

import math

import pytest
from metrics_builders import emissions, request, spec_run

from specmeter.metrics.latency import (
    chunk_gaps,
    count_stalls,
    decode_tokens_per_second,
    jitter,
    per_token_gaps,
    percentiles,
    stall_indexes,
    stalls,
    tail_ratio,
    tokens_per_second,
    tpot,
    ttft,
)


def test_ttft() -> None:
    assert ttft(request("a", ttft_s=0.25)) == 0.25


def test_tpot_from_emission_times() -> None:
    a, b = spec_run().requests
    # a: first emission 0.1, last 0.6, N = 10 -> 0.5/9
    assert tpot(a) == pytest.approx(0.5 / 9)
    # b: 0.2 .. 1.5, N = 7 -> 1.3/6
    assert tpot(b) == pytest.approx(1.3 / 6)


def test_tpot_without_emissions_uses_latency_minus_ttft() -> None:
    # (2.0 − 0.5)/(4 − 1) = 0.5
    assert tpot(request("a", output_tokens=4, latency_s=2.0, ttft_s=0.5)) == pytest.approx(0.5)


def test_tpot_with_a_multi_token_first_chunk_is_per_token_after_the_first_token() -> None:
    # issue 20: 3, 1, 1 tokens at 0.1, 0.2, 0.3 s. TPOT divides the time after the first token by the
    # N − 1 = 4 tokens after it, as vLLM's and genai-perf's TPOT do: 0.2/4 = 0.05 s — the two tokens that
    # rode in the first chunk came for free. The rhythm after the first chunk, 0.1 s per token, is the
    # per-token gap (docs/metrics.md "TPOT" says which is which and why).
    r = request(
        "a", output_tokens=5, ttft_s=0.1, latency_s=0.3, emitted=emissions((0.1, 3), (0.2, 1), (0.3, 1))
    )
    assert tpot(r) == pytest.approx(0.05)
    assert per_token_gaps(r) == pytest.approx([0.1, 0.1])
    # and the pooled decode throughput is its inverse: 4 tokens over 0.2 s
    assert decode_tokens_per_second([r]) == pytest.approx(1 / 0.05)


def test_tpot_single_token_and_empty_outputs() -> None:
    assert tpot(request("a", output_tokens=1, emitted=emissions((0.1, 1)))) is None
    assert tpot(request("a", output_tokens=0)) is None


def test_chunk_gaps_per_chunk_and_per_token() -> None:
    a, b = spec_run().requests
    # a emissions at 0.1 (1), 0.3 (5), 0.4 (2), 0.5 (1), 0.6 (1)
    assert chunk_gaps(a) == pytest.approx([0.2, 0.1, 0.1, 0.1])
    # per token: 0.2/5, 0.1/2, 0.1/1, 0.1/1
    assert per_token_gaps(a) == pytest.approx([0.04, 0.05, 0.1, 0.1])
    # b emissions at 0.2 (1), 0.4 (3), 0.5 (1), 1.5 (2)
    assert chunk_gaps(b) == pytest.approx([0.2, 0.1, 1.0])
    assert per_token_gaps(b) == pytest.approx([0.2 / 3, 0.1, 0.5])


def test_gaps_skip_empty_chunks_and_single_emissions() -> None:
    # a zero-token chunk at 0.2 (e.g. a finish-reason-only chunk) is not an emission the user sees
    r = request("a", output_tokens=2, emitted=emissions((0.1, 1), (0.2, 0), (0.4, 1)))
    assert chunk_gaps(r) == pytest.approx([0.3])
    assert per_token_gaps(r) == pytest.approx([0.3])
    single = request("b", output_tokens=1, emitted=emissions((0.1, 1)))
    assert chunk_gaps(single) == []
    assert per_token_gaps(single) == []
    assert stalls(single) == 0


def test_percentiles_linear_interpolation() -> None:
    # [1, 2, 3, 4]: index q·(n−1): p50 -> 1.5 -> 2.5; p90 -> 2.7 -> 3.7; p99 -> 2.97 -> 3.97; mean 2.5
    assert percentiles([4.0, 1.0, 3.0, 2.0]) == pytest.approx(
        {"p50": 2.5, "p90": 3.7, "p99": 3.97, "mean": 2.5}
    )
    # scale to ms
    assert percentiles([0.001, 0.003], scale=1000.0) == pytest.approx(
        {"p50": 2.0, "p90": 2.8, "p99": 2.98, "mean": 2.0}
    )
    assert percentiles([]) is None
    single = percentiles([5.0])
    assert single == {"p50": 5.0, "p90": 5.0, "p99": 5.0, "mean": 5.0}
    assert all(type(v) is float for v in single.values())  # plain floats, JSON-ready


def test_jitter_pooled_population_stdev_over_mean() -> None:
    gaps = [0.2, 0.1, 0.1, 0.1, 0.2, 0.1, 1.0]
    # mean = 1.8/7; mean of squares = 1.12/7; var = 1.12/7 − (1.8/7)^2 = 4.6/49
    # stdev = sqrt(4.6)/7; jitter = (sqrt(4.6)/7)/(1.8/7) = sqrt(4.6)/1.8 = 1.1915
    assert jitter(gaps) == pytest.approx(math.sqrt(4.6) / 1.8)
    assert jitter([0.5, 0.5]) == 0.0  # perfectly even
    assert jitter([]) is None
    assert jitter([0.0, 0.0]) is None  # zero-latency guard


def test_tail_ratio() -> None:
    # [1, 2, 3, 4]: p99/p50 = 3.97/2.5
    assert tail_ratio([1.0, 2.0, 3.0, 4.0]) == pytest.approx(3.97 / 2.5)
    assert tail_ratio([]) is None
    assert tail_ratio([0.0, 0.0, 1.0]) is None  # p50 = 0


def test_stalls_relative_to_the_request_median() -> None:
    a, b = spec_run().requests
    # a gaps 0.2, 0.1, 0.1, 0.1: median 0.1, threshold 0.3 -> none
    assert stalls(a) == 0
    # b gaps 0.2, 0.1, 1.0: median 0.2, threshold 0.6 -> the 1.0 gap
    assert stalls(b) == 1
    # stall count and gap count over both: 1 of 7
    assert count_stalls([a, b]) == (1, 7)
    # exactly 3× the median is not a stall (strictly greater): gaps 1, 1, 3, median 1
    even = request("c", output_tokens=4, emitted=emissions((0.0, 1), (1.0, 1), (2.0, 1), (5.0, 1)))
    assert chunk_gaps(even) == [1.0, 1.0, 3.0]
    assert stalls(even) == 0
    assert stalls(even, factor=2.0) == 1


def test_zero_gaps_neither_set_the_rhythm_nor_stall() -> None:
    # issue 20: emissions at 0.10, 0.10, 0.10, 0.10, 0.11 (SSE events of one network read share a time)
    # had median gap 0, threshold 3 × 0, and the one real 10 ms gap counted as a stall.
    burst = request("a", output_tokens=5, emitted=emissions(*[(0.10, 1)] * 4, (0.11, 1)))
    assert chunk_gaps(burst) == pytest.approx([0.0, 0.0, 0.0, 0.01])
    assert stalls(burst) == 0
    assert count_stalls([burst]) == (0, 4)
    # the rhythm is the median of the non-zero gaps: 0.1, 0.1, 0.7 -> 0.1; the 0.7 s pause is a stall
    paused = request(
        "b", output_tokens=6, emitted=emissions((0.0, 1), (0.0, 1), (0.1, 1), (0.2, 1), (0.9, 1))
    )
    assert stall_indexes(paused) == [3]
    # all gaps zero: one burst, no rhythm, no stall
    assert stalls(request("c", output_tokens=3, emitted=emissions(*[(0.5, 1)] * 3))) == 0


def test_sub_millisecond_bursts_are_not_the_rhythm() -> None:
    # llama-server streams the 5 tokens of a verification step as 5 events 0.1 ms apart, steps 20 ms apart.
    # With those gaps in the median (0.1 ms) every step boundary was a stall; the rhythm is the 20 ms steps.
    times, t = [], 0.0
    for _step in range(6):
        for i in range(5):
            times.append((t + i * 0.0001, 1))
        t += 0.020
    steady = request("d", output_tokens=30, emitted=emissions(*times))
    assert stalls(steady) == 0
    # a real pause in that stream is still one: 25 ms steps with one 200 ms wait
    times.append((t + 0.2, 1))
    assert stall_indexes(request("e", output_tokens=31, emitted=emissions(*times))) == [29]


def test_tokens_per_second_is_end_to_end_and_decode_throughput_is_separate() -> None:
    # N / Σ latency counts prefill and the first token; decode throughput is (N − 1) / Σ(latency − TTFT):
    # 9 + 6 tokens over 0.5 + 1.3 s in the worked example
    assert decode_tokens_per_second(spec_run().requests) == pytest.approx(15 / 1.8)
    assert decode_tokens_per_second([request("a", output_tokens=1)]) is None


def test_tokens_per_second() -> None:
    # N = 10 + 7 = 17 tokens over 0.6 + 1.5 = 2.1 s
    assert tokens_per_second(spec_run().requests) == pytest.approx(17 / 2.1)
    assert tokens_per_second([]) is None
    assert tokens_per_second([request("a", output_tokens=3, latency_s=0.0)]) is None  # zero-latency guard
