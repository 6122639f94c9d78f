"""What a measuring run is asked to do, validated once, when the config is built.

:class:`MeasureConfig` is the whole request of ``bench``, ``tune``, ``select`` and ``demo``; every field is
checked in ``__post_init__`` and a bad one raises :class:`~specmeter.measuring.errors.MeasureError` naming
the CLI option it comes from (``--max-tokens``), so the same message serves the command line and a library
caller (the option is the field's name with dashes). The class attributes are the commands' defaults: the
CLI reads them from here instead of restating them.

Nothing here imports torch; the vLLM option checks import the vLLM backend's method list only when
``backend="vllm"``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from specmeter.measuring.errors import MeasureError
from specmeter.measuring.outputs import check_output_paths
from specmeter.methods import MethodSpec, MethodSpecError, parse_candidate
from specmeter.metrics.acceptance import K_MAX_LIMIT  # re-exported: the commands' k ceiling

__all__ = [
    "BACKENDS",
    "BENCH_K",
    "DTYPES",
    "IMPLEMENTATIONS",
    "K_MAX_LIMIT",
    "SELECT_K",
    "TUNE_K_MAX",
    "MeasureConfig",
    "VllmOptions",
    "parse_candidates",
]

BACKENDS = ("native", "vllm")
IMPLEMENTATIONS = ("auto", "native", "transformers")
DTYPES = ("auto", "float32", "bfloat16", "float16")
# The devices torch names: "auto" picks CUDA when it is there, else the CPU.
_DEVICE = re.compile(r"auto|cpu|(cuda|mps|xpu)(:\d+)?")

SEED_MAX = 2**62  # a seed plus a request's index stays a 64-bit integer (torch's generators, vLLM)

# Draft lengths each command tries when none are given.
BENCH_K = (4,)
SELECT_K = (1, 2, 4)
TUNE_K_MAX = 8
BATCH_MAX = 256  # --batch: rows of one batched KV cache


def _one_of(option: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise MeasureError(f"{option}: {value!r} is not one of {', '.join(choices)}")


def _at_least(option: str, value: int | None, low: int) -> None:
    if value is not None and value < low:
        raise MeasureError(f"{option} must be >= {low}, got {value}")


def parse_candidates(
    drafts: Sequence[Path | str | MethodSpec], option: str = "--draft"
) -> tuple[Path | MethodSpec, ...]:
    """Each ``--draft``: a model directory (a Path) or a method spec (docs/methods.md), parsed once.

    A bad spec is one MeasureError naming the option, the method and the key; the same spec twice (equal
    labels) is refused, as its runs would share one key."""
    out: list[Path | MethodSpec] = []
    for d in drafts:
        if isinstance(d, MethodSpec):
            out.append(d)
            continue
        try:
            parsed = parse_candidate(str(d))
        except MethodSpecError as e:
            raise MeasureError(f"{option}: {e}") from None
        out.append(parsed if isinstance(parsed, MethodSpec) else Path(d))
    labels = [c.label for c in out if isinstance(c, MethodSpec)]
    for label in labels:
        if labels.count(label) > 1:
            raise MeasureError(f"{option}: {label} is given twice")
    return tuple(out)


@dataclass(frozen=True)
class VllmOptions:
    """The vLLM engine settings of ``--backend vllm`` (meaning as vLLM's own flags)."""

    method: str = "draft_model"
    tensor_parallel_size: int = 1
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.9
    enforce_eager: bool = False

    def check(self) -> None:
        """Validate for a vLLM run (a native run only checks that ``method`` is left alone)."""
        from specmeter.engine.vllm_backend import METHODS

        _one_of("--method", self.method, METHODS)
        _at_least("--tensor-parallel-size", self.tensor_parallel_size, 1)
        if not 0 < self.gpu_memory_utilization <= 1:
            raise MeasureError(
                f"--gpu-memory-utilization must be in (0, 1], got {self.gpu_memory_utilization:g}"
            )
        _at_least("--max-model-len", self.max_model_len, 2)


@dataclass(frozen=True)
class MeasureConfig:
    """Baseline plus every (draft, k) over a golden set; the class attributes are the defaults."""

    target: Path
    prompts: Path | Sequence[Path]  # one golden set or several, combined file after file; kept as a tuple
    # Candidates: draft model directories or method specs (``ngram:min=2,max=4``, ``suffix``, ``layers:n=2``;
    # docs/methods.md); after __post_init__ each is a Path or a parsed MethodSpec, in the order given.
    drafts: Sequence[Path | str | MethodSpec] = ()
    k: Sequence[int] = BENCH_K
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 128
    limit: int | None = None
    # With limit: further prompts of these categories until each holds this many (Workload.limit), so that a
    # category the first ``limit`` prompts hold few of still gets an interval (the demo's legal bench).
    top_up: Mapping[str, int] | None = None
    seed: int = 0
    json_out: Path | None = None
    csv_out: Path | None = None
    log_out: Path | None = None
    dtype: str = "auto"
    device: str = "auto"
    implementation: str = "auto"
    trust_remote_code: bool = False
    cost_repeats: int = 9
    threads: int | None = None  # torch CPU threads; None keeps torch's default
    kind: str = "bench"  # the result file's kind; tune/select/demo also name their section with it
    store: Path | None = None  # run store (SQLite) to record the run in; None records nothing
    backend: str = "native"
    vllm: VllmOptions = field(default_factory=VllmOptions)
    extra: Mapping[str, Any] = field(default_factory=dict)  # more run.config keys (tune's k_max, ...)
    strict: bool = False  # a busy or unusable machine during the run ends the command with exit code 4
    hygiene: bool = True  # sample the machine during the run (specmeter.hygiene); off only for library use
    batch: Sequence[int] = ()  # batch sizes: bench runs at one (waves of B), tune predicts at each
    standin: float | None = None  # whatif without a draft: the target's first layers (engine.standin)

    def __post_init__(self) -> None:
        # Normalise containers so a frozen config cannot change under the run.
        object.__setattr__(self, "drafts", parse_candidates(self.drafts))
        files = (self.prompts,) if isinstance(self.prompts, (str, os.PathLike)) else tuple(self.prompts)
        if not files:
            raise MeasureError("--prompts: give at least one golden set")
        object.__setattr__(self, "prompts", tuple(Path(p) for p in files))
        object.__setattr__(self, "extra", dict(self.extra))
        self._check_engine()
        self._check_sampling()
        ks = tuple(self.k)
        if not ks:
            raise MeasureError("--k: give at least one draft length")
        for k in ks:
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise MeasureError(f"--k: {k!r} is not a positive integer")
        object.__setattr__(self, "k", tuple(sorted(set(ks))))
        batches = tuple(self.batch)
        for b in batches:
            if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= BATCH_MAX:
                raise MeasureError(f"--batch: {b!r} is not a batch size from 1 to {BATCH_MAX}")
        object.__setattr__(self, "batch", tuple(sorted(set(batches))))
        if batches and self.backend != "native":
            raise MeasureError(
                "--batch: batched runs use the native engine (vLLM batches on its own: `load`)"
            )
        _at_least("--max-tokens", self.max_tokens, 1)
        _at_least("--limit", self.limit, 1)
        for category, count in (self.top_up or {}).items():
            _at_least(f"top-up of {category!r}", count, 1)
        _at_least("--cost-repeats", self.cost_repeats, 1)
        _at_least("--threads", self.threads, 1)
        cpus = os.cpu_count() or 1
        if self.threads is not None and self.threads > cpus:  # torch segfaults at 100000; > cores never helps
            raise MeasureError(f"--threads must be at most this machine's {cpus} CPUs, got {self.threads}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= SEED_MAX:
            raise MeasureError(f"--seed must be an integer from 0 to 2^62, got {self.seed}")
        check_output_paths(self.outputs, self.inputs)

    def _check_engine(self) -> None:
        _one_of("--implementation", self.implementation, IMPLEMENTATIONS)
        _one_of("--backend", self.backend, BACKENDS)
        if self.backend == "vllm":
            self.vllm.check()
            if self.standin is not None:
                raise MeasureError("--standin: the stand-in draft runs on the native engine only")
            if self.methods:
                raise MeasureError(
                    f"--draft {self.methods[0].label}: method specs run on the native engine "
                    "(with --backend vllm use --method ngram, eagle, eagle3 or mtp)"
                )
            if self.implementation != "auto" or self.device != "auto":
                raise MeasureError(
                    "--implementation/--device: not used with --backend vllm (vLLM picks its own device)"
                )
        else:
            if self.vllm.method != VllmOptions.method:
                raise MeasureError("--method: only --backend vllm runs ngram, eagle, eagle3 or mtp proposers")
            if self.standin is not None:
                self._check_standin()
            elif not self.drafts:
                raise MeasureError("--draft: give at least one draft model directory or method spec")
        if self.kind == "tune" and len(self.drafts) > 1 and (not self.batch or self.backend == "vllm"):
            raise MeasureError(
                "--draft: tune sweeps k with one draft; several --draft time each candidate's own proposing "
                "cost on the cost surface, which needs --batch (native backend)"
            )
        _one_of("--dtype", self.dtype, DTYPES)
        if not _DEVICE.fullmatch(self.device):
            raise MeasureError(f"--device: {self.device!r} is not auto, cpu, cuda or cuda:N")

    def _check_standin(self) -> None:
        f = self.standin
        if self.kind != "whatif":
            raise MeasureError(
                "--standin: only whatif runs a stand-in draft (its proposals are never verified)"
            )
        if self.drafts:
            raise MeasureError("--standin: give a stand-in fraction or --draft, not both")
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not (0.0 < f < 1.0):
            raise MeasureError(
                f"--standin: the stand-in's share of the target's layers must be in (0, 1), got {f}"
            )

    def _check_sampling(self) -> None:
        t, p = self.temperature, self.top_p
        if not (math.isfinite(t) and t >= 0):
            raise MeasureError(f"--temperature: temperature must be >= 0 and finite, got {t:g}")
        if not 0 < p <= 1:  # NaN fails too
            raise MeasureError(f"--top-p: top_p must be in (0, 1], got {p:g}")

    @property
    def prompt_files(self) -> tuple[Path, ...]:
        """The golden set(s), in the order given (``prompts`` as ``__post_init__`` keeps it)."""
        return cast(tuple[Path, ...], self.prompts)

    @property
    def draft_dirs(self) -> tuple[Path, ...]:
        """The candidates that are draft model directories."""
        return tuple(d for d in self.drafts if isinstance(d, Path))

    @property
    def methods(self) -> tuple[MethodSpec, ...]:
        """The candidates that are method specs."""
        return tuple(d for d in self.drafts if isinstance(d, MethodSpec))

    @property
    def inputs(self) -> dict[str, Path | Sequence[Path] | None]:
        return {"--target": self.target, "--draft": self.draft_dirs, "--prompts": self.prompts}

    @property
    def outputs(self) -> dict[str, Path | None]:
        return {"--json": self.json_out, "--csv": self.csv_out, "--log": self.log_out, "--store": self.store}

    def vllm_settings(self) -> dict[str, Any]:
        """``engine.vllm_backend.VllmSettings`` fields for this run."""
        v = self.vllm
        return {
            "method": v.method,
            "tensor_parallel_size": v.tensor_parallel_size,
            "dtype": self.dtype,
            "max_model_len": v.max_model_len,
            "gpu_memory_utilization": v.gpu_memory_utilization,
            "enforce_eager": v.enforce_eager,
            "seed": self.seed,
            "trust_remote_code": self.trust_remote_code,
        }

    def as_dict(self) -> dict[str, Any]:
        """The ``run.config`` object of the result file (docs/results.md)."""
        vllm = {k: v for k, v in self.vllm_settings().items() if k != "seed"}
        return {
            "target": str(self.target),
            "drafts": [d.label if isinstance(d, MethodSpec) else str(d) for d in self.drafts],
            # One golden set as its path (as ever); several as the list of their paths.
            "prompts": str(self.prompt_files[0])
            if len(self.prompt_files) == 1
            else [str(p) for p in self.prompt_files],
            "k": list(self.k),
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "limit": self.limit,
            **({"top_up": dict(self.top_up)} if self.top_up else {}),
            "seed": self.seed,
            "dtype": self.dtype,
            "device": self.device,
            "implementation": self.implementation,
            "threads": self.threads,
            "backend": self.backend,
            **({"batch": list(self.batch)} if self.batch else {}),
            **({"standin": self.standin} if self.standin is not None else {}),
            **({"vllm": vllm} if self.backend == "vllm" else {}),
            **self.extra,
        }
