"""Memory fit of a target (and a draft) per weight format, against a GPU catalogue.

For each weight format the plan adds up weights and the KV cache for ``batch`` sequences of ``context``
tokens, with and without the draft, and names the smallest card that holds each. What a card can hold
is ``utilization`` × its memory (vLLM's gpu_memory_utilization, 0.90 by default): the rest goes to the
CUDA context, activations and allocator slack. On the chosen card the *KV headroom* is what remains
after the weights, in tokens of KV cache (target + draft per token when speculating).

Weight formats (bits per parameter of the decoder blocks' matrices, block-scale overhead included;
embeddings, LM head and norms stay bf16 in the quantized formats, as quantized checkpoints keep them):

- fp32: 32; bf16: 16.
- fp8: 8 (E4M3 with per-tensor or per-channel scales: under 0.1%, ignored).
- nvfp4: 4.5 = 4-bit E2M1 values + one FP8 (E4M3) scale per 16 values (+12.5%); the per-tensor
  fp32 scale is negligible.
- int4: 4.15625 = 4-bit values + an fp16 scale and a 4-bit zero point per group of 128 (+3.9%), as
  AWQ / GPTQ with group size 128.

The KV cache format follows the weights unless given: fp32 → fp32, bf16 → bf16, fp8 → fp8,
nvfp4 → fp8, int4 → bf16 (what serving stacks usually pair them with). KV bytes per token are averaged over
a sequence of ``context`` tokens: sliding-window and chunked layers keep at most their window.

Weight traffic (:func:`traffic`) is what the field report's metric 3 weighs before anything is measured:
bytes of weights one forward reads. A decode step of the target reads its *active* weights (a MoE model:
only the experts the token uses); a verification of k drafted tokens reads k + 1 positions at once, which
for a dense model is the same bytes and for a MoE model the union of the experts the positions picked;
the draft reads its own active weights per drafted token. Speculation reads fewer weight bytes per emitted
token than plain decoding only when the tokens per step τ exceed (verify + k · draft) / decode step.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from specmeter.economics.gpus import Gpu
from specmeter.economics.modelcfg import ArchFacts

__all__ = [
    "DEFAULT_UTILIZATION",
    "KV_FORMATS",
    "WEIGHT_FORMATS",
    "Fit",
    "Footprint",
    "PlanRow",
    "Traffic",
    "WeightFormat",
    "fit_on",
    "footprint",
    "plan",
    "plan_dict",
    "smallest_fit",
    "traffic",
    "weight_bytes",
]

DEFAULT_UTILIZATION = 0.90


@dataclass(frozen=True)
class WeightFormat:
    name: str
    linear_bits: float  # per decoder-block matrix parameter, scales included
    other_bytes: int  # per embedding / head / norm parameter
    kv_default: str
    note: str


WEIGHT_FORMATS: dict[str, WeightFormat] = {
    "fp32": WeightFormat("fp32", 32.0, 4, "fp32", "full precision"),
    "bf16": WeightFormat("bf16", 16.0, 2, "bf16", "16-bit"),
    "fp8": WeightFormat("fp8", 8.0, 2, "fp8", "E4M3, per-channel scales (<0.1%)"),
    "nvfp4": WeightFormat("nvfp4", 4.5, 2, "fp8", "E2M1 + FP8 scale per 16 values: 4.5 bits"),
    "int4": WeightFormat("int4", 4.15625, 2, "bf16", "group 128, fp16 scale + 4-bit zero: 4.16 bits"),
}
KV_FORMATS: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


@dataclass(frozen=True)
class Footprint:
    """Bytes needed in one weight format for ``batch`` sequences of ``context`` tokens."""

    weight_format: str
    kv_format: str
    context: int
    batch: int
    target_weights: int
    draft_weights: int  # 0 without a draft
    target_kv_per_token: int
    draft_kv_per_token: int

    @property
    def tokens(self) -> int:
        return self.context * self.batch

    @property
    def baseline_bytes(self) -> int:
        return self.target_weights + self.target_kv_per_token * self.tokens

    @property
    def extra_bytes(self) -> int:
        """What speculation adds: W_D + the draft's KV cache (the target's KV is needed either way)."""
        return self.draft_weights + self.draft_kv_per_token * self.tokens

    @property
    def spec_bytes(self) -> int:
        return self.baseline_bytes + self.extra_bytes


@dataclass(frozen=True)
class Fit:
    gpu: Gpu
    count: int  # cards per instance (tensor parallel); memory is pooled across them
    usable_bytes: int
    kv_headroom_bytes: int  # usable − weights
    kv_headroom_tokens: int  # tokens of KV cache that fit in the headroom


@dataclass(frozen=True)
class PlanRow:
    footprint: Footprint
    baseline_fit: Fit | None  # smallest card for the target alone
    spec_fit: Fit | None  # smallest card for target + draft (None when there is no draft)


def weight_bytes(model: ArchFacts, fmt: WeightFormat) -> int:
    return math.ceil(model.linear_params * fmt.linear_bits / 8) + model.other_params * fmt.other_bytes


@dataclass(frozen=True)
class Traffic:
    """Weight bytes one forward reads, in one format, for draft length k."""

    weight_format: str
    k: int
    target_step: int  # one target decode step: its active weights
    target_verify: int  # one verification of k + 1 positions (MoE: the union of their experts)
    draft_forward: int  # one draft forward: the draft's active weights (0 without a draft)

    @property
    def spec_step(self) -> int:
        """A speculative step: the verification plus k draft forwards."""
        return self.target_verify + self.k * self.draft_forward

    @property
    def break_even_tau(self) -> float:
        """Tokens per step above which speculation reads fewer weight bytes per token than decoding."""
        return self.spec_step / self.target_step


def traffic(target: ArchFacts, draft: ArchFacts | None, weight_format: str, k: int) -> Traffic:
    """Weight traffic per forward of ``target`` (and ``draft``) in one format; see the module docstring."""
    if k < 1:
        raise ValueError("draft length k must be >= 1")
    fmt = WEIGHT_FORMATS[weight_format]

    def read(model: ArchFacts, linear: float) -> int:
        return math.ceil(linear * fmt.linear_bits / 8) + model.active_other_params * fmt.other_bytes

    return Traffic(
        weight_format=weight_format,
        k=k,
        target_step=read(target, target.active_linear_params),
        target_verify=read(target, target.verify_linear_params(k + 1)),
        draft_forward=read(draft, draft.active_linear_params) if draft is not None else 0,
    )


def footprint(
    target: ArchFacts,
    draft: ArchFacts | None,
    weight_format: str,
    *,
    context: int,
    batch: int = 1,
    kv_format: str | None = None,
) -> Footprint:
    fmt = WEIGHT_FORMATS[weight_format]
    kv = kv_format or fmt.kv_default
    kv_bytes = KV_FORMATS[kv]
    return Footprint(
        weight_format=weight_format,
        kv_format=kv,
        context=context,
        batch=batch,
        target_weights=weight_bytes(target, fmt),
        draft_weights=weight_bytes(draft, fmt) if draft is not None else 0,
        target_kv_per_token=math.ceil(target.kv_bytes_per_token(kv_bytes, context)),
        draft_kv_per_token=math.ceil(draft.kv_bytes_per_token(kv_bytes, context)) if draft is not None else 0,
    )


def fit_on(
    gpu: Gpu, weights: int, kv_per_token: int, needed: int, utilization: float, count: int = 1
) -> Fit | None:
    """The fit on ``count`` such cards, or None when ``needed`` bytes do not fit in their usable memory.

    Several cards are pooled, as tensor parallelism splits weights and KV heads across them (evenly
    only when heads divide by the count; the pool is the optimistic bound).
    """
    usable = int(gpu.memory_bytes * utilization) * count
    if needed > usable:
        return None
    headroom = usable - weights
    tokens = headroom // kv_per_token if kv_per_token > 0 else 0
    return Fit(gpu, count, usable_bytes=usable, kv_headroom_bytes=headroom, kv_headroom_tokens=tokens)


def smallest_fit(
    gpus: Sequence[Gpu], weights: int, kv_per_token: int, needed: int, utilization: float, count: int = 1
) -> Fit | None:
    """The first card (catalogue sorted smallest first) of which ``count`` hold ``needed`` bytes."""
    for gpu in gpus:
        fit = fit_on(gpu, weights, kv_per_token, needed, utilization, count)
        if fit is not None:
            return fit
    return None


def plan(
    target: ArchFacts,
    draft: ArchFacts | None,
    gpus: Sequence[Gpu],
    *,
    formats: Sequence[str] = tuple(WEIGHT_FORMATS),
    context: int = 4096,
    batch: int = 1,
    kv_format: str | None = None,
    utilization: float = DEFAULT_UTILIZATION,
    count: int = 1,
) -> list[PlanRow]:
    """One row per weight format; ValueError on a bad argument (named)."""
    if context < 1:
        raise ValueError("context must be >= 1 token")
    if batch < 1:
        raise ValueError("batch must be >= 1")
    if count < 1:
        raise ValueError("GPUs per instance must be >= 1")
    if not 0 < utilization <= 1:
        raise ValueError("utilization must be in (0, 1]")
    if kv_format is not None and kv_format not in KV_FORMATS:
        raise ValueError(f"unknown KV format {kv_format!r}; one of {', '.join(KV_FORMATS)}")
    ordered = sorted(gpus, key=lambda g: g.memory_gib)
    rows = []
    for name in formats:
        if name not in WEIGHT_FORMATS:
            raise ValueError(f"unknown weight format {name!r}; one of {', '.join(WEIGHT_FORMATS)}")
        fp = footprint(target, draft, name, context=context, batch=batch, kv_format=kv_format)
        base = smallest_fit(
            ordered, fp.target_weights, fp.target_kv_per_token, fp.baseline_bytes, utilization, count
        )
        spec = None
        if draft is not None:
            spec = smallest_fit(
                ordered,
                fp.target_weights + fp.draft_weights,
                fp.target_kv_per_token + fp.draft_kv_per_token,
                fp.spec_bytes,
                utilization,
                count,
            )
        rows.append(PlanRow(footprint=fp, baseline_fit=base, spec_fit=spec))
    return rows


def plan_dict(
    t: ArchFacts, d: ArchFacts | None, rows: Sequence[PlanRow], flows: Sequence[Traffic], *, context: int,
    batch: int, tp: int, utilization: float,
) -> dict[str, Any]:  # fmt: skip
    """``plan --json``: the models' facts, each weight format's footprint and fits, the weight traffic."""
    return {
        "target": dataclasses.asdict(t),
        "draft": dataclasses.asdict(d) if d is not None else None,
        "context": context, "batch": batch, "tp": tp, "utilization": utilization,
        "rows": [
            {
                **dataclasses.asdict(r.footprint),
                "baseline_bytes": r.footprint.baseline_bytes, "extra_bytes": r.footprint.extra_bytes,
                "spec_bytes": r.footprint.spec_bytes,
                "baseline_fit": _fit_dict(r.baseline_fit), "spec_fit": _fit_dict(r.spec_fit),
            }
            for r in rows
        ],
        "traffic": [{**dataclasses.asdict(f), "spec_step": f.spec_step,
                     "break_even_tau": f.break_even_tau} for f in flows],
    }  # fmt: skip


def _fit_dict(fit: Fit | None) -> dict[str, Any] | None:
    if fit is None:
        return None
    return {
        "gpu": fit.gpu.name,
        "memory_gib": fit.gpu.memory_gib,
        "count": fit.count,
        "usable_bytes": fit.usable_bytes,
        "kv_headroom_bytes": fit.kv_headroom_bytes,
        "kv_headroom_tokens": fit.kv_headroom_tokens,
    }
