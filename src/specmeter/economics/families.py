"""Per-family layer math over a parsed config.json: attention (and its KV cache), MLP or MoE, per layer.

Pure functions of the config dict (``modelcfg`` assembles them); every field name below is the one the
family's Hugging Face config uses (transformers' ``configuration_*.py``, read for each family):

- **Attention.** GQA/MHA: q, k, v, o with ``num_key_value_heads × head_dim`` outputs for k and v; the KV
  cache holds a key and a value per KV head. *Multi-head latent attention* (DeepSeek V2/V3:
  ``kv_lora_rank``, ``q_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``): q is
  ``q_a`` (hidden → q_lora_rank) + norm + ``q_b`` (→ heads × (nope + rope)), or one ``q_proj`` without
  ``q_lora_rank``; ``kv_a_proj_with_mqa`` (hidden → kv_lora_rank + rope) + norm, ``kv_b`` (kv_lora_rank →
  heads × (nope + v)), ``o`` (heads × v → hidden). The cache holds the compressed latent and the shared
  rope key, ``kv_lora_rank + qk_rope_head_dim`` elements per layer and token — what vLLM and SGLang keep —
  not per-head keys and values.
- **Which tokens a layer keeps.** ``layer_types`` when present (``full_attention``, ``sliding_attention``
  with ``sliding_window``, ``chunked_attention`` with ``attention_chunk_size``); Gemma 2 alternates sliding
  and full from layer 0 and Gemma 3 has five sliding layers per full one (``sliding_window_pattern``) when
  a config predates ``layer_types``; Llama 4 chunks the attention of its RoPE layers (``no_rope_layers[i]
  = 1``, by default three of every four) into ``attention_chunk_size`` blocks and keeps the NoPE layers
  global; a plain ``sliding_window`` (Mistral 7B v0.1) windows every layer unless ``use_sliding_window``
  is false (Qwen2/3 ship a window they do not use). A windowed layer holds at most its window of tokens,
  a chunked one at most a chunk.
- **MoE layers.** DeepSeek: layer i ≥ ``first_k_dense_replace`` with i % ``moe_layer_freq`` == 0 has
  ``n_routed_experts`` experts of ``moe_intermediate_size``, ``num_experts_per_tok`` per token, and
  ``n_shared_experts`` always-on experts of the same size; the rest are dense MLPs of
  ``intermediate_size``. Qwen2/3-MoE: every ``decoder_sparse_step``-th layer not in ``mlp_only_layers``,
  ``num_experts`` of ``moe_intermediate_size`` (Qwen2-MoE adds a gated shared expert of
  ``shared_expert_intermediate_size``). Llama 4: the layers in ``moe_layers`` (default every
  ``interleave_moe_layer_step``-th), ``num_local_experts`` of ``intermediate_size`` plus one shared expert
  of the same size; its dense layers use ``intermediate_size_mlp``. Mixtral: every layer,
  ``num_local_experts`` of ``intermediate_size``. Routers are ``hidden × experts`` (DeepSeek's
  ``noaux_tc`` routing adds a per-expert bias).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specmeter.metrics.memory import kv_elements_per_token, mla_kv_elements_per_token

__all__ = [
    "Attention",
    "LayerKV",
    "MoEShape",
    "attention_shape",
    "describe_windows",
    "expected_distinct_experts",
    "layer_windows",
    "moe_layers",
    "moe_shape",
]

Config = Mapping[str, Any]


@dataclass(frozen=True)
class LayerKV:
    """The KV cache of one layer: elements per token, and the most tokens it keeps (None: all of them)."""

    elements: int
    window: int | None = None
    kind: str = "full"  # full, sliding, chunked


@dataclass(frozen=True)
class Attention:
    """One layer's attention: its parameters (matrices / norms and biases) and its KV elements per token."""

    linear: int
    other: int
    kv_elements: int
    label: str  # for people: "GQA 8 KV heads × 128", "MLA latent 512 + rope key 64"


