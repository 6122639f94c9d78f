"""A lean native implementation of the Llama family (Llama, Mistral, Qwen2) for batch-size-one decoding.

Why our own: speculative decoding lives or dies by per-step overhead, and the speculative loop needs a KV
cache that rolls back by moving a pointer. This module holds preallocated K/V tensors per layer and a
``length``; ``rollback`` only lowers ``length``. Projections are fused (QKV, gate+up) so one small step is
a handful of matmuls. Numerics follow transformers' LlamaForCausalLM (RMSNorm in float32, RoPE with the
checkpoint's rope parameters, GQA, optional qkv/o bias, tied or untied embeddings).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from specmeter.metrics.records import ModelInfo

# model_type -> (bias on q/k/v, bias on o); `attention_bias` in the config overrides for llama/mistral.
NATIVE_ARCHITECTURES = {"llama", "mistral", "qwen2"}
# Rope kinds whose frequencies depend on the position at run time; the native path does not implement them.
_DYNAMIC_ROPE = {"dynamic", "longrope"}


class NativeUnsupported(Exception):
    """Raised when a checkpoint needs features the native engine lacks; the loader then falls back."""


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    # Same order of operations as transformers' LlamaRMSNorm: normalise in float32, cast, then scale.
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class _Layer:
    __slots__ = ("down", "eps", "gate_up", "in_norm", "inter", "o", "o_bias", "post_norm", "qkv", "qkv_bias")

    def __init__(self, tensors: dict[str, torch.Tensor], eps: float, inter: int) -> None:
        self.qkv = tensors["qkv"]
        self.qkv_bias = tensors.get("qkv_bias")
        self.o = tensors["o"]
        self.o_bias = tensors.get("o_bias")
        self.gate_up = tensors["gate_up"]
        self.down = tensors["down"]
        self.in_norm = tensors["in_norm"]
        self.post_norm = tensors["post_norm"]
        self.eps = eps
        self.inter = inter


class NativeLlama:
    """A Llama-family causal LM with a rollback-able KV cache. Implements ``engine.base.CausalLM``."""

    def __init__(
        self,
        config: Any,
        state: Mapping[str, torch.Tensor],
        info: ModelInfo,
        device: torch.device,
        dtype: torch.dtype,
    ) -> None:
        self.info = info
        self.device = device
        self.dtype = dtype
        self.n_heads: int = config.num_attention_heads
        self.n_kv: int = getattr(config, "num_key_value_heads", None) or self.n_heads
        self.head_dim: int = getattr(config, "head_dim", None) or config.hidden_size // self.n_heads
        self.hidden: int = config.hidden_size
        self.max_positions: int = config.max_position_embeddings
        window = getattr(config, "sliding_window", None)
        if window is not None and getattr(config, "use_sliding_window", True):
            self.max_positions = min(self.max_positions, int(window))
        self.scale = 1.0 / math.sqrt(self.head_dim)
        eps = float(config.rms_norm_eps)

        def get(name: str) -> torch.Tensor:
            return state[name].to(device=device, dtype=dtype)

        self.embed = get("model.embed_tokens.weight")
        self.vocab_size = int(self.embed.shape[0])
        self.lm_head = get("lm_head.weight") if "lm_head.weight" in state else self.embed
        self.norm = get("model.norm.weight")
        self.layers: list[_Layer] = []
        for i in range(config.num_hidden_layers):
            p = f"model.layers.{i}."
            a, m = p + "self_attn.", p + "mlp."
            t = {
                "qkv": torch.cat(
                    [get(a + "q_proj.weight"), get(a + "k_proj.weight"), get(a + "v_proj.weight")]
                ),
                "o": get(a + "o_proj.weight"),
                "gate_up": torch.cat([get(m + "gate_proj.weight"), get(m + "up_proj.weight")]),
                "down": get(m + "down_proj.weight"),
                "in_norm": get(p + "input_layernorm.weight"),
                "post_norm": get(p + "post_attention_layernorm.weight"),
            }
            if a + "q_proj.bias" in state:
                t["qkv_bias"] = torch.cat(
                    [get(a + "q_proj.bias"), get(a + "k_proj.bias"), get(a + "v_proj.bias")]
                )
            if a + "o_proj.bias" in state:
                t["o_bias"] = get(a + "o_proj.bias")
            self.layers.append(_Layer(t, eps, int(config.intermediate_size)))
        self.eps = eps
        self._init_rope(config)
        self._k: list[torch.Tensor] = []
        self._v: list[torch.Tensor] = []
        self._length = 0

    def _init_rope(self, config: Any) -> None:
        params = getattr(config, "rope_parameters", None) or {}
        rope_type = params.get("rope_type", "default")
        if rope_type in _DYNAMIC_ROPE:
            raise NativeUnsupported(f"rope type {rope_type!r}")
        if rope_type == "default":
            theta = float(params.get("rope_theta", getattr(config, "rope_theta", 10000.0)))
            inv_freq = 1.0 / (theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.float) / self.head_dim))
            scaling = 1.0
        else:
            from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

            if rope_type not in ROPE_INIT_FUNCTIONS:
                raise NativeUnsupported(f"rope type {rope_type!r}")
            inv_freq, scaling = ROPE_INIT_FUNCTIONS[rope_type](config, torch.device("cpu"))
        self._inv_freq = inv_freq.float()
        self._rope_scaling = float(scaling)
        self._cos = torch.empty(0)
        self._sin = torch.empty(0)

    def _rope_tables(self, capacity: int) -> None:
        pos = torch.arange(capacity, dtype=torch.float)
        freqs = torch.outer(pos, self._inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self._cos = (emb.cos() * self._rope_scaling).to(device=self.device, dtype=self.dtype)
        self._sin = (emb.sin() * self._rope_scaling).to(device=self.device, dtype=self.dtype)

    @property
    def length(self) -> int:
        return self._length

    def reset(self, capacity: int) -> None:
        if capacity > self.max_positions:
            raise ValueError(
                f"{self.info.name}: {capacity} tokens exceed the model's context of {self.max_positions}"
            )
        self._length = 0
        if self._k and self._k[0].shape[1] >= capacity:
            return
        # Round up so a run with many similar requests allocates once.
        capacity = min(self.max_positions, (max(capacity, 256) + 255) & ~255)
        shape = (self.n_kv, capacity, self.head_dim)
        self._k = [torch.empty(shape, device=self.device, dtype=self.dtype) for _ in self.layers]
        self._v = [torch.empty(shape, device=self.device, dtype=self.dtype) for _ in self.layers]
        self._rope_tables(capacity)

    def rollback(self, length: int) -> None:
        if not 0 <= length <= self._length:
            raise ValueError(f"cannot roll back to {length} from {self._length}")
        self._length = length

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        n = int(ids.shape[0])
        start, end = self._length, self._length + n
        if not self._k or end > self._k[0].shape[1]:
            raise ValueError(
                f"{self.info.name}: KV cache holds {self._k[0].shape[1] if self._k else 0} tokens"
            )
        cos, sin = self._cos[start:end], self._sin[start:end]  # [n, head_dim]
        # Bottom-right aligned causal mask: new token i sees the cache and new tokens 0..i.
        mask = None
        if n > 1:
            mask = torch.ones(n, end, dtype=torch.bool, device=self.device).tril(start)
        q_size, kv_size = self.n_heads * self.head_dim, self.n_kv * self.head_dim
        x = F.embedding(ids, self.embed)  # [n, hidden]
        for layer, k_cache, v_cache in zip(self.layers, self._k, self._v, strict=True):
            h = _rms_norm(x, layer.in_norm, layer.eps)
            qkv = F.linear(h, layer.qkv, layer.qkv_bias)
            q, k, v = qkv.split((q_size, kv_size, kv_size), dim=-1)
            q = _rotate(q.view(n, self.n_heads, self.head_dim).transpose(0, 1), cos, sin)  # [H, n, d]
            k = _rotate(k.view(n, self.n_kv, self.head_dim).transpose(0, 1), cos, sin)  # [KV, n, d]
            k_cache[:, start:end] = k
            v_cache[:, start:end] = v.view(n, self.n_kv, self.head_dim).transpose(0, 1)
            attn = F.scaled_dot_product_attention(
                q.unsqueeze(0),
                k_cache[:, :end].unsqueeze(0),
                v_cache[:, :end].unsqueeze(0),
                attn_mask=mask,
                scale=self.scale,
                enable_gqa=self.n_kv != self.n_heads,
            )  # [1, H, n, d]
            x = x + F.linear(attn[0].transpose(0, 1).reshape(n, q_size), layer.o, layer.o_bias)
            h = _rms_norm(x, layer.post_norm, layer.eps)
            gate, up = F.linear(h, layer.gate_up).split(layer.inter, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer.down)
        self._length = end
        x = _rms_norm(x, self.norm, self.eps)
        return F.linear(x, self.lm_head).float()
