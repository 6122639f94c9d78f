"""Raw records of a run: what the engine observed, nothing derived.

The engine fills these in while it decodes; every metric in this package is a pure function over them,
derived after the fact and never inside the loop (docs/internals.md). They carry no torch types so that
metrics, reports and stores load without torch.

Times are seconds (floats) measured with ``time.perf_counter``; emission times are relative to the
request's start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

FinishReason = Literal["eos", "length", "interrupted"]

# The run key of the baseline (no draft) wherever runs are keyed: CSV/JSONL ``run``, the run store's slots,
# HTML charts, roi and compare.
BASELINE = "baseline"


def run_label(draft: str | None, k: int) -> str:
    """The key of one run: ``"baseline"`` without a draft, else ``"<draft>@k=<k>"``."""
    return BASELINE if draft is None else f"{draft}@k={k}"


@dataclass(frozen=True)
class StepRecord:
    """One target forward in the decode loop.

    ``drafted`` is d_s (0 for a baseline step or a target-only step at the very end of a request),
    ``accepted`` is a_s as the verifier decided it; ``emitted`` is how many tokens the step actually
    appended to the output (a_s + 1 unless EOS or the token limit cut it short).

    ``batch`` is how many sequences the step decoded together (1 for the single-stream loop); ``draft_s``
    and ``verify_s`` are then the whole batched step's times, which every sequence in it lived through.
    ``k`` is the draft length the step was scheduled with (a batch-size schedule may pick 0 = plain
    decoding); ``drafted`` can be smaller near a request's token limit. None when not recorded.
    """

    drafted: int
    accepted: int
    emitted: int
    draft_s: float
    verify_s: float
    draft_forwards: int = 0
    batch: int = 1
    k: int | None = None


@dataclass(frozen=True)
class Emission:
    """Tokens becoming visible to the user at once: one engine step or one streamed chunk."""

    t: float  # seconds since the request started
    tokens: int


@dataclass(frozen=True)
class RequestRecord:
    """Everything observed for one request of one run (baseline or candidate)."""

    id: str
    category: str
    prompt_tokens: int
    output_tokens: int
    latency_s: float  # request start -> last token
    ttft_s: float  # request start -> first token
    prefill_s: float  # time spent in prompt prefill (target and draft)
    steps: tuple[StepRecord, ...] = ()
    emissions: tuple[Emission, ...] = ()
    output_ids: tuple[int, ...] = ()
    finish_reason: FinishReason = "length"
    matches_baseline: bool | None = None
    # Why the request failed or was cut short (connection refused, HTTP 500, stalled, ...); None when it
    # finished normally. A failed request keeps whatever it produced before the failure.
    error: str | None = None


@dataclass(frozen=True)
class CostCurve:
    """Forward-pass costs on warm caches.

    ``target_s[n-1]`` is t_T(n), the median time of one target forward over n new tokens, for
    n = 1..len(target_s); ``draft_s`` is t_D(1). ``*_spread`` hold the interquartile range of the repeats.
    ``copy_bytes_per_s``, measured beside the curve on the same device, is the reference of
    ``bandwidth_fraction`` (docs/metrics.md, "achieved bandwidth"); None where it was not measured.
    """

    target_s: tuple[float, ...]
    draft_s: float
    target_spread: tuple[float, ...] = ()
    draft_spread: float = 0.0
    repeats: int = 0
    copy_bytes_per_s: float | None = None  # measured copy bandwidth of the device (read + written bytes/s)

    def t_target(self, n: int) -> float:
        """t_T(n); n beyond the measured range is extrapolated linearly from the last two points, never
        downwards (a forward over more tokens does not cost less: two noisy points whose last one came out
        lower would otherwise extrapolate towards zero or below)."""
        if n < 1:
            raise ValueError("n must be >= 1")
        if n <= len(self.target_s):
            return self.target_s[n - 1]
        if len(self.target_s) == 1:
            return self.target_s[0]
        slope = max(0.0, self.target_s[-1] - self.target_s[-2])
        return self.target_s[-1] + slope * (n - len(self.target_s))

    def step_s(self, drafted: int) -> float:
        """One decode step that drafts ``drafted`` tokens, as the curve prices it: d·t_D(1) + t_T(d + 1).

        The one price of a step (docs/metrics.md, "speedup, calibrated"): E_cal, the cost model's decode
        timing and its predictions all call this, each step with its own draft length. d = 0 is a
        target-only step, t_T(1).
        """
        if drafted < 0:
            raise ValueError("drafted must be >= 0")
        return drafted * self.draft_s + self.t_target(drafted + 1)


@dataclass(frozen=True)
class ModelInfo:
    """Static facts about a model that the memory metrics need."""

    name: str
    path: str
    architecture: str
    params: int
    weight_bytes: int
    kv_bytes_per_token: int
    dtype: str
    num_layers: int
    num_kv_heads: int
    head_dim: int
    implementation: str = "native"  # "native", "transformers" or "vllm"
    # A method spec's label (docs/methods.md: ``ngram:min=2,max=4``, ``layers:n=2``); None: a model directory.
    method: str | None = None
    # Weights the candidate adds to accelerator memory when that differs from ``weight_bytes`` (what one
    # of its forwards reads): ``layers:n`` reads n of the target's layers but adds none. None: weight_bytes.
    extra_weight_bytes: int | None = None

    @property
    def added_weight_bytes(self) -> int:
        """Weight bytes this model adds next to the target (extra memory): weights a draft owns."""
        return self.weight_bytes if self.extra_weight_bytes is None else self.extra_weight_bytes


@dataclass(frozen=True)
class RunRecord:
    """One (target, draft, k, sampling) over a workload; ``draft`` is None for the baseline."""

    target: ModelInfo
    draft: ModelInfo | None
    k: int
    temperature: float
    top_p: float
    requests: tuple[RequestRecord, ...] = ()
    cost_curve: CostCurve | None = None
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return run_label(None if self.draft is None else self.draft.name, self.k)