@dataclass(frozen=True)
class MoEShape:
    experts: int  # routed experts per MoE layer
    per_token: int  # routed experts each token uses
    expert_linear: int  # parameters of one routed expert
    shared_linear: int  # the always-on shared expert(s), 0 without
    router: int  # router (and its bias / the shared expert's gate): kept unquantized


def _int(cfg: Config, name: str, default: int = 0) -> int:
    value = cfg.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def attention_shape(cfg: Config, hidden: int, heads: int, kv_heads: int, head_dim: int) -> Attention:
    """Parameters and KV elements of one attention layer; MLA when the config has ``kv_lora_rank``."""
    kv_lora = _int(cfg, "kv_lora_rank")
    if kv_lora:
        rope, nope = _int(cfg, "qk_rope_head_dim"), _int(cfg, "qk_nope_head_dim")
        v_dim, q_lora = _int(cfg, "v_head_dim", nope), _int(cfg, "q_lora_rank")
        q_out = heads * (nope + rope)
        q = hidden * q_lora + q_lora * q_out if q_lora else hidden * q_out
        linear = q + hidden * (kv_lora + rope) + kv_lora * heads * (nope + v_dim) + heads * v_dim * hidden
        return Attention(
            linear=linear,
            other=q_lora + kv_lora,  # the latents' norms
            kv_elements=mla_kv_elements_per_token(kv_lora, rope),
            label=f"MLA latent {kv_lora} + rope key {rope}",
        )
    q_out, kv_out = heads * head_dim, kv_heads * head_dim
    other = 0
    if cfg.get("attention_bias") or cfg.get("model_type") in ("qwen2", "qwen2_moe"):
        other += q_out + 2 * kv_out
    if cfg.get("model_type") in ("qwen3", "qwen3_moe", "gemma3_text"):
        other += 2 * head_dim  # q_norm and k_norm over each head
    kind = "MHA" if kv_heads == heads else "GQA"
    return Attention(
        linear=2 * hidden * q_out + 2 * hidden * kv_out,
        other=other,
        kv_elements=kv_elements_per_token(kv_heads, head_dim),
        label=f"{kind} {kv_heads} KV heads × {head_dim}",
    )


def _llama4_rope_layers(cfg: Config, layers: int) -> list[bool]:
    flags = cfg.get("no_rope_layers")
    if isinstance(flags, list) and len(flags) == layers:
        return [bool(f) for f in flags]  # despite the name, 1 = this layer uses RoPE (and chunks)
    interval = _int(cfg, "no_rope_layer_interval", 4) or 4
    return [(i + 1) % interval != 0 for i in range(layers)]


def layer_windows(cfg: Config, layers: int, kv_elements: int) -> tuple[LayerKV, ...]:
    """What each layer's KV cache keeps (see the module docstring for the rules per family)."""
    window = _int(cfg, "sliding_window") or None
    chunk = _int(cfg, "attention_chunk_size") or None
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        out = []
        for kind in types:
            if kind == "sliding_attention" and window:
                out.append(LayerKV(kv_elements, window, "sliding"))
            elif kind == "chunked_attention" and chunk:
                out.append(LayerKV(kv_elements, chunk, "chunked"))
            else:
                out.append(LayerKV(kv_elements))
        return tuple(out)
    model_type = cfg.get("model_type")
    if model_type in ("llama4", "llama4_text") and chunk:
        return tuple(
            LayerKV(kv_elements, chunk, "chunked") if rope else LayerKV(kv_elements)
            for rope in _llama4_rope_layers(cfg, layers)
        )
    if window and model_type == "gemma2":
        return tuple(LayerKV(kv_elements, window, "sliding") if i % 2 == 0 else LayerKV(kv_elements)
                     for i in range(layers))  # fmt: skip
    if window and model_type in ("gemma3", "gemma3_text"):
        pattern = _int(cfg, "sliding_window_pattern", 6) or 6
        return tuple(LayerKV(kv_elements, window, "sliding") if (i + 1) % pattern else LayerKV(kv_elements)
                     for i in range(layers))  # fmt: skip
    if window and cfg.get("use_sliding_window", True) is not False:
        return tuple(LayerKV(kv_elements, window, "sliding") for _ in range(layers))
    return tuple(LayerKV(kv_elements) for _ in range(layers))


