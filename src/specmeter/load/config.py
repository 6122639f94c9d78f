"""What a ``load`` run is asked to do: the configuration, the load levels and the endpoints under test.

Plain data, no I/O. The load path reads it in one direction (docs/serving.md, "Shape of the load path"):
``arrivals`` (when requests are sent) → ``load.requests`` (what is sent) → ``load.loop`` (sending them and
recording what comes back) → ``load.readings`` (what the server's own /metrics said around it) →
``load.level`` (one level, both endpoints interleaved) → ``load.result`` (the level's summary).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from specmeter.load import limits
from specmeter.load.limits import MAX_SECONDS
from specmeter.metrics.acceptance import K_MAX_LIMIT

if TYPE_CHECKING:  # types only: the CLI reads the defaults at start-up without loading the workload code
    from specmeter.load.trace import TraceEntry
    from specmeter.metrics.slo import SLO
    from specmeter.monitoring.adapters import ServerKind
    from specmeter.workloads.loader import Prompt

__all__ = [
    "CLIENT_BUSY",
    "MAX_CLIENT_PROCESSES",
    "MAX_SECONDS",
    "STREAMS_PER_CLIENT_PROCESS",
    "WARMUP_UNKNOWN_LATENCY",
    "Api",
    "Arrival",
    "ChunkCounts",
    "Endpoint",
    "LoadConfig",
    "LoadConfigError",
    "LoadError",
    "Phase",
    "Role",
    "in_range",
    "levels_echo",
]

Role = Literal["speculative", "baseline"]
Arrival = Literal["poisson", "constant", "gamma"]
ChunkCounts = Literal["auto", "usage", "token_ids", "timings", "none"]
Api = Literal["auto", "completions", "chat", "messages"]

WARMUP_UNKNOWN_LATENCY = 4  # a rate level's warm-up when no request of the endpoint has completed yet
MAX_CLIENT_PROCESSES = 64  # --client-processes: worker processes reading the streams (loadworkers)
# --client-processes auto: one process reads up to this many streams in flight; more take more processes,
# at most one per core (docs/serving.md, "Benchmark": the TTFT error against the streams one process reads).
STREAMS_PER_CLIENT_PROCESS = 32
CLIENT_BUSY = 0.9  # a client process busier than this share of a core during a level: the client was the
# bottleneck, and the level's figures may be its own (load.result warns)


class LoadError(RuntimeError):
    """A problem that stops the run before it measures anything (unreachable endpoint, no model)."""


class LoadConfigError(LoadError, ValueError):
    """A ``LoadConfig`` field out of its range; the message names the command-line option it comes from."""


def _in(
    option: str,
    value: float | None,
    low: float,
    high: float | None = None,
    open_low: bool = False,
    why: str = "",
) -> None:
    """``value`` is None or a finite number in [low, high] ((low, high] with ``open_low``), else one line
    (``why`` says where the bound comes from)."""
    if value is None:
        return
    above = value > low if open_low else value >= low
    finite = isinstance(value, int) or math.isfinite(value)  # an int is; math would overflow on a huge one
    if not (finite and above and (high is None or value <= high)):
        if high is None:  # worded as the CLI's ``check_range``: ``--warmup must be >= 0, got -1``
            wanted = f"{'>' if open_low else '>='} {_num(low)}"
        else:
            wanted = f"in {'(' if open_low else '['}{_num(low)}, {_num(high)}]"
        if not isinstance(value, int):
            shown = f"{value:g}"
        elif value.bit_length() < 128:
            shown = str(value)
        else:
            shown = f"an integer of {int(value.bit_length() * math.log10(2)) + 1} digits"
        raise LoadConfigError(f"{option} must be {wanted}, got {shown}" + (f" ({why})" if why else ""))


in_range = _in  # sweep.config checks its own fields with the same wording


def _num(bound: float) -> str:
    """A bound as people write it: 1000000 rather than 1e+06, 1.65344e-06 as such."""
    return str(int(bound)) if float(bound).is_integer() and abs(bound) < 1e15 else f"{bound:g}"


def check_concurrency(option: str, value: float | None) -> None:
    """A concurrency this machine can hold (``load.limits.stream_bound``: open files, memory, ports)."""
    if value is not None:
        _in(option, value, 1)  # a cheap first check: nan, 0, negative
        bound = limits.stream_bound()
        _in(option, value, 1, bound.streams, why=bound.reason)


def check_rate(option: str, value: float | None) -> None:
    """A request rate within [``MIN_RATE``, ``MAX_RATE``] (``load.limits``)."""
    _in(option, value, limits.MIN_RATE, limits.MAX_RATE,
        why=f"requests per second: a mean gap of at most a week, at most {limits.MAX_RATE:g}/s")  # fmt: skip


def _one_of(option: str, value: str, kinds: Any) -> None:
    if value not in get_args(kinds):
        raise LoadConfigError(f"{option}: {value!r} is not one of {', '.join(get_args(kinds))}")


@dataclass
class Endpoint:
    """One server under test; ``load.readings.resolve`` fills in ``model``, ``kind`` and ``positions``."""

    role: Role
    url: str  # base URL, without /v1
    metrics: str | None  # /metrics URL, None = do not scrape
    model: str | None = None
    kind: ServerKind = "unknown"
    positions: int = 0  # draft positions the server's metrics reveal (k), 0 = unknown
    metrics_note: str | None = None  # why server metrics are missing, if they are

    @staticmethod
    def base(url: str) -> str:
        url = url.rstrip("/")
        return url[: -len("/v1")] if url.endswith("/v1") else url


@dataclass(frozen=True)
class Phase:
    """One load level: a fixed concurrency (closed loop) or a fixed request rate (open loop)."""

    concurrency: int | None = None
    rate: float | None = None
    trace: bool = False  # open loop at the trace's own times (LoadConfig.trace)

    @property
    def label(self) -> str:
        if self.trace:
            return "trace"
        return f"c={self.concurrency}" if self.concurrency is not None else f"rate={self.rate:g}/s"


@dataclass
class LoadConfig:
    endpoint: str
    prompts: Sequence[Prompt]
    baseline: str | None = None
    phases: Sequence[Phase] = (Phase(concurrency=1),)
    arrival: Arrival = "poisson"
    burstiness: float = 1.0  # gamma arrivals: shape B (1 = Poisson, < 1 bursty)
    trace: Sequence[TraceEntry] | None = None  # --trace: arrival times, lengths, prompts (load.trace)
    trace_speed: float = 1.0  # replay the trace this many times faster
    temperatures: Sequence[float] = ()  # several: request i uses temperatures[i % n] (else `temperature`)
    limit: int | None = None  # requests per phase and endpoint (default: one pass over the prompts)
    duration: float | None = None  # seconds per phase and endpoint, instead of a request count
    warmup: int = 2  # unrecorded requests per endpoint (server), once, before the first level
    warmup_per_level: int | None = None  # unrecorded requests before each level; None: fill it once
    max_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0  # Poisson arrivals; request i carries seed + i only with request_seeds
    request_seeds: bool = False
    chunk_counts: ChunkCounts = "auto"  # the per-chunk token count asked of the server (loadrequests)
    domain_metadata: bool = True  # OpenAI APIs: each request's golden-set category as metadata.domain
    api: Api = "auto"  # messages: Anthropic's /v1/messages
    model: str | None = None
    baseline_model: str | None = None
    api_key: str | None = None
    k: int | None = None
    server_kind: ServerKind | None = None  # None: detect from /metrics
    metrics_url: str | None = None
    baseline_metrics_url: str | None = None
    scrape_metrics: bool = True
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    stall_timeout: float = 60.0
    request_timeout: float | None = None
    # Processes that read the streams (loadworkers): 1 = in-process, N > 1 = N worker processes, "auto" =
    # from the levels' streams and the cores (client_process_count); the CLI may pass the text it was given.
    client_processes: int | Literal["auto"] = "auto"
    blocks: int | None = None  # alternation blocks per phase; None = automatic
    slo: SLO | None = None  # --slo: every level's requests judged against it (metrics.slo)

    def __post_init__(self) -> None:
        """Every number and choice checked once, for library callers as for the CLI (which checks the same
        options first, with the same ranges, to name them before it reads any file): ``LoadConfigError``."""
        if not self.phases:
            raise LoadConfigError("--concurrency/--rate: no load level given")
        for phase in self.phases:
            if (phase.concurrency is None) == (phase.rate is None) and not phase.trace:
                raise LoadConfigError("a load level is either a --concurrency or a --rate")
            check_concurrency("--concurrency", phase.concurrency)
            check_rate("--rate", phase.rate)
        if self.limit is not None and self.duration is not None:
            raise LoadConfigError("--limit and --duration both bound a level; give one of them")
        requests = "requests per level and endpoint, each record kept in memory"
        _in("--limit", self.limit, 1, limits.MAX_REQUESTS, why=requests)
        _in("--duration", self.duration, 0, MAX_SECONDS, open_low=True, why="seconds: a week")
        _in("--warmup", self.warmup, 0, limits.MAX_REQUESTS, why=requests)
        _in("--warmup-per-level", self.warmup_per_level, 0, limits.MAX_REQUESTS, why=requests)
        _in("--max-tokens", self.max_tokens, 1)
        for t in (self.temperature, *self.temperatures):
            _in("--temperature", t, 0, 2)
        _in("--top-p", self.top_p, 0, 1, open_low=True)
        _in("--burstiness", self.burstiness, 0, open_low=True)
        _in("--trace-speed", self.trace_speed, limits.MIN_TRACE_SPEED, limits.MAX_TRACE_SPEED)
        if self.trace:
            span = max(e.t for e in self.trace) / self.trace_speed
            if span > MAX_SECONDS:
                raise LoadConfigError(
                    f"--trace-speed {self.trace_speed:g}: the trace would take {span:.3g} s to replay, more "
                    f"than a week ({MAX_SECONDS:g} s); replay it faster"
                )
        _in("--stall-timeout", self.stall_timeout, 0, MAX_SECONDS, open_low=True)
        _in("--request-timeout", self.request_timeout, 0, MAX_SECONDS, open_low=True)
        self.client_processes = _client_processes(self.client_processes)
        _in("--k", self.k, 1, K_MAX_LIMIT)
        _in("--blocks", self.blocks, 1, limits.MAX_BLOCKS)
        from specmeter.load.client import encode_body  # here: the CLI reads defaults without httpx

        try:  # what every request carries must be sendable: JSON, and UTF-8 (no lone surrogate)
            encode_body(self.extra_body)
        except ValueError as e:
            raise LoadConfigError(f"--extra-body: {e}") from None
        _one_of("--arrival", self.arrival, Arrival)
        _one_of("--chunk-counts", self.chunk_counts, ChunkCounts)
        _one_of("--api", self.api, Api)
        if self.api == "messages" and any(t > 1.0 for t in (self.temperature, *self.temperatures)):
            hottest = max((self.temperature, *self.temperatures))
            raise LoadConfigError(f"--temperature: the Messages API takes 0 to 1, got {hottest:g}")

    def echo(self, *, prompts: str, trace: str | None = None, server: str = "auto") -> dict[str, Any]:
        """The settings as the result file's ``run.config`` records them; ``prompts``, ``trace`` and
        ``server`` are what the caller read the golden set, the trace and the server kind from."""
        rates = any(p.rate is not None for p in self.phases)
        traced = any(p.trace for p in self.phases)
        return {
            "endpoint": self.endpoint,
            "baseline": self.baseline,
            "prompts": prompts,
            **levels_echo(self.phases),
            "arrival": self.arrival if rates else None,
            "burstiness": self.burstiness if rates and self.arrival == "gamma" else None,
            "trace": trace,
            "trace_speed": self.trace_speed if traced else None,
            "limit": self.limit,
            "duration": self.duration,
            "warmup": self.warmup,
            "warmup_per_level": self.warmup_per_level,
            "max_tokens": self.max_tokens,
            "temperature": list(self.temperatures) if self.temperatures else self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "request_seeds": self.request_seeds,
            "chunk_counts": self.chunk_counts,
            "domain_metadata": self.domain_metadata,
            "api": self.api,
            "model": self.model,
            "baseline_model": self.baseline_model,
            "k": self.k,
            "server": server,
            "blocks": self.blocks,
            "slo": self.slo.text() if self.slo is not None else None,
            "client_processes": self.client_processes,
            "extra_body": dict(self.extra_body) or None,
        }

    def peak_streams(self) -> int:
        """The most requests any level can have in flight at once: a concurrency (at most the level's
        requests), or an open-loop level's request count (``--duration``: rate × duration), at least 1."""
        size = self.level_size()
        peak = 1
        for phase in self.phases:
            if phase.concurrency is not None:
                streams = phase.concurrency if size is None else min(phase.concurrency, size)
            elif size is not None:
                streams = size
            else:
                rate = self.offered_rate(phase)
                streams = math.ceil(rate * (self.duration or 0.0)) if rate is not None else size or 1
            peak = max(peak, streams)
        return peak

    def client_process_count(self, cores: int, streams: int | None = None) -> int:
        """How many processes read the streams: ``--client-processes N`` as given; ``auto``: one per
        :data:`STREAMS_PER_CLIENT_PROCESS` streams of the busiest level (``peak_streams``, or ``streams``
        when more: a sweep's search may go beyond the levels), at most one per core of the ``cores`` this
        process may run on, at least 1 (1 = in-process, no worker started)."""
        if self.client_processes != "auto":
            return int(self.client_processes)
        wanted = math.ceil(max(self.peak_streams(), streams or 0) / STREAMS_PER_CLIENT_PROCESS)
        return max(1, min(wanted, cores, MAX_CLIENT_PROCESSES))

    def level_size(self) -> int | None:
        """Requests per level and endpoint; None when a level is bounded by ``--duration``."""
        if self.duration is not None:
            return None
        return self.limit or len(self.trace if self.trace is not None else self.prompts)

    def offered_rate(self, phase: Phase) -> float | None:
        """An open-loop level's requests per second: ``--rate``, or a trace's mean rate (× ``--trace-speed``);
        None for a concurrency level or a trace whose requests all start at once."""
        if phase.rate is not None:
            return phase.rate
        if phase.trace and self.trace is not None and len(self.trace) > 1:
            span = max(e.t for e in self.trace) - min(e.t for e in self.trace)
            return (len(self.trace) - 1) / span * self.trace_speed if span > 0 else None
        return None

    def level_warmup(self, phase: Phase, latency_s: float | None = None) -> int:
        """Unrecorded warm-up requests sent to an endpoint at ``phase``'s load just before the level
        (docs/serving.md, "Warm-up per level").

        ``--warmup-per-level N`` when given (0: none), as given. By default enough to fill the level once:
        at a concurrency, one request per concurrent stream; at a rate (a trace: its mean rate), rate × the
        endpoint's latency ``latency_s`` rounded up — the requests in flight once the level is steady
        (Little's law), ``latency_s`` being the median of the endpoint's latest completed requests —, at least
        1, and :data:`WARMUP_UNKNOWN_LATENCY` while none has completed. Never more than the level itself
        sends: its request count, or with ``--duration`` rate × duration.
        """
        if self.warmup_per_level is not None:
            return self.warmup_per_level
        rate = self.offered_rate(phase)
        cap = self.level_size()
        if cap is None and rate is not None and self.duration is not None:
            cap = max(1, math.ceil(rate * self.duration))
        if phase.concurrency is not None:
            n = phase.concurrency
        elif rate is not None and latency_s is not None:
            n = max(1, math.ceil(rate * latency_s))
        else:
            n = WARMUP_UNKNOWN_LATENCY
        return n if cap is None else min(n, cap)

    def temperature_of(self, index: int) -> float:
        """Request ``index``'s temperature: the trace line's, else --temperature's (cycling over a list)."""
        if self.trace is not None:
            t = self.trace[index % len(self.trace)].temperature
            if t is not None:
                return t
        return self.temperatures[index % len(self.temperatures)] if self.temperatures else self.temperature

    @property
    def headers(self) -> dict[str, str] | None:
        if self.api == "messages":
            from specmeter.wire.messages import messages_headers

            return messages_headers(self.api_key)
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else None


def _client_processes(value: object) -> int | Literal["auto"]:
    """``--client-processes``: ``auto`` or a whole number in [1, MAX_CLIENT_PROCESSES] (text as typed)."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return "auto"
        try:
            value = int(text)
        except ValueError:
            raise LoadConfigError(
                f"--client-processes must be auto or a number between 1 and {MAX_CLIENT_PROCESSES}, "
                f"got {value!r}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CLIENT_PROCESSES:
        raise LoadConfigError(f"--client-processes must be auto or between 1 and {MAX_CLIENT_PROCESSES}, "
                              f"got {value}")  # fmt: skip
    return value


def levels_echo(phases: Sequence[Phase]) -> dict[str, Any]:
    """The load levels as a result's run config records them (``load`` and ``sweep`` alike)."""
    return {
        "concurrency": [p.concurrency for p in phases if p.concurrency is not None] or None,
        "rate": [p.rate for p in phases if p.rate is not None] or None,
    }
