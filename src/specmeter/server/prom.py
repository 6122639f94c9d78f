"""``serve``'s Prometheus metrics, named, labelled and typed as vLLM's (v1 engine) so dashboards carry over.

Checked against vLLM's ``vllm/v1/spec_decode/metrics.py`` and ``vllm/v1/metrics/loggers.py`` (see
docs/monitoring.md): counters ``vllm:spec_decode_num_drafts``, ``..._num_draft_tokens``,
``..._num_accepted_tokens`` and ``..._num_accepted_tokens_per_pos`` (extra label ``position`` = 0..k-1),
exposed with the ``_total`` suffix, labelled ``model_name`` and ``engine``; latency histograms with vLLM's
buckets. The spec-decode family exists only when the server speculates, as in vLLM.

vLLM counts one *draft* per request and step in which draft tokens were scheduled, its draft tokens and
the accepted ones, and for each accepted position one step at that position — exactly the steps with
d_s ≥ 1 of a ``StepRecord``, so these counters are S, D, A and the per-position counts of
docs/metrics.md.
"""

from __future__ import annotations

from itertools import pairwise

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from specmeter.server.engine import GenerationResult

__all__ = ["SERVE_METRICS", "ServerMetrics"]

TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
REQUEST_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)

# Metric families as PromQL sees them (counters with their _total suffix); the asset tests use this list.
SERVE_METRICS: tuple[str, ...] = (
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_per_pos_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:time_to_first_token_seconds",
    "vllm:inter_token_latency_seconds",
    "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds",
)

# vLLM's finished_reason values: "stop", "length", "abort".
FINISHED = {"eos": "stop", "length": "length", "interrupted": "abort"}


class ServerMetrics:
    def __init__(self, model_name: str, k: int) -> None:
        self.registry = CollectorRegistry()
        self.k = k
        r, names = self.registry, ["model_name", "engine"]
        labels = (model_name, "0")

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, names, registry=r)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, doc, names, buckets=buckets, registry=r)

        self.prompt_tokens = counter("vllm:prompt_tokens", "Number of prefill tokens processed.").labels(
            *labels
        )
        self.generation_tokens = counter(
            "vllm:generation_tokens", "Number of generation tokens processed."
        ).labels(*labels)
        success = Counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            [*names, "finished_reason"],
            registry=r,
        )
        self.success = {reason: success.labels(*labels, reason) for reason in ("stop", "length", "abort")}
        self.running = Gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches.", names, registry=r
        ).labels(*labels)
        self.waiting = Gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed.", names, registry=r
        ).labels(*labels)
        self.ttft = histogram(
            "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFT_BUCKETS
        ).labels(*labels)
        self.itl = histogram(
            "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", ITL_BUCKETS
        ).labels(*labels)
        self.e2e = histogram(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            REQUEST_BUCKETS,
        ).labels(*labels)
        self.queue = histogram(
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
            REQUEST_BUCKETS,
        ).labels(*labels)
        self.spec = k > 0
        if self.spec:
            self.drafts = counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.").labels(
                *labels
            )
            self.draft_tokens = counter(
                "vllm:spec_decode_num_draft_tokens", "Number of draft tokens."
            ).labels(*labels)
            self.accepted = counter(
                "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."
            ).labels(*labels)
            per_pos = Counter(
                "vllm:spec_decode_num_accepted_tokens_per_pos",
                "Accepted tokens per draft position.",
                [*names, "position"],
                registry=r,
            )
            # Created at start-up so every position exists at 0 before traffic (rate() needs a first sample).
            self.per_pos = [per_pos.labels(*labels, str(i)) for i in range(k)]

    def observe(self, prompt_tokens: int, result: GenerationResult, queued_s: float) -> None:
        """Account one finished (or interrupted) generation; ``queued_s`` = arrival → generation start."""
        self.prompt_tokens.inc(prompt_tokens)
        self.generation_tokens.inc(len(result.output_ids))
        self.success[FINISHED[result.finish_reason]].inc()
        self.queue.observe(queued_s)
        emissions = [e for e in result.emissions if e.tokens > 0]
        if emissions:
            # TTFT from arrival, queueing included, as vLLM measures it.
            self.ttft.observe(queued_s + emissions[0].t)
            for earlier, later in pairwise(emissions):
                self.itl.observe(later.t - earlier.t)
        self.e2e.observe(queued_s + result.latency_s)
        if self.spec:
            for step in result.steps:
                if step.drafted < 1:
                    continue
                self.drafts.inc()
                self.draft_tokens.inc(step.drafted)
                self.accepted.inc(step.accepted)
                for i in range(min(step.accepted, self.k)):
                    self.per_pos[i].inc()

    def observe_abort(self, queued_s: float | None) -> None:
        """Account a request that ended before it started: its client disconnected while it waited
        (``queued_s``), or before it had sent the whole request (None: it never reached the queue)."""
        self.success["abort"].inc()
        if queued_s is not None:
            self.queue.observe(queued_s)

    def text(self) -> bytes:
        return generate_latest(self.registry)
