"""Server-kind adapters: one scrape of /metrics → speculative-decoding counters under specmeter's names.

Each serving engine exports acceptance differently (sources in docs/monitoring.md):

- vLLM (and ``specmeter serve``): counters ``vllm:spec_decode_num_drafts_total`` (S),
  ``..._num_draft_tokens_total`` (D), ``..._num_accepted_tokens_total`` (A) and
  ``..._num_accepted_tokens_per_pos_total{position="i"}`` (steps that accepted position i), labelled
  ``model_name`` and ``engine``; several engines (data parallelism) are summed.
- SGLang: gauges ``sglang:spec_accept_length`` (τ) and ``sglang:spec_accept_rate`` (α) describing the
  last batch, no counters; ``/get_server_info`` carries ``avg_spec_accept_length``.
- TGI: histogram ``tgi_request_skipped_tokens`` with one observation a_s per step plus one 0 per request
  for its prefill (count = S + requests, sum = A; ``tgi_request_success`` counts the requests), buckets
  at 0..speculate give the per-position counts; D is not exported.
- llama.cpp: per-response ``timings.draft_n`` / ``draft_n_accepted``; some builds also export
  ``llamacpp:n_drafted_total`` / ``llamacpp:n_drafted_accepted_total``.

A :class:`Reading` keeps every counter *per series* (label set, one per engine), so that
:func:`counter_delta` can detect a reset (a restarted engine: one of its counters went down, or the
process start time changed) engine by engine before summing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from specmeter.monitoring.promtext import LabelKey, MetricsSnapshot

__all__ = [
    "ACCEPTED",
    "DRAFTS",
    "DRAFT_TOKENS",
    "GENERATION_TOKENS",
    "KINDS",
    "PROMPT_TOKENS",
    "REQUESTS_DONE",
    "CounterDelta",
    "Reading",
    "ServerKind",
    "counter_delta",
    "counter_names",
    "detect_kind",
    "position_key",
    "read_counters",
    "unavailable_metrics",
]

ServerKind = Literal["vllm", "sglang", "tgi", "llamacpp", "unknown"]
KINDS: tuple[ServerKind, ...] = ("vllm", "sglang", "tgi", "llamacpp", "unknown")

DRAFTS = "drafts"  # S
DRAFT_TOKENS = "draft_tokens"  # D
ACCEPTED = "accepted"  # A
GENERATION_TOKENS = "generation_tokens"
PROMPT_TOKENS = "prompt_tokens"
REQUESTS_DONE = "requests_done"  # finished requests (TGI: one prefill observation each in its histogram)
TAU_GAUGE = "tau_gauge"
ALPHA_GAUGE = "alpha_gauge"
TAU_SERVER_INFO = "tau_server_info"

_VLLM = {
    DRAFTS: "vllm:spec_decode_num_drafts_total",
    DRAFT_TOKENS: "vllm:spec_decode_num_draft_tokens_total",
    ACCEPTED: "vllm:spec_decode_num_accepted_tokens_total",
    GENERATION_TOKENS: "vllm:generation_tokens_total",
    PROMPT_TOKENS: "vllm:prompt_tokens_total",
}
VLLM_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
_SGLANG = {GENERATION_TOKENS: "sglang:generation_tokens_total", PROMPT_TOKENS: "sglang:prompt_tokens_total"}
_LLAMACPP = {
    DRAFT_TOKENS: "llamacpp:n_drafted_total",
    ACCEPTED: "llamacpp:n_drafted_accepted_total",
    GENERATION_TOKENS: "llamacpp:tokens_predicted_total",
    PROMPT_TOKENS: "llamacpp:prompt_tokens_total",
}
TGI_SKIPPED = "tgi_request_skipped_tokens"

# What each kind cannot provide, in plain sentences (shown in `load` results and the monitor).
_UNAVAILABLE: dict[str, tuple[str, ...]] = {
    "vllm": (
        "per-request spread (counters give totals, so no confidence intervals)",
        "β unless every draft had k tokens (then R = S − accepted at the last position)",
    ),
    "sglang": (
        "drafted/accepted counts and per-position acceptance (SGLang exports gauges only)",
        "windowed α/τ: sglang:spec_accept_* describe the last batch at scrape time, not the window",
        "α before the SGLang version that added sglang:spec_accept_rate",
    ),
    "tgi": (
        "drafted tokens: D, α and β are estimated assuming every draft had k tokens",
        "exact S while requests are in flight: the prefill observations are removed per finished request",
        "per-position acceptance when the histogram is exported without integer buckets",
    ),
    "llamacpp": (
        "steps, hence τ and per-position acceptance (only drafted and accepted token totals)",
        "/metrics draft counters on builds that do not export llamacpp:n_drafted_*",
    ),
    "unknown": ("all acceptance figures: no known speculative-decoding metrics in /metrics",),
}


def counter_names(kind: str) -> Mapping[str, str]:
    """specmeter's counter name → the server's metric name, for kinds that export counters (vLLM, llama.cpp);
    what ``monitor --prometheus`` asks Prometheus for. Per-position counts: ``VLLM_PER_POS``."""
    return dict({"vllm": _VLLM, "llamacpp": _LLAMACPP}.get(kind, {}))


def unavailable_metrics(kind: str) -> tuple[str, ...]:
    return _UNAVAILABLE.get(kind, _UNAVAILABLE["unknown"])


def position_key(i: int) -> str:
    """Canonical name of the counter of steps that accepted draft position i (0-based, vLLM's label)."""
    return f"accepted_pos:{i}"


@dataclass(frozen=True)
class Reading:
    """One scrape in specmeter's vocabulary: counters per series, gauges averaged over series."""

    kind: ServerKind
    counters: Mapping[str, Mapping[LabelKey, float]]
    gauges: Mapping[str, float] = field(default_factory=dict)
    positions: int = 0  # k as the server reveals it (per-position series, TGI buckets); 0 = unknown
    mono_time: float = 0.0
    wall_time: float = 0.0
    start_time: float | None = None  # process_start_time_seconds, where exported: a change is a restart

    @property
    def has_spec(self) -> bool:
        """Whether this scrape carries any speculative-decoding figure at all."""
        spec = (DRAFTS, DRAFT_TOKENS, ACCEPTED)
        return any(self.counters.get(n) for n in spec) or any(
            g in self.gauges for g in (TAU_GAUGE, ALPHA_GAUGE, TAU_SERVER_INFO)
        )


def detect_kind(snapshot: MetricsSnapshot) -> ServerKind:
    """Guess the server kind from metric-name prefixes (vLLM-named metrics win: specmeter serve uses them)."""
    for prefix, kind in (
        ("vllm:", "vllm"),
        ("sglang:", "sglang"),
        ("tgi_", "tgi"),
        ("llamacpp:", "llamacpp"),
    ):
        if snapshot.has_prefix(prefix):
            return kind  # type: ignore[return-value]
    return "unknown"


def _series(snapshot: MetricsSnapshot, name: str) -> dict[LabelKey, float]:
    # Some exporters omit the `_total` suffix of counters; accept both spellings.
    found = snapshot.series(name)
    if not found and name.endswith("_total"):
        found = snapshot.series(name[: -len("_total")])
    return found


def _mean_gauge(snapshot: MetricsSnapshot, name: str) -> float | None:
    values = list(snapshot.series(name).values())
    return sum(values) / len(values) if values else None


def _vllm(snapshot: MetricsSnapshot) -> tuple[dict[str, dict[LabelKey, float]], int]:
    counters = {canon: _series(snapshot, name) for canon, name in _VLLM.items()}
    per_pos: dict[int, dict[LabelKey, float]] = {}
    for s in snapshot.samples:
        if s.name == VLLM_PER_POS and not math.isnan(s.value):
            pos = s.label("position")
            if pos is not None and pos.isdigit():
                key = tuple(kv for kv in s.labels if kv[0] != "position")
                per_pos.setdefault(int(pos), {})[key] = s.value
    for i, series in per_pos.items():
        counters[position_key(i)] = series
    return counters, (max(per_pos) + 1 if per_pos else 0)


def _tgi(snapshot: MetricsSnapshot) -> tuple[dict[str, dict[LabelKey, float]], int]:
    counters = {
        DRAFTS: snapshot.series(TGI_SKIPPED + "_count"),  # S + one prefill observation per request
        ACCEPTED: snapshot.series(TGI_SKIPPED + "_sum"),
        REQUESTS_DONE: _series(snapshot, "tgi_request_success"),
        GENERATION_TOKENS: snapshot.series("tgi_request_generated_tokens_sum"),
        PROMPT_TOKENS: snapshot.series("tgi_request_input_length_sum"),
    }
    # Buckets at le = 0, 1, ..., speculate: steps with a_s >= i+1 = count - bucket(le=i).
    buckets: dict[int, dict[LabelKey, float]] = {}
    for s in snapshot.samples:
        if s.name != TGI_SKIPPED + "_bucket":
            continue
        le = s.label("le")
        try:
            bound = float(le) if le is not None else math.nan
        except ValueError:
            continue
        if math.isfinite(bound) and bound == int(bound) and bound >= 0:
            key = tuple(kv for kv in s.labels if kv[0] != "le")
            buckets.setdefault(int(bound), {})[key] = s.value
    k = max(buckets) if buckets and set(buckets) == set(range(max(buckets) + 1)) else 0
    for i in range(k):
        counters[position_key(i)] = {
            key: count - buckets[i].get(key, 0.0) for key, count in counters[DRAFTS].items()
        }
    return counters, k


def read_counters(
    snapshot: MetricsSnapshot, kind: ServerKind | None = None, *, server_info_tau: float | None = None
) -> Reading:
    """The speculative-decoding counters and gauges of one scrape, for ``kind`` (detected if None)."""
    kind = kind or detect_kind(snapshot)
    counters: dict[str, dict[LabelKey, float]] = {}
    gauges: dict[str, float] = {}
    positions = 0
    if kind == "vllm":
        counters, positions = _vllm(snapshot)
    elif kind == "tgi":
        counters, positions = _tgi(snapshot)
    elif kind == "sglang":
        counters = {canon: _series(snapshot, name) for canon, name in _SGLANG.items()}
        for gauge, name in (
            (TAU_GAUGE, "sglang:spec_accept_length"),
            (ALPHA_GAUGE, "sglang:spec_accept_rate"),
        ):
            value = _mean_gauge(snapshot, name)
            if value is not None:
                gauges[gauge] = value
    elif kind == "llamacpp":
        counters = {canon: _series(snapshot, name) for canon, name in _LLAMACPP.items()}
        if not counters[ACCEPTED]:
            counters[ACCEPTED] = _series(snapshot, "llamacpp:n_accepted_total")
    if server_info_tau is not None:
        gauges[TAU_SERVER_INFO] = server_info_tau
    starts = snapshot.series("process_start_time_seconds")
    return Reading(
        kind=kind,
        counters={k: v for k, v in counters.items() if v},
        gauges=gauges,
        positions=positions,
        mono_time=snapshot.mono_time,
        wall_time=snapshot.wall_time,
        start_time=max(starts.values()) if starts else None,
    )


@dataclass(frozen=True)
class CounterDelta:
    """Counter increases between two readings, summed over engines, with resets detected per engine."""

    values: Mapping[str, float]
    resets: tuple[str, ...]
    seconds: float

    def get(self, name: str) -> float | None:
        return self.values.get(name)


def counter_delta(before: Reading, after: Reading) -> CounterDelta:
    """``after − before`` per counter, engine by engine (an engine is a label set).

    An engine whose counters restarted — any one of them went down, or the process start time changed —
    restarted all of them: for each of its counters everything counted since the restart, its current
    value, is the increase, even for a counter that already climbed back above its old value (otherwise
    (S, D, A) = (100, 400, 300) → (90, 360, 310) would give α = 10/360). A series that is new counts from
    zero; a series that disappeared (an engine that went away) contributes nothing. Engines are summed
    only after that, so one engine's restart does not hide the others' traffic. ``resets`` names the
    counters of the restarted engines.
    """
    restarted = (
        before.start_time is not None
        and after.start_time is not None
        and after.start_time != before.start_time
    )
    reset_engines: set[LabelKey] = set()
    for name, series in after.counters.items():
        old = before.counters.get(name, {})
        reset_engines.update(key for key, value in series.items() if key in old and value < old[key])
    values: dict[str, float] = {}
    resets: list[str] = []
    for name, series in after.counters.items():
        old = before.counters.get(name, {})
        total = 0.0
        for key, value in series.items():
            previous = old.get(key)
            if previous is None:
                total += value
            elif restarted or key in reset_engines:
                total += value
                if name not in resets:
                    resets.append(name)
            else:
                total += value - previous
        values[name] = total
    return CounterDelta(values, tuple(resets), max(after.mono_time - before.mono_time, 0.0))