def moe_layers(cfg: Config, layers: int) -> list[bool]:
    """Which layers are mixture-of-experts layers (all False for a dense model)."""
    if _int(cfg, "n_routed_experts"):  # DeepSeek
        first, freq = _int(cfg, "first_k_dense_replace"), _int(cfg, "moe_layer_freq", 1) or 1
        return [i >= first and i % freq == 0 for i in range(layers)]
    if _int(cfg, "num_experts") > 1:  # Qwen2/3-MoE
        step = _int(cfg, "decoder_sparse_step", 1) or 1
        dense = {i for i in cfg.get("mlp_only_layers") or () if isinstance(i, int)}
        return [i not in dense and (i + 1) % step == 0 for i in range(layers)]
    if _int(cfg, "num_local_experts") > 1:
        if cfg.get("model_type") in ("llama4", "llama4_text"):
            listed = cfg.get("moe_layers")
            if isinstance(listed, list):
                return [i in listed for i in range(layers)]
            step = _int(cfg, "interleave_moe_layer_step", 1) or 1
            return [(i + 1) % step == 0 for i in range(layers)]
        return [True] * layers  # Mixtral and the like
    return [False] * layers


def moe_shape(cfg: Config, hidden: int, mlp_matrices: int, expert_size: int) -> MoEShape:
    """The routed and shared experts of one MoE layer (``expert_size``: one expert's intermediate size)."""
    experts = _int(cfg, "n_routed_experts") or _int(cfg, "num_experts") or _int(cfg, "num_local_experts")
    per_token = _int(cfg, "num_experts_per_tok", 1) or 1
    expert = mlp_matrices * hidden * expert_size
    router = hidden * experts
    shared = 0
    if _int(cfg, "n_shared_experts"):  # DeepSeek: n always-on experts of the routed size
        shared = _int(cfg, "n_shared_experts") * expert
        if cfg.get("topk_method") == "noaux_tc":
            router += experts  # e_score_correction_bias
    elif _int(cfg, "shared_expert_intermediate_size"):  # Qwen2-MoE: one gated shared expert
        shared = mlp_matrices * hidden * _int(cfg, "shared_expert_intermediate_size")
        router += hidden
    elif cfg.get("model_type") in ("llama4", "llama4_text"):
        shared = expert
    return MoEShape(experts, per_token, expert, shared, router)


def expected_distinct_experts(experts: int, per_token: int, positions: int) -> float:
    """Experts a verification of ``positions`` tokens reads in one MoE layer, routing taken as uniform.

    Each token picks ``per_token`` of ``experts``: a given expert is missed by one token with probability
    1 − per_token/experts, by all of them with that to the power ``positions``, so the expected number read
    is experts · (1 − (1 − per_token/experts)^positions) — between per_token (one position) and
    min(experts, positions · per_token). Real routers correlate neighbouring tokens, which reads fewer:
    this is the uniform-routing estimate, an upper end.
    """
    if experts <= 0 or positions <= 0:
        return 0.0
    return experts * (1.0 - (1.0 - min(per_token, experts) / experts) ** positions)


def describe_windows(layers: Sequence[LayerKV]) -> str:
    """A short description of the layers' windows: '', 'sliding 4096 on 32/32 layers', ..."""
    parts = []
    for kind in ("sliding", "chunked"):
        windowed = [layer for layer in layers if layer.kind == kind]
        if windowed:
            sizes = sorted({layer.window for layer in windowed if layer.window})
            parts.append(f"{kind} {'/'.join(map(str, sizes))} on {len(windowed)}/{len(layers)} layers")
    return ", ".join(parts)
