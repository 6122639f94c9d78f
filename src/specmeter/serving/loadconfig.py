"""What a ``load`` run is asked to do: the configuration, the load levels and the endpoints under test.

Plain data, no I/O. The load path reads it in one direction (docs/serving.md, "Shape of the load path"):
``arrivals`` (when requests are sent) → ``loadrequests`` (what is sent) → ``loadloop`` (sending them and
recording what comes back) → ``loadreadings`` (what the server's own /metrics said around it) →
``loadlevel`` (one level, both endpoints interleaved) → ``loadresult`` (the level's summary).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from specmeter.metrics.slo import SLO
from specmeter.monitoring.adapters import ServerKind
from specmeter.serving.messages_api import messages_headers
from specmeter.serving.trace import TraceEntry
from specmeter.workloads.loader import Prompt

__all__ = ["Arrival", "ChunkCounts", "Endpoint", "LoadConfig", "LoadError", "Phase", "Role"]

Role = Literal["speculative", "baseline"]
Arrival = Literal["poisson", "constant", "gamma"]
ChunkCounts = Literal["auto", "usage", "token_ids", "timings", "none"]


class LoadError(RuntimeError):
    """A problem that stops the run before it measures anything (unreachable endpoint, no model)."""


@dataclass
class Endpoint:
    """One server under test; ``loadreadings.resolve`` fills in ``model``, ``kind`` and ``positions``."""

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
    trace: Sequence[TraceEntry] | None = None  # --trace: arrival times, lengths, prompts (serving.trace)
    trace_speed: float = 1.0  # replay the trace this many times faster
    temperatures: Sequence[float] = ()  # several: request i uses temperatures[i % n] (else `temperature`)
    limit: int | None = None  # requests per phase and endpoint (default: one pass over the prompts)
    duration: float | None = None  # seconds per phase and endpoint, instead of a request count
    warmup: int = 2
    max_tokens: int = 128
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0  # Poisson arrivals; request i carries seed + i only with request_seeds
    request_seeds: bool = False
    chunk_counts: ChunkCounts = "auto"  # the per-chunk token count asked of the server (loadrequests)
    api: Literal["auto", "completions", "chat", "messages"] = "auto"  # messages: Anthropic's /v1/messages
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
    client_processes: int = 1  # worker processes that read the streams (loadworkers); 1 = in-process
    blocks: int | None = None  # alternation blocks per phase; None = automatic
    slo: SLO | None = None  # --slo: every level's requests judged against it (metrics.slo)

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
            return messages_headers(self.api_key)
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else None
