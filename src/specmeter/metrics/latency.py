"""Latency as the user feels it: TTFT, TPOT, chunk gaps, jitter, stalls and throughput.

Speculation emits tokens in bursts (a_s + 1 per step), so the field report's "stutter" shows up in the
gaps between emissions, not in tokens/s. Gaps are reported per chunk (vLLM's ITL convention) and per
token (gap ÷ tokens in the later chunk, genai-perf's convention), labelled, because the two differ by
exactly the burst size. Times are seconds here; the summary converts to milliseconds.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from itertools import pairwise

import numpy as np

from specmeter.metrics.records import Emission, RequestRecord

__all__ = [
    "BURST_GAP_S",
    "STALL_FACTOR",
    "chunk_gaps",
    "count_stalls",
    "decode_tokens_per_second",
    "jitter",
    "per_token_gaps",
    "percentiles",
    "stall_indexes",
    "stalls",
    "tail_ratio",
    "tokens_per_second",
    "tpot",
    "ttft",
]

STALL_FACTOR = 3.0  # docs/metrics.md "stalls": a gap longer than 3× its request's median rhythm gap
# Gaps shorter than this are one burst split over network reads, not rhythm (docs/metrics.md "stalls"):
# llama-server streams each token of a verification step as its own SSE event, ~0.1 ms apart.
BURST_GAP_S = 0.001


def ttft(request: RequestRecord) -> float:
    """Time to first token: request start → first token, in seconds."""
    return request.ttft_s


def _token_emissions(request: RequestRecord) -> list[Emission]:
    # A chunk that carries no token (a role header, a bare finish reason) is not something the user
    # sees; counting it would split one real gap into two short ones and flatter the jitter.
    return [e for e in request.emissions if e.tokens > 0]


def tpot(request: RequestRecord) -> float | None:
    """Time per output token after the first: (t_last − t_first) / (N − 1); None for N ≤ 1.

    N is the request's token count (from token ids or server usage, never a chunk count). Without
    emission times, latency − TTFT is the same interval (start→last minus start→first). Tokens that share
    the first chunk with the first token count among the N − 1 although they arrived with it, as in vLLM's
    and genai-perf's TPOT ((latency − TTFT) / (N − 1)); the rhythm after the first chunk is what the
    per-token gaps measure (docs/metrics.md, "TPOT").
    """
    n = request.output_tokens
    if n <= 1:
        return None
    emissions = _token_emissions(request)
    span = emissions[-1].t - emissions[0].t if emissions else request.latency_s - request.ttft_s
    return span / (n - 1)


def chunk_gaps(request: RequestRecord) -> list[float]:
    """Time between consecutive emissions of one request (ITL per chunk, vLLM convention)."""
    emissions = _token_emissions(request)
    return [later.t - earlier.t for earlier, later in pairwise(emissions)]


def per_token_gaps(request: RequestRecord) -> list[float]:
    """Each chunk gap divided by the tokens in the later chunk (genai-perf convention)."""
    emissions = _token_emissions(request)
    return [(later.t - earlier.t) / later.tokens for earlier, later in pairwise(emissions)]


def percentiles(values: Sequence[float], *, scale: float = 1.0) -> dict[str, float] | None:
    """{p50, p90, p99, mean} of ``values`` × ``scale``; linear interpolation as numpy's default.

    None for no values. ``scale`` = 1000 turns seconds into milliseconds.
    """
    if len(values) == 0:
        return None
    array = np.asarray(values, dtype=np.float64) * scale
    p50, p90, p99 = np.percentile(array, [50.0, 90.0, 99.0])
    return {"p50": float(p50), "p90": float(p90), "p99": float(p99), "mean": float(array.mean())}


def jitter(gaps: Sequence[float]) -> float | None:
    """Coefficient of variation of gaps: population stdev / mean; None without gaps or at mean 0.

    Callers pool the gaps of all requests so that one number describes the whole run.
    """
    if len(gaps) == 0:
        return None
    array = np.asarray(gaps, dtype=np.float64)
    mean = float(array.mean())
    if mean <= 0:
        return None
    return float(array.std()) / mean  # numpy's std is the population one (ddof=0)


def tail_ratio(gaps: Sequence[float]) -> float | None:
    """p99 / p50 of the gaps: how much worse the worst pauses are than the typical one."""
    summary = percentiles(gaps)
    if summary is None or summary["p50"] <= 0:
        return None
    return summary["p99"] / summary["p50"]


def stall_indexes(request: RequestRecord, *, factor: float = STALL_FACTOR) -> list[int]:
    """Indexes into ``chunk_gaps(request)`` of the gaps that are stalls: longer than ``factor`` × the
    request's own median *rhythm* gap (the gaps of at least :data:`BURST_GAP_S`).

    Relative to the request's median so that a slow model is not "stalling" everywhere; a stall is a
    pause the user notices against the rhythm they were already getting. Gaps under a millisecond are
    bursts, not rhythm: chunks of one server flush — SSE events of one network read, which the streaming
    client stamps with one time (gap 0), or the per-token events llama-server writes for one verification
    step, read a tenth of a millisecond apart. They neither set the median nor count as stalls; with them
    in the median every step boundary of a llama.cpp stream was a "stall". A request without a rhythm gap
    has no stall.
    """
    gaps = chunk_gaps(request)
    rhythm = [g for g in gaps if g >= BURST_GAP_S]
    if not rhythm:
        return []
    threshold = factor * statistics.median(rhythm)
    return [i for i, g in enumerate(gaps) if g > threshold]


def stalls(request: RequestRecord, *, factor: float = STALL_FACTOR) -> int:
    """The number of stalls of one request (:func:`stall_indexes`)."""
    return len(stall_indexes(request, factor=factor))


def count_stalls(requests: Iterable[RequestRecord], *, factor: float = STALL_FACTOR) -> tuple[int, int]:
    """(stalls, gaps) over requests, so the caller can report both the count and the rate."""
    total_stalls = total_gaps = 0
    for request in requests:
        total_stalls += stalls(request, factor=factor)
        total_gaps += len(chunk_gaps(request))
    return total_stalls, total_gaps


def tokens_per_second(requests: Iterable[RequestRecord]) -> float | None:
    """N / Σ latency: end-to-end single-stream throughput, prefill and the first token included; None
    when no time was recorded (zero-latency guard)."""
    tokens = 0
    seconds = 0.0
    for request in requests:
        tokens += request.output_tokens
        seconds += request.latency_s
    if seconds <= 0:
        return None
    return tokens / seconds


def decode_tokens_per_second(requests: Iterable[RequestRecord]) -> float | None:
    """Σ (N − 1) / Σ (latency − TTFT): single-stream decode throughput, the tokens after the first over the
    time after the first (the interval of TPOT, whose pooled inverse this is); None without such time."""
    tokens = 0
    seconds = 0.0
    for request in requests:
        if request.output_tokens > 1:
            tokens += request.output_tokens - 1
            seconds += request.latency_s - request.ttft_s
    if seconds <= 0:
        return None
    return tokens / seconds
