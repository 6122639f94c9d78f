"""``specmeter replay``'s settings: defaults (class attributes), allowed values and checks, once.

A bad setting is a :class:`ReplayError` whose message names the option; the CLI prints it as one
``error:`` line and exits 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specmeter.inputs import InputError, check_input
from specmeter.methods import DraftDir, MethodSpec, MethodSpecError, parse_candidate
from specmeter.metrics.acceptance import K_MAX_LIMIT

__all__ = ["MAX_SHARDS", "EmptyShard", "ReplayConfig", "ReplayError", "parse_shard"]

# --shards' bound: every shard reads the whole log (and rebuilds suffix decoding's cache from it), so shards
# beyond the cluster's CPUs only queue; 1024 is far past any cluster this is run on, and catches a typo.
MAX_SHARDS = 1024
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
# The draft length near max_tokens (replay.walk): specmeter's loop drafts min(k, max_tokens − emitted − 1);
# vLLM drafts k at every step and counts the acceptance past the limit (docs/replay.md).
DRAFT_RULES = ("specmeter", "vllm")
FORMATS = (
    "auto",
    "openai",
    "specmeter",
    "litellm",
    "otel",
    "batch",
    "sglang",
    "langfuse",
    "portkey",
    "helicone",
    "vllm",
)


class ReplayError(ValueError):
    """The replay cannot run as asked (a bad option or input); one line naming the option or the file."""


class EmptyShard(ReplayError):
    """``--shard i/N`` holds no request to measure: the log has fewer usable requests (after ``--warm``
    and ``--limit``) than shards."""


def parse_shard(text: str) -> tuple[int, int]:
    """``i/N`` (0 <= i < N): this process replays every N-th request starting at the i-th."""
    m = _SHARD.match(text)
    if m is None:
        raise ReplayError(f"--shard: expected i/N such as 0/4, got {text!r}")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 0 <= i < n:
        raise ReplayError(f"--shard: need 0 <= i < N, got {i}/{n}")
    return i, n


@dataclass(frozen=True)
class ReplayConfig:
    """Everything one replay needs. ``methods`` are candidate names (``methods.spec`` specs; a draft model
    directory or ``layers:n`` needs the target's weights); ``target`` is the model directory whose
    tokenizer (and, for those methods, weights) replay uses."""

    sources: tuple[Path, ...]
    methods: tuple[str, ...]
    ks: tuple[int, ...]
    target: Path
    fmt: str = "auto"
    category_field: str | None = None
    rules: Path | None = None
    model: str | None = None  # the model the log's requests must name; None: the target directory's name
    warm: int = 0  # the first N usable requests feed learning methods but are left out of the figures
    shard: tuple[int, int] | None = None  # (i, N)
    limit: int | None = None  # replay at most this many usable requests (after --warm), sampled by category
    draft_rule: str = "specmeter"  # the draft length near max_tokens: specmeter's own loop, or vLLM's
    costs: Path | None = None
    json_out: Path | None = None
    csv_out: Path | None = None
    html_out: Path | None = None
    store: Path | None = None
    ray: str | None = (
        None  # a Ray cluster's address (host:port, ray://host:port, auto, local): shards run there
    )
    shards: int | None = None  # with ray: the shard count; None: one per CPU of the cluster (shard_count)
    parsed: tuple[MethodSpec | DraftDir, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if not self.sources:
            raise ReplayError("--from: give at least one log file or directory")
        for s in self.sources:
            if not s.exists():
                raise ReplayError(f"--from: {s} does not exist")
            try:
                check_input(s)
            except InputError as e:
                raise ReplayError(f"--from: {s} is {e}") from None
        if not self.methods:
            raise ReplayError("--method: give at least one method (ngram, ngram-simple, suffix, …)")
        if len(set(self.methods)) != len(self.methods):
            raise ReplayError("--method: a method is given twice")
        parsed = []
        for text in self.methods:
            try:
                parsed.append(parse_candidate(text))
            except MethodSpecError as e:
                raise ReplayError(f"--method: {e}") from None
        labels = [_label(p) for p in parsed]
        if len(set(labels)) != len(labels):
            raise ReplayError("--method: two methods name the same run (" + ", ".join(labels) + ")")
        object.__setattr__(self, "parsed", tuple(parsed))
        if not self.ks:
            raise ReplayError("--k: give at least one draft length")
        for k in self.ks:
            if not 1 <= k <= K_MAX_LIMIT:
                raise ReplayError(f"--k: each k must be in 1..{K_MAX_LIMIT}, got {k}")
        if len(set(self.ks)) != len(self.ks):
            raise ReplayError("--k: a draft length is given twice")
        if not self.target.is_dir():
            raise ReplayError(f"--target: {self.target} is not a directory (a model or tokenizer directory)")
        if self.fmt not in FORMATS:
            raise ReplayError(f"--format: {self.fmt!r} is not one of {', '.join(FORMATS)}")
        if self.draft_rule not in DRAFT_RULES:
            raise ReplayError(f"--draft-rule: {self.draft_rule!r} is not one of {', '.join(DRAFT_RULES)}")
        if self.warm < 0:
            raise ReplayError(f"--warm must be >= 0, got {self.warm}")
        if self.limit is not None and self.limit < 1:
            raise ReplayError(f"--limit must be >= 1, got {self.limit}")
        if self.costs is not None and not self.costs.is_file():
            raise ReplayError(f"--costs: {self.costs} is not a file")
        if self.rules is not None and not self.rules.is_file():
            raise ReplayError(f"--rules: {self.rules} is not a file")
        if self.ray is not None:
            if not self.ray.strip():
                raise ReplayError(
                    "--ray: give the cluster's address (host:port, ray://host:port, auto or local)"
                )
            if self.shard is not None:
                raise ReplayError(
                    "--ray runs every shard itself: drop --shard (or drop --ray and run --shard i/N in each "
                    "process)"
                )
        if self.shards is not None:
            if self.ray is None:
                raise ReplayError("--shards needs --ray (without Ray, run --shard i/N in each process)")
            if not 1 <= self.shards <= MAX_SHARDS:
                raise ReplayError(f"--shards must be in 1..{MAX_SHARDS}, got {self.shards}")

    @property
    def needs_model(self) -> bool:
        """Whether a method runs a model (a draft directory, ``layers:n``): the target's weights load."""
        return any(isinstance(p, DraftDir) or p.method not in _MODEL_FREE for p in self.parsed)

    def shard_count(self, cluster_cpus: float) -> int:
        """How many shards ``--ray`` runs: ``--shards``, else one per CPU of the cluster (at least 1, at
        most :data:`MAX_SHARDS`)."""
        if self.shards is not None:
            return self.shards
        return min(MAX_SHARDS, max(1, int(cluster_cpus)))

    @property
    def model_name(self) -> str:
        """The model the log must name: ``--model``, else the target directory's name (serve's default)."""
        return self.model if self.model is not None else self.target.resolve().name

    def as_dict(self) -> dict[str, Any]:
        """``run.config`` of the result file (bench's keys where they mean the same)."""
        return {
            "target": str(self.target),
            "drafts": [_label(p) for p in self.parsed],
            "prompts": ", ".join(str(s) for s in self.sources),
            "from": [str(s) for s in self.sources],
            "k": list(self.ks),
            "model": self.model_name,
            "format": self.fmt,
            "category_field": self.category_field,
            "rules": str(self.rules) if self.rules is not None else None,
            "warm": self.warm,
            "limit": self.limit,
            "draft_rule": self.draft_rule,
            "shard": None if self.shard is None else f"{self.shard[0]}/{self.shard[1]}",
            "costs": str(self.costs) if self.costs is not None else None,
        }


_MODEL_FREE = frozenset({"ngram", "ngram-simple", "ngram-map-k", "suffix"})


def _label(parsed: MethodSpec | DraftDir) -> str:
    """A method's run key: the spec's label, or a draft directory's name (the loaded model's name)."""
    return parsed.label if isinstance(parsed, MethodSpec) else Path(parsed.path).name
