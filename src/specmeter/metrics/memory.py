"""Memory cost of speculation and what it buys back in weight traffic (the field report's metric 3).

Decoding is usually memory-bound: every forward reads all the model's weights. Speculation reads the
target's weights once per step instead of once per token, at the price of holding a draft (weights plus
its KV cache) in memory. These functions put both sides in bytes so the trade can be judged: weight
traffic per emitted token, extra bytes held, and traffic saved per extra GiB.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "GIB",
    "achieved_bytes_per_s",
    "bandwidth_efficiency",
    "bandwidth_fraction",
    "bytes_per_element",
    "extra_memory_bytes",
    "kv_bytes_for_context",
    "kv_bytes_per_token",
    "kv_elements_per_token",
    "mla_kv_elements_per_token",
    "weight_traffic_per_token",
]

GIB = 2**30

_DTYPE_BYTES = {
    "float32": 4,
    "fp32": 4,
    "float": 4,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "bfloat16": 2,
    "bf16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "fp8": 1,
    "int8": 1,
}


def bytes_per_element(dtype: str) -> int:
    """Bytes of one element of ``dtype`` ("bfloat16", "torch.float16", "fp8", ...)."""
    name = dtype.lower().removeprefix("torch.")
    try:
        return _DTYPE_BYTES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}") from None


def kv_bytes_per_token(num_layers: int, num_kv_heads: int, head_dim: int, bytes_per_elem: int) -> int:
    """2 · layers · kv_heads · head_dim · bytes: one key and one value vector per layer per token."""
    return 2 * num_layers * num_kv_heads * head_dim * bytes_per_elem


def kv_elements_per_token(num_kv_heads: int, head_dim: int) -> int:
    """2 · kv_heads · head_dim: the elements one attention layer caches per token (a key and a value)."""
    return 2 * num_kv_heads * head_dim


def mla_kv_elements_per_token(kv_lora_rank: int, rope_head_dim: int) -> int:
    """kv_lora_rank + rope_head_dim: what one multi-head latent attention layer caches per token.

    MLA (DeepSeek V2/V3) keeps the compressed KV latent and the one rope key all heads share, and rebuilds
    per-head keys and values from the latent, so nothing scales with the number of heads.
    """
    return kv_lora_rank + rope_head_dim


def kv_bytes_for_context(
    layers: Iterable[tuple[int, int | None]], context_tokens: int, bytes_per_elem: float
) -> float:
    """KV bytes of one sequence of ``context_tokens`` over layers given as (elements per token, window).

    A layer with a window (sliding-window or chunked attention) keeps at most ``window`` tokens; one
    without keeps them all. Σ elements · min(context, window) · bytes.
    """
    tokens = max(context_tokens, 0)
    return sum(e * (tokens if w is None else min(tokens, w)) for e, w in layers) * bytes_per_elem


def extra_memory_bytes(draft_weight_bytes: int, draft_kv_bytes_per_token: int, context_tokens: int) -> int:
    """W_D + draft KV for ``context_tokens`` tokens: what one speculating sequence holds on top of baseline.

    The target's own KV is the same with or without speculation (the few rejected positions are
    overwritten), so it is not extra.
    """
    return draft_weight_bytes + draft_kv_bytes_per_token * max(context_tokens, 0)


def weight_traffic_per_token(
    target_forwards: int,
    draft_forwards: int,
    emitted: int,
    target_weight_bytes: int,
    draft_weight_bytes: int = 0,
) -> float | None:
    """(S_all · W_T + F_D · W_D) / N: weight bytes read per emitted token.

    S_all counts every target forward of decode, including target-only steps (d_s = 0), because each one
    reads W_T. For a baseline (one forward per token, no draft) this is W_T. None when nothing was emitted.
    """
    if emitted <= 0:
        return None
    return (target_forwards * target_weight_bytes + draft_forwards * draft_weight_bytes) / emitted


def bandwidth_efficiency(
    baseline_traffic_per_token: float | None, spec_traffic_per_token: float | None, extra_bytes: int | None
) -> float | None:
    """Weight bytes saved per emitted token for each extra GiB held: (W_T − spec traffic) / (extra / 2^30).

    Negative when speculation reads more than the baseline (a poor draft). None without extra memory.
    """
    if baseline_traffic_per_token is None or spec_traffic_per_token is None:
        return None
    if extra_bytes is None or extra_bytes <= 0:
        return None
    return (baseline_traffic_per_token - spec_traffic_per_token) / (extra_bytes / GIB)


def achieved_bytes_per_s(traffic_per_token: float | None, tokens_per_s: float | None) -> float | None:
    """Weight bytes read per second: traffic per token × tokens/s."""
    if traffic_per_token is None or tokens_per_s is None:
        return None
    return traffic_per_token * tokens_per_s


def bandwidth_fraction(achieved: float | None, copy_bandwidth: float | None) -> float | None:
    """Achieved bytes/s as a fraction of a measured device copy bandwidth (bytes/s)."""
    if achieved is None or copy_bandwidth is None or copy_bandwidth <= 0:
        return None
    return achieved / copy_bandwidth
