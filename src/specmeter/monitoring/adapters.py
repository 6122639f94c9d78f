"""Server-kind adapters: what each engine exports → speculative-decoding figures under specmeter's names.

Two kinds of source, read here and nowhere else (what each name means and where it was read is in
docs/monitoring.md, "Server kinds"):

**Prometheus /metrics** (one scrape → a :class:`Reading`), used by ``monitor`` and by ``load`` around each
block of requests:

- vLLM (and ``specmeter serve``), ``vllm/v1/spec_decode/metrics.py`` (recorded from vLLM 0.32.0): counters
  ``vllm:spec_decode_num_drafts_total`` (S), ``..._num_draft_tokens_total`` (D),
  ``..._num_accepted_tokens_total`` (A) and ``..._num_accepted_tokens_per_pos_total{position="i"}`` (steps
  that accepted position i), labelled ``model_name`` and ``engine``; several engines are summed.
- llama.cpp ``llama-server --metrics``, ``tools/server/server-task.cpp`` (``to_metrics``; read in the
  llama.cpp that llama-cpp-python 0.3.36 vendors, commit 0c1e570, and recorded from it): counters
  ``llamacpp:spec_decode_num_drafts_total`` (S, verification steps), ``..._num_draft_tokens_total`` (D),
  ``..._num_accepted_tokens_total`` (A) and ``..._num_accepted_tokens_per_pos_total{position="i"}``, added
  to when a request finishes (``metrics_on_prediction`` in ``server-context.cpp``). Builds of forks that
  export ``llamacpp:n_drafted_total`` / ``llamacpp:n_drafted_accepted_total`` (D and A only) still read.
- TensorRT-LLM ``trtllm-serve``, ``tensorrt_llm/metrics/collector.py`` (``MetricsCollector``, read at
  commit 050f80d of main, 2026; ``log_iteration_stats`` and ``log_request_metrics_dict``): iteration
  counters ``trtllm_spec_decode_num_draft_tokens_total`` (D) and ``..._num_accepted_tokens_total`` (A), the
  gauge ``trtllm_spec_decode_acceptance_length`` (τ of the last iteration), and per-request counters added
  when a request finishes, ``trtllm_spec_decode_drafted_tokens_total{token_position="i"}`` (drafts that
  reached position i) and ``trtllm_spec_decode_accepted_tokens_total{token_position="i"}``. When the
  per-position pair is exported it is used for everything — S = drafted at position 0 (every draft has
  a first token), D and A their sums — because it is one consistent set; otherwise the iteration counters.
- SGLang, ``python/sglang/srt/metrics/collector.py``: gauges ``sglang:spec_accept_length`` (τ) and
  ``sglang:spec_accept_rate`` (α) describing the last batch, no counters; ``/get_server_info`` carries
  ``avg_spec_accept_length``.
- TGI, ``backends/v3/src/backend.rs`` (``send_responses``): histogram ``tgi_request_skipped_tokens`` with
  one observation a_s per step plus one 0 per request for its prefill (count = S + requests, sum = A;
  ``tgi_request_success`` counts the requests); 2.x sets buckets at 0..speculate (``router/src/server.rs``),
  which give the per-position counts, 3.x exports a summary without them; D is not exported.

**Queue gauges** (requests the server is running and requests waiting for a place in its batch), read
into :attr:`Reading.queue` and summed over series (engines, data-parallel ranks): vLLM's
``vllm:num_requests_running`` / ``vllm:num_requests_waiting`` (``vllm/v1/metrics/loggers.py``; also served
by ``specmeter serve``, ``server/prom.py``), llama.cpp's ``llamacpp:requests_processing`` /
``llamacpp:requests_deferred`` (the /metrics list beside the spec counters; help texts fixed in llama.cpp
commit a2df278, "server : update help metrics processing/deferred"), SGLang's ``sglang:num_running_reqs`` /
``sglang:num_queue_reqs`` (``python/sglang/srt/metrics/collector.py``) and TGI's
``tgi_batch_current_size`` / ``tgi_queue_size`` (``backends/v3/src/backend.rs`` and ``queue.rs``, where
``tgi_queue_size`` is set to the queue's length at every batch). TensorRT-LLM's are not read.

**Per-request reports** in response bodies or stream chunks (:func:`request_report`), used by ``load``:
vLLM's ``metrics.speculative_decoding`` (``--per-request-spec-decode-metrics``), llama.cpp's ``timings``
(``draft_n``, ``draft_n_accepted``) and SGLang's ``meta_info`` (read by :func:`sglang_meta`, the one reader
of its spellings, which ``monitor --requests`` uses too). SGLang's OpenAI-compatible endpoints do not put
``meta_info`` in a stream (see :func:`sglang_meta`), so ``load`` sees it only behind a gateway or build
that adds it.

A :class:`Reading` keeps every counter *per series* (label set, one per engine), so that
:func:`counter_delta` can detect a reset (a restarted engine: one of its counters went down, or the
process start time changed) engine by engine before summing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # annotations only: the CLI imports this module for its option lists, without httpx
    from specmeter.monitoring.promtext import LabelKey, MetricsSnapshot

__all__ = [
    "ACCEPTED",
    "DRAFTS",
    "DRAFT_TOKENS",
    "GENERATION_TOKENS",
    "KINDS",
    "NO_STEPS_PER_REQUEST",
    "PROMPT_TOKENS",
    "QUEUE_RUNNING",
    "QUEUE_WAITING",
    "REQUESTS_DONE",
    "SERVER_CHOICES",
    "CounterDelta",
    "Reading",
    "ServerKind",
    "SglangMeta",
    "counter_delta",
    "counter_names",
    "detect_kind",
    "kind_from_option",
    "position_key",
    "queue_names",
    "read_counters",
    "read_queue",
    "request_report",
    "sglang_meta",
    "unavailable_metrics",
]

ServerKind = Literal["vllm", "sglang", "tgi", "llamacpp", "trtllm", "unknown"]
KINDS: tuple[ServerKind, ...] = ("vllm", "sglang", "tgi", "llamacpp", "trtllm", "unknown")
# What --server accepts on the command line: a kind, "auto" (detect) or "specmeter" (serves vLLM's names).
SERVER_CHOICES: tuple[str, ...] = ("auto", "specmeter", *KINDS)

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
    DRAFTS: "llamacpp:spec_decode_num_drafts_total",
    DRAFT_TOKENS: "llamacpp:spec_decode_num_draft_tokens_total",
    ACCEPTED: "llamacpp:spec_decode_num_accepted_tokens_total",
    GENERATION_TOKENS: "llamacpp:tokens_predicted_total",
    PROMPT_TOKENS: "llamacpp:prompt_tokens_total",
}
LLAMACPP_PER_POS = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
# Names exported by llama.cpp forks before upstream's spec_decode_* counters (D and A only, no steps).
_LLAMACPP_FORK = {
    DRAFT_TOKENS: ("llamacpp:n_drafted_total",),
    ACCEPTED: ("llamacpp:n_drafted_accepted_total", "llamacpp:n_accepted_total"),
}
_TRTLLM = {
    DRAFT_TOKENS: "trtllm_spec_decode_num_draft_tokens_total",
    ACCEPTED: "trtllm_spec_decode_num_accepted_tokens_total",
    GENERATION_TOKENS: "trtllm_generation_tokens_total",
    PROMPT_TOKENS: "trtllm_prompt_tokens_total",
}
TRTLLM_DRAFTED_PER_POS = "trtllm_spec_decode_drafted_tokens_total"
TRTLLM_ACCEPTED_PER_POS = "trtllm_spec_decode_accepted_tokens_total"
TRTLLM_TAU = "trtllm_spec_decode_acceptance_length"
TGI_SKIPPED = "tgi_request_skipped_tokens"

QUEUE_RUNNING = "running"  # requests in the server's running batch
QUEUE_WAITING = "waiting"  # requests queued for a place in it
_QUEUE: dict[str, dict[str, str]] = {
    "vllm": {QUEUE_RUNNING: "vllm:num_requests_running", QUEUE_WAITING: "vllm:num_requests_waiting"},
    "llamacpp": {QUEUE_RUNNING: "llamacpp:requests_processing", QUEUE_WAITING: "llamacpp:requests_deferred"},
    "sglang": {QUEUE_RUNNING: "sglang:num_running_reqs", QUEUE_WAITING: "sglang:num_queue_reqs"},
    "tgi": {QUEUE_RUNNING: "tgi_batch_current_size", QUEUE_WAITING: "tgi_queue_size"},
}

_PER_STEP_TOTALS = "per-request spread (counters give totals, so no confidence intervals)"
# What each kind cannot provide, in plain sentences (shown in `load` results and the monitor).
_UNAVAILABLE: dict[str, tuple[str, ...]] = {
    "vllm": (
        _PER_STEP_TOTALS,
        "β unless every draft had k tokens (then R = S − accepted at the last position)",
    ),
    "sglang": (
        "drafted/accepted counts and per-position acceptance in /metrics (SGLang exports gauges only; "
        "its per-request meta_info has the counts, but its OpenAI-compatible streams never carry it)",
        "windowed α/τ: sglang:spec_accept_* describe the last batch at scrape time, not the window",
        "α before the SGLang version that added sglang:spec_accept_rate",
    ),
    "tgi": (
        "drafted tokens: D, α and β are estimated assuming every draft had k tokens",
        "exact S while requests are in flight: the prefill observations are removed per finished request",
        "per-position acceptance when the histogram is exported without integer buckets (TGI 3.x)",
    ),
    "llamacpp": (
        _PER_STEP_TOTALS,
        "steps, τ and per-position on fork builds that export only llamacpp:n_drafted_*",
        "counts of requests still running: llama-server adds a request's counts when it finishes",
    ),
    "trtllm": (
        _PER_STEP_TOTALS,
        "steps, τ and per-position unless the per-request token_position counters are exported "
        "(then only for finished requests; otherwise τ is the last iteration's gauge)",
    ),
    "unknown": ("all acceptance figures: no known speculative-decoding metrics in /metrics",),
}


def counter_names(kind: str) -> Mapping[str, str]:
    """specmeter's counter name → the server's metric name, for kinds that export counters (vLLM, llama.cpp);
    what ``monitor --prometheus`` asks Prometheus for. Per-position counts: ``VLLM_PER_POS``."""
    return dict({"vllm": _VLLM, "llamacpp": _LLAMACPP}.get(kind, {}))


# What per-request reports without steps (llama.cpp's timings) cannot give.
NO_STEPS_PER_REQUEST = (
    "steps, hence τ and per-position acceptance (the per-request reports carry drafted and accepted totals)"
)


def queue_names(kind: str) -> Mapping[str, str]:
    """``{"running": metric, "waiting": metric}`` of the queue gauges a server kind exports; {} if none."""
    return dict(_QUEUE.get(kind, {}))


def unavailable_metrics(kind: str) -> tuple[str, ...]:
    return _UNAVAILABLE.get(kind, _UNAVAILABLE["unknown"])


def kind_from_option(value: str) -> ServerKind | None:
    """``--server`` → the kind to read as (None = detect); the value is one of :data:`SERVER_CHOICES`."""
    if value == "auto":
        return None
    return "vllm" if value == "specmeter" else value  # type: ignore[return-value]


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
    queue: Mapping[str, float] = field(default_factory=dict)  # QUEUE_RUNNING / QUEUE_WAITING, summed

    @property
    def has_spec(self) -> bool:
        """Whether this scrape carries any speculative-decoding figure at all."""
        spec = (DRAFTS, DRAFT_TOKENS, ACCEPTED)
        return any(self.counters.get(n) for n in spec) or any(
            g in self.gauges for g in (TAU_GAUGE, ALPHA_GAUGE, TAU_SERVER_INFO)
        )


_PREFIXES: tuple[tuple[str, ServerKind], ...] = (
    ("vllm:", "vllm"),
    ("sglang:", "sglang"),
    ("tgi_", "tgi"),
    ("llamacpp:", "llamacpp"),
    ("trtllm_", "trtllm"),
)


def detect_kind(snapshot: MetricsSnapshot) -> ServerKind:
    """Guess the server kind from metric-name prefixes (vLLM-named metrics win: specmeter serve uses them)."""
    for prefix, kind in _PREFIXES:
        if snapshot.has_prefix(prefix):
            return kind
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


def _sum_gauge(snapshot: MetricsSnapshot, name: str) -> float | None:
    values = [v for v in snapshot.series(name).values() if not math.isnan(v)]
    return sum(values) if values else None


def read_queue(snapshot: MetricsSnapshot, kind: str) -> dict[str, float]:
    """The queue gauges of one scrape, each summed over its series (one per engine or rank)."""
    out: dict[str, float] = {}
    for canon, name in _QUEUE.get(kind, {}).items():
        value = _sum_gauge(snapshot, name)
        if value is not None:
            out[canon] = value
    return out


def _by_position(snapshot: MetricsSnapshot, name: str, label: str) -> dict[int, dict[LabelKey, float]]:
    """``{i: {series without the position label: value}}`` of a counter vector labelled by position."""
    names = {name, name[: -len("_total")]} if name.endswith("_total") else {name}
    out: dict[int, dict[LabelKey, float]] = {}
    for s in snapshot.samples:
        if s.name in names and not math.isnan(s.value):
            pos = s.label(label)
            if pos is not None and pos.isdigit():
                key = tuple(kv for kv in s.labels if kv[0] != label)
                out.setdefault(int(pos), {})[key] = s.value
    return out


def _with_positions(
    counters: dict[str, dict[LabelKey, float]], per_pos: Mapping[int, dict[LabelKey, float]]
) -> int:
    """Store per-position series under :func:`position_key`; returns k (positions 0..k−1)."""
    for i, series in per_pos.items():
        counters[position_key(i)] = series
    return max(per_pos) + 1 if per_pos else 0


def _vllm(snapshot: MetricsSnapshot) -> tuple[dict[str, dict[LabelKey, float]], int]:
    counters = {canon: _series(snapshot, name) for canon, name in _VLLM.items()}
    return counters, _with_positions(counters, _by_position(snapshot, VLLM_PER_POS, "position"))


def _llamacpp(snapshot: MetricsSnapshot) -> tuple[dict[str, dict[LabelKey, float]], int]:
    counters = {canon: _series(snapshot, name) for canon, name in _LLAMACPP.items()}
    for canon, names in _LLAMACPP_FORK.items():
        for name in names:
            if not counters[canon]:
                counters[canon] = _series(snapshot, name)
    return counters, _with_positions(counters, _by_position(snapshot, LLAMACPP_PER_POS, "position"))


def _sum_by_series(per_pos: Mapping[int, Mapping[LabelKey, float]]) -> dict[LabelKey, float]:
    total: dict[LabelKey, float] = {}
    for series in per_pos.values():
        for key, value in series.items():
            total[key] = total.get(key, 0.0) + value
    return total


def _trtllm(snapshot: MetricsSnapshot) -> tuple[dict[str, dict[LabelKey, float]], int]:
    counters = {canon: _series(snapshot, name) for canon, name in _TRTLLM.items()}
    drafted = _by_position(snapshot, TRTLLM_DRAFTED_PER_POS, "token_position")
    accepted = _by_position(snapshot, TRTLLM_ACCEPTED_PER_POS, "token_position")
    if 0 not in drafted:
        return counters, 0
    # One consistent set, from finished requests: a step drafts position 0 whenever it drafts at all.
    # TensorRT-LLM creates a position's accepted series on its first acceptance; absent means 0 so far.
    k = max(drafted) + 1
    for i in range(k):
        accepted.setdefault(i, {key: 0.0 for key in drafted[0]})
    counters[DRAFTS] = dict(drafted[0])
    counters[DRAFT_TOKENS] = _sum_by_series(drafted)
    counters[ACCEPTED] = _sum_by_series({i: accepted[i] for i in range(k)})
    return counters, _with_positions(counters, {i: accepted[i] for i in range(k)})


def _tgi(snapshot: MetricsSnapshot) -> tuple[dict[str, dict[LabelKey, float]], int]:
    counters = {
        DRAFTS: snapshot.series(TGI_SKIPPED + "_count"),  # S + one prefill observation per request
        REQUESTS_DONE: _series(snapshot, "tgi_request_success"),
        ACCEPTED: snapshot.series(TGI_SKIPPED + "_sum"),
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
    elif kind == "llamacpp":
        counters, positions = _llamacpp(snapshot)
    elif kind == "trtllm":
        counters, positions = _trtllm(snapshot)
        tau = _mean_gauge(snapshot, TRTLLM_TAU)
        if tau is not None and DRAFTS not in counters:
            gauges[TAU_GAUGE] = tau
    elif kind == "sglang":
        counters = {canon: _series(snapshot, name) for canon, name in _SGLANG.items()}
        for gauge, name in (
            (TAU_GAUGE, "sglang:spec_accept_length"),
            (ALPHA_GAUGE, "sglang:spec_accept_rate"),
        ):
            value = _mean_gauge(snapshot, name)
            if value is not None:
                gauges[gauge] = value
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
        queue=read_queue(snapshot, kind),
    )


@dataclass(frozen=True)
class CounterDelta:
    """Counter increases between two readings, summed over engines, with resets detected per engine."""

    values: Mapping[str, float]
    resets: tuple[str, ...]
    seconds: float

    def get(self, name: str) -> float | None:
        """The increase of ``name``; None when absent or not a finite number (a server's ``+Inf`` or
        ``NaN`` counter, or 1e308 − (−1e308)): nothing can be computed from it, so it is missing."""
        value = self.values.get(name)
        return value if value is None or math.isfinite(value) else None


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


# ------------------------------------------------------------------------------------ per-request reports


def _nonneg_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


# SGLang's spellings of its per-request counts, oldest first. ``tokenizer_manager.py``
# ``_calculate_spec_decoding_metrics`` (commit c60799d) writes ``spec_accept_token_num`` /
# ``spec_draft_token_num``; ``managers/tokenizer_manager_components/spec_decoding_meta.py``
# (``fill_spec_decoding_meta``, commit 9155cf0) ``spec_accepted_drafts`` / ``spec_proposed_drafts``; later
# releases ``spec_num_correct_drafts`` / ``spec_num_proposed_drafts`` (with the previous names as aliases)
# and the histogram as ``spec_correct_drafts_histogram``.
SGLANG_ACCEPTED = ("spec_accept_token_num", "spec_accepted_drafts", "spec_num_correct_drafts")
SGLANG_DRAFTED = ("spec_draft_token_num", "spec_proposed_drafts", "spec_num_proposed_drafts")
SGLANG_HISTOGRAM = ("spec_accept_histogram", "spec_correct_drafts_histogram")


@dataclass(frozen=True)
class SglangMeta:
    """The speculative-decoding fields of one SGLang ``meta_info``, raw (as the server wrote them).

    ``steps`` S (``spec_verify_ct``), ``accepted`` A and ``drafted`` D (whichever spelling is present),
    ``histogram`` (steps that accepted exactly j drafts), SGLang's own ``accept_rate`` (A / D) and
    ``accept_length`` (completion tokens / S: the prefill's token included), ``tokens`` and ``latency_s``.
    Values are not checked here; each reader judges them (``request_report`` drops what is not a count,
    ``monitor --requests`` names the bad field).
    """

    steps: object = None
    accepted: object = None
    drafted: object = None
    histogram: object = None
    accept_rate: object = None
    accept_length: object = None
    tokens: object = None
    latency_s: object = None
    accepted_field: str = SGLANG_ACCEPTED[0]
    drafted_field: str = SGLANG_DRAFTED[0]


def _first_field(meta: Mapping[str, Any], names: tuple[str, ...]) -> tuple[str, object]:
    for name in names:
        if meta.get(name) is not None:
            return name, meta[name]
    return names[0], None


def sglang_meta(meta: object) -> SglangMeta | None:
    """SGLang's per-request ``meta_info`` → :class:`SglangMeta`; None when it has no ``spec_verify_ct``.

    The one reader of SGLang's spellings (``SGLANG_ACCEPTED``, ``SGLANG_DRAFTED``, ``SGLANG_HISTOGRAM``),
    for ``load`` (:func:`request_report`) and ``monitor --requests`` (``requestlog``) alike.

    Where ``meta_info`` reaches a client: every response and stream chunk of the native ``/generate``.
    The OpenAI-compatible routes (``python/sglang/srt/entrypoints/openai/serving_chat.py``, commit
    002897c; ``serving_completions.py``, commit 004c82e): ``/v1/chat/completions`` puts it in
    ``choices[i].meta_info`` of a *non-streamed* response when the request sets ``return_meta_info``, and
    refuses a streamed request that sets it ("return_meta_info is not supported with streaming",
    ``_convert_to_internal_request``); ``/v1/completions`` has no such field. A streamed OpenAI request,
    which is what ``load`` sends, never carries it — so ``load`` does not ask for it.
    """
    if not isinstance(meta, Mapping) or "spec_verify_ct" not in meta:
        return None
    accepted_field, accepted = _first_field(meta, SGLANG_ACCEPTED)
    drafted_field, drafted = _first_field(meta, SGLANG_DRAFTED)
    return SglangMeta(
        steps=meta.get("spec_verify_ct"),
        accepted=accepted,
        drafted=drafted,
        histogram=_first_field(meta, SGLANG_HISTOGRAM)[1],
        accept_rate=meta.get("spec_accept_rate"),
        accept_length=meta.get("spec_accept_length"),
        tokens=meta.get("completion_tokens"),
        latency_s=meta.get("e2e_latency"),
        accepted_field=accepted_field,
        drafted_field=drafted_field,
    )


def _finite(value: object) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None  # type: ignore[arg-type]


def _sglang_rates(meta: SglangMeta, steps: int) -> dict[str, Any] | None:
    """A report from SGLang's own ``spec_accept_rate`` / ``spec_accept_length`` when the counts are absent.

    SGLang computes both from counts it did not send: rate = A / (S × (num_draft_tokens − 1)), every step
    counted as a full draft; length = completion tokens / S, which counts the prefill's token as well, so
    A = S × length − S − 1 when no step was cut short (an EOS or max_tokens inside a step drops its later
    accepted tokens from the completion) and τ = 1 + A/S = length − 1/S. The versions that set defaults
    before the counts (rate 0.0, length 0, ``_calculate_spec_decoding_metrics`` of commit c60799d) leave
    exactly those when nothing was counted: a length below 1 is not a measurement (every step emits at
    least one token), so it gives no report, and a rate beside it none either.
    """
    rate, length = _finite(meta.accept_rate), _finite(meta.accept_length)
    if length is not None and length < 1.0:
        return None
    if rate is not None and not 0.0 <= rate <= 1.0:
        rate = None
    if rate is None and length is None:
        return None
    report: dict[str, Any] = {"engine": "sglang", "num_spec_steps": steps, "derived_from_rates": True}
    if rate is not None:
        report["sglang_accept_rate"] = rate
    if length is not None:
        report["sglang_accept_length"] = length
    return report


def _sglang_report(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """SGLang's per-request ``meta_info`` in vLLM's vocabulary (see :func:`request_report`).

    The counts (any spelling of :func:`sglang_meta`): S = ``spec_verify_ct``, A, D (computed by SGLang as
    S × (``--speculative-num-draft-tokens`` − 1), i.e. every step counted as a full draft) and, where the
    version has it, the histogram (steps that accepted exactly j drafts). τ is recomputed from the counts,
    never taken from ``spec_accept_length`` (completion tokens / S, the prefill's token included, so 1/S
    above 1 + A/S). Without the counts, SGLang's own rate and length give a report marked
    ``derived_from_rates`` (:func:`_sglang_rates`).
    """
    fields = sglang_meta(meta)
    if fields is None:
        return None
    steps = _nonneg_int(fields.steps)
    accepted, drafted = _nonneg_int(fields.accepted), _nonneg_int(fields.drafted)
    if steps is None:
        return None
    if steps > 0 and (accepted is None or drafted is None):
        if fields.accepted is not None or fields.drafted is not None:
            return None  # a count is there but malformed: trust nothing else beside it
        return _sglang_rates(fields, steps)
    report: dict[str, Any] = {
        "engine": "sglang",
        "num_spec_steps": steps,
        "num_draft_tokens": drafted or 0,
        "num_accepted_draft_tokens": accepted or 0,
    }
    hist = fields.histogram
    if isinstance(hist, list) and all(_nonneg_int(c) is not None for c in hist):
        report["acceptance_histogram"] = list(hist)
    if steps and drafted is not None and drafted % steps == 0:
        report["num_spec_tokens"] = drafted // steps
    return report


def request_report(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The per-request speculative-decoding report one response body or stream chunk carries, or None.

    Returned in the vocabulary ``monitoring.acceptance`` reads:

    - vLLM ``metrics.speculative_decoding`` (``--per-request-spec-decode-metrics summary|detailed``,
      ``vllm/v1/metrics/stats.py`` ``RequestSpecDecodeMetrics.to_dict``; in a stream it rides the final
      usage chunk): unchanged — ``num_spec_steps``, ``num_draft_tokens``, ``num_accepted_draft_tokens``,
      ``acceptance_histogram`` (index j = steps that accepted exactly j drafts), ``num_spec_tokens`` (k) and,
      at ``detailed``, ``per_step_accepted`` / ``per_step_drafted`` (one entry per verification step).
    - llama.cpp ``timings`` (``tools/server/server-common.cpp``, ``server_slot_stats::to_json``: present once
      a request drafted; with ``timings_per_token`` on every chunk, running totals): unchanged —
      ``draft_n``, ``draft_n_accepted``; no steps.
    - SGLang ``meta_info`` (top level, or in a choice): translated by :func:`_sglang_report`, with
      ``"engine": "sglang"``.
    """
    metrics = obj.get("metrics")
    if isinstance(metrics, Mapping) and isinstance(metrics.get("speculative_decoding"), Mapping):
        return metrics["speculative_decoding"]  # type: ignore[no-any-return]
    timings = obj.get("timings")
    if isinstance(timings, Mapping) and "draft_n" in timings:
        return timings
    metas = [obj.get("meta_info")]
    choices = obj.get("choices")
    if isinstance(choices, list):
        metas += [c.get("meta_info") for c in choices if isinstance(c, Mapping)]
    for meta in metas:
        if isinstance(meta, Mapping) and (report := _sglang_report(meta)) is not None:
            return report
    return None
