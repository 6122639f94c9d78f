"""What a ``sweep`` is asked to do: server configurations × load levels. Plain data, no I/O.

A *configuration* is one way of running the server: no speculation (the baseline, k = 0), a fixed draft
length k, or a batch-size → k schedule. Each comes from a launch template (``sweep.launch``) or is an
endpoint that is already running. The sweep measures the baseline first and again last (A … A), every
speculative configuration in between, each at every level of ``load.phases`` (docs/serving.md, "sweep").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from specmeter.load.config import (
    LoadConfig,
    LoadConfigError,
    check_concurrency,
    check_rate,
    in_range,
    levels_echo,
)
from specmeter.load.limits import MAX_SECONDS
from specmeter.methods import MethodSpecError, parse_candidate
from specmeter.metrics.slo import DEFAULT_ATTAINMENT

if TYPE_CHECKING:
    from specmeter.engine.schedule import KSchedule
    from specmeter.metrics.slo import SLO

__all__ = [
    "APIS",
    "BASELINE_NAME",
    "SWEEP_K",
    "SearchSettings",
    "ServerConfig",
    "SweepConfig",
    "config_name",
]

BASELINE_NAME = "k=0"
SWEEP_K = (0, 2, 4)  # --k: the draft lengths launched when none are given (0 = the baseline)
APIS = ("auto", "completions", "chat")  # --api: a sweep speaks OpenAI's APIs (load's "messages" is not one)


def config_name(k: int, schedule: KSchedule | None = None) -> str:
    """A configuration's name in tables, rows and messages: ``k=0`` (the baseline), ``k=4``, ``schedule``."""
    return "schedule" if schedule is not None else f"k={k}"


@dataclass(frozen=True)
class ServerConfig:
    """One server configuration: launched from ``template`` (placeholders filled) or already at ``url``."""

    k: int  # 0 = no speculation; a schedule: its largest k
    template: str | None = None
    url: str | None = None
    schedule: KSchedule | None = None
    option: str = "--launch"  # where the template came from, for messages

    def __post_init__(self) -> None:
        if (self.template is None) == (self.url is None):
            raise ValueError("a configuration has a launch template or a URL, not both or neither")

    @property
    def name(self) -> str:
        return config_name(self.k, self.schedule)

    @property
    def baseline(self) -> bool:
        return self.k == 0 and self.schedule is None


@dataclass(frozen=True)
class SearchSettings:
    """``--search``: the capacity search per configuration (``sweep.capacity.search_capacity``)."""

    kind: Literal["concurrency", "rate"]
    low: float
    high: float
    target: float
    max_steps: int = 6

    def __post_init__(self) -> None:
        """Bounds the machine can hold (``load.limits``): a search never asks a level ``load`` would refuse.
        ``LoadConfigError`` naming ``--search-range``."""
        if self.kind not in ("concurrency", "rate"):
            raise LoadConfigError(f"--search: {self.kind!r} is not one of concurrency, rate")
        for bound in (self.low, self.high):
            if self.kind == "concurrency":
                check_concurrency("--search-range", bound)
            else:
                check_rate("--search-range", bound)
        if not self.low < self.high:
            raise LoadConfigError(f"--search-range: needs LOW < HIGH, got {self.low:g}:{self.high:g}")
        if not 2 <= self.max_steps <= 1000:
            raise LoadConfigError(f"--max-steps must be in [2, 1000], got {self.max_steps}")


@dataclass
class SweepConfig:
    """The grid: ``configs`` (the baseline first) × ``load.phases``, with the shared load settings."""

    load: LoadConfig  # prompts, limit, tokens, temperature, timeouts; its endpoint fields are unused
    configs: Sequence[ServerConfig]
    draft: str | None = None  # {draft}
    method: str = "draft_model"  # {spec}'s method
    startup_timeout: float = 600.0
    stop_grace: float = 20.0
    logs_dir: Path = field(default_factory=lambda: Path("sweep-logs"))  # launched servers' output only
    rerun_baseline: bool = True  # A … A: the baseline again at the end, for drift
    slo: SLO | None = None
    slo_target: float = DEFAULT_ATTAINMENT  # capacity's attainment target (--search carries its own)
    search: SearchSettings | None = None
    validate: bool = False  # launch the resulting schedule and ramp across its switch points
    validate_template: str | None = None  # the template for the schedule (default: the speculative one)

    def __post_init__(self) -> None:
        """The sweep's own settings checked once (``load`` checks itself): ``LoadConfigError`` naming the
        command-line option."""
        if self.load.api not in APIS:
            raise LoadConfigError(f"--api: {self.load.api!r} is not one of {', '.join(APIS)}")
        if self.draft is not None:  # a model name, or a method spec for {draft} / {spec} (docs/methods.md)
            try:
                parse_candidate(self.draft)
            except MethodSpecError as e:
                raise LoadConfigError(f"--draft: {e}") from None
        in_range("--startup-timeout", self.startup_timeout, 0, MAX_SECONDS, open_low=True)
        in_range("--stop-timeout", self.stop_grace, 0, MAX_SECONDS, open_low=True)
        in_range("--target", self.slo_target, 0, 1, open_low=True)
        if self.search is not None and self.search.max_steps < 2:
            raise LoadConfigError(f"--max-steps must be >= 2 (both bounds), got {self.search.max_steps}")

    def echo(
        self, *, prompts: str, endpoints: Sequence[str] | None, max_error_rate: float | None
    ) -> dict[str, Any]:
        """The settings as the sweep result's ``run.config`` records them; ``prompts`` and ``endpoints`` are
        what the caller read them from, ``max_error_rate`` the caller's own bound on failed requests."""
        load, search = self.load, self.search
        launched = [c for c in self.speculative if c.template is not None]
        base = self.baseline
        return {
            "launch": launched[0].template if launched else None,
            "baseline_launch": base.template if base.option == "--baseline-launch" else None,
            "validate_launch": self.validate_template,
            "endpoints": list(endpoints) if endpoints else None,
            "k": [c.k for c in self.configs],
            "draft": self.draft,
            "method": self.method,
            "prompts": prompts,
            **levels_echo(load.phases),
            "limit": load.limit,
            "warmup": load.warmup,
            "warmup_per_level": load.warmup_per_level,
            "max_tokens": load.max_tokens,
            "temperature": load.temperature,
            "top_p": load.top_p,
            "seed": load.seed,
            "model": load.model,
            "api": load.api,
            "startup_timeout": self.startup_timeout,
            "client_processes": load.client_processes,
            "max_error_rate": max_error_rate,
            "rerun_baseline": self.rerun_baseline,
            "validate": self.validate,
            "logs": str(self.logs_dir) if self.launches else None,
            "slo": None if self.slo is None else self.slo.text(),
            "target": self.slo_target,
            "search": None
            if search is None
            else {"kind": search.kind, "low": search.low, "high": search.high, "max_steps": search.max_steps},
        }

    @property
    def launches(self) -> bool:
        """Whether the sweep starts servers (and so writes their output to ``logs_dir``); with
        ``--endpoint`` only it starts none and there are no server logs."""
        return self.validate or any(c.template is not None for c in self.configs)

    @property
    def baseline(self) -> ServerConfig:
        return next(c for c in self.configs if c.baseline)

    @property
    def speculative(self) -> list[ServerConfig]:
        return [c for c in self.configs if not c.baseline]
