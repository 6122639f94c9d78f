"""A lean native implementation of the Llama family (Llama, Mistral, Qwen2, Qwen3 dense).

Why our own: speculative decoding lives or dies by per-step overhead, and the speculative loop needs a KV
cache that rolls back by moving a pointer. This module holds preallocated K/V tensors per layer and a
``length``; ``rollback`` only lowers ``length``. Projections are fused (QKV, gate+up) so one small step is
a handful of matmuls. Numerics follow transformers' LlamaForCausalLM (RMSNorm in float32, RoPE with the
checkpoint's rope parameters, GQA, optional qkv/o bias, tied or untied embeddings); Qwen3 adds an RMSNorm
over each head's query and key vectors before RoPE (``q_norm``/``k_norm``, transformers' Qwen3Attention).

Two caches live side by side: the single-stream one (``reset``/``forward``/``rollback``, the batch-1 loop)
and a batched one with a row per sequence (``batch_*``/``forward_rows``, ``engine.batched``). The batched
layout is [slots, kv_heads, capacity, head_dim] per layer with a length per row; see ``forward_rows`` for
why rows are padded rather than packed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F

from specmeter.engine.base import CacheLengths
from specmeter.metrics.records import ModelInfo

# The model types the native engine runs. Attention biases are not decided per type: q/k/v and o biases are
# used when the checkpoint has them (qwen2 always, llama/mistral with `attention_bias`), see _layer_tensors.
NATIVE_ARCHITECTURES = {"llama", "mistral", "qwen2", "qwen3"}
# Rope kinds whose frequencies depend on the position at run time; the native path does not implement them.
_DYNAMIC_ROPE = {"dynamic", "longrope"}


class NativeUnsupported(Exception):
    """Raised when a checkpoint needs features the native engine lacks; the loader then falls back."""


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMS norm as transformers' LlamaRMSNorm: normalise in float32, cast, then scale (the native model and
    the EAGLE head, running and training, all use this one)."""
    # Same order of operations as transformers' LlamaRMSNorm: normalise in float32, cast, then scale.
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding on the last dimension (its two halves rotated), as transformers' Llama."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class _Layer:
    __slots__ = (
        "down", "eps", "gate_up", "in_norm", "inter", "k_norm", "o", "o_bias", "post_norm", "q_norm", "qkv",
        "qkv_bias",
    )  # fmt: skip

    def __init__(self, tensors: dict[str, torch.Tensor], eps: float, inter: int) -> None:
        self.qkv = tensors["qkv"]
        self.qkv_bias = tensors.get("qkv_bias")
        self.o = tensors["o"]
        self.o_bias = tensors.get("o_bias")
        self.gate_up = tensors["gate_up"]
        self.down = tensors["down"]
        self.in_norm = tensors["in_norm"]
        self.post_norm = tensors["post_norm"]
        self.q_norm = tensors.get("q_norm")  # Qwen3: RMSNorm over each head's query / key vector
        self.k_norm = tensors.get("k_norm")
        self.eps = eps
        self.inter = inter


class NativeLlama(CacheLengths):
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
            if a + "q_norm.weight" in state:
                t["q_norm"] = get(a + "q_norm.weight")
                t["k_norm"] = get(a + "k_norm.weight")
            elif config.model_type == "qwen3":
                raise KeyError(a + "q_norm.weight")
            self.layers.append(_Layer(t, eps, int(config.intermediate_size)))
        self.eps = eps
        self._init_rope(config)
        self._k: list[torch.Tensor] = []
        self._v: list[torch.Tensor] = []
        self._length = 0
        # The batched cache: [slots, n_kv, capacity, head_dim] per layer, and a length per row.
        self._bk: list[torch.Tensor] = []
        self._bv: list[torch.Tensor] = []
        self._rows: list[int] = []
        # Layers whose input (the residual stream entering layer i; i = L: the last layer's output before the
        # final norm) each forward keeps for ``hidden_states()``: an EAGLE-3 head's auxiliary hidden states
        # (vLLM's ``aux_hidden_state_layers`` semantics). Keeping them costs references, no compute.
        self.capture: tuple[int, ...] = ()
        self._captured: list[torch.Tensor] = []

    def hidden_states(self) -> torch.Tensor:
        """The captured layers' inputs of the last forward, concatenated: [n, C·hidden] after ``forward``,
        [R, n, C·hidden] after ``forward_rows`` (every fed position, also with ``last_only``)."""
        if not self._captured:
            raise ValueError(f"{self.info.name}: no hidden states captured (set capture before a forward)")
        return torch.cat(self._captured, dim=-1)

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
        if self._cos.shape[0] >= capacity:
            return
        pos = torch.arange(capacity, dtype=torch.float)
        freqs = torch.outer(pos, self._inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self._cos = (emb.cos() * self._rope_scaling).to(device=self.device, dtype=self.dtype)
        self._sin = (emb.sin() * self._rope_scaling).to(device=self.device, dtype=self.dtype)

    def reset(self, capacity: int) -> None:
        self.check_context(capacity)
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
        self.check_rollback(length)
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
        captured: list[torch.Tensor] = []
        for i, (layer, k_cache, v_cache) in enumerate(zip(self.layers, self._k, self._v, strict=True)):
            if i in self.capture:
                captured.append(x)
            h = rms_norm(x, layer.in_norm, layer.eps)
            qkv = F.linear(h, layer.qkv, layer.qkv_bias)
            q, k, v = qkv.split((q_size, kv_size, kv_size), dim=-1)
            q, k = q.view(n, self.n_heads, self.head_dim), k.view(n, self.n_kv, self.head_dim)
            if layer.q_norm is not None and layer.k_norm is not None:
                q, k = rms_norm(q, layer.q_norm, layer.eps), rms_norm(k, layer.k_norm, layer.eps)
            q = apply_rope(q.transpose(0, 1), cos, sin)  # [H, n, d]
            k = apply_rope(k.transpose(0, 1), cos, sin)  # [KV, n, d]
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
            h = rms_norm(x, layer.post_norm, layer.eps)
            gate, up = F.linear(h, layer.gate_up).split(layer.inter, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer.down)
        if len(self.layers) in self.capture:
            captured.append(x)
        self._captured = captured
        self._length = end
        x = rms_norm(x, self.norm, self.eps)
        return F.linear(x, self.lm_head).float()

    # ------------------------------------------------------------------------------------- batched cache

    def batch_reset(self, slots: int, capacity: int) -> None:
        """Empty every row of the batched cache; room for ``slots`` rows of ``capacity`` tokens each."""
        self.check_context(capacity)
        self._rows = [0] * slots
        if self._bk and self._bk[0].shape[0] >= slots and self._bk[0].shape[2] >= capacity:
            return
        capacity = min(self.max_positions, (max(capacity, 256) + 255) & ~255)
        shape = (slots, self.n_kv, capacity, self.head_dim)
        # Zeros, not empty: a masked key still meets its value in the attention matmul (weight 0), and
        # 0 · NaN from uninitialised memory would be NaN. Everything written later is finite.
        self._bk = [torch.zeros(shape, device=self.device, dtype=self.dtype) for _ in self.layers]
        self._bv = [torch.zeros(shape, device=self.device, dtype=self.dtype) for _ in self.layers]
        self._rope_tables(capacity)

    def batch_reserve(self, capacity: int) -> None:
        """Grow every row to hold ``capacity`` tokens, keeping their contents (a longer request joined)."""
        if self._bk and self._bk[0].shape[2] >= capacity:
            return
        self.check_context(capacity)
        old_k, old_v, rows = self._bk, self._bv, self._rows
        self.batch_reset(len(rows), capacity)
        self._rows = rows
        used = max(rows, default=0)
        for new, old in zip(self._bk + self._bv, old_k + old_v, strict=True):
            new[:, :, :used] = old[:, :, :used]

    def rollback_row(self, row: int, length: int) -> None:
        self.check_rollback(length, row)
        self._rows[row] = length

    def move_row(self, src: int, dst: int) -> None:
        """Copy row ``src``'s valid prefix into row ``dst`` (the caller then treats ``src`` as free)."""
        if src == dst:
            return
        n = self._rows[src]
        for cache in self._bk + self._bv:
            cache[dst, :, :n] = cache[src, :, :n]
        self._rows[dst] = n

    def forward_rows(self, start: int, tokens: list[list[int]], *, last_only: bool = False) -> torch.Tensor:
        """Append ``tokens[r]`` to row ``start + r`` of the batched cache, all rows in one forward.

        Returns logits [R, n, V] with n = the longest row (a row's positions past its own tokens hold
        padding garbage), or [R, V] for each row's last token with ``last_only`` (prefill).

        Padding, not packing: rows are laid out [R, n] with their own positions (RoPE from each row's
        length) and a mask [R, 1, n, L] that lets token i of row r see keys 0 … len_r + i of its own row.
        A packed layout (all rows' tokens in one [ΣN] sequence) would need a variable-length attention
        kernel, which CPU builds of torch lack, and saves little here: in a speculative step every row
        feeds d+1 tokens with the same d except near a request's token limit, so the query padding is
        rare; the key padding (rows of different lengths) is masked attention work, small next to the
        weight reads that dominate decode. The projections see R·n rows either way.
        """
        rows = len(tokens)
        if rows == 0:
            raise ValueError("no rows to forward")
        if start < 0 or start + rows > len(self._rows):
            raise ValueError(f"rows {start}..{start + rows - 1} outside the batch of {len(self._rows)}")
        counts = [len(t) for t in tokens]
        if min(counts) < 1:
            raise ValueError("every row needs at least one token")
        n = max(counts)
        lens = self._rows[start : start + rows]
        end = max(lens) + n
        if end > self._bk[0].shape[2]:
            held = self._bk[0].shape[2]
            raise ValueError(f"{self.info.name}: batched KV cache holds {held} tokens per row")
        dev = self.device
        ids = torch.tensor([t + [t[-1]] * (n - len(t)) for t in tokens], dtype=torch.long, device=dev)
        # Key j is visible to token i of row r when j <= len_r + i: its own row's past and causal present.
        key_end = max(n0 + c for n0, c in zip(lens, counts, strict=True))
        uniform = min(lens) == max(lens)  # B = 1, or rows in step: slices instead of gathers and scatters
        pos = row_idx = None
        if uniform:
            l0 = lens[0]
            cos, sin = self._cos[l0 : l0 + n], self._sin[l0 : l0 + n]  # [n, d], the same for every row
            mask = None
            if n > 1:
                mask = torch.ones(n, key_end, dtype=torch.bool, device=dev).tril(l0)
        else:
            lens_t = torch.tensor(lens, dtype=torch.long, device=dev)
            pos = lens_t[:, None] + torch.arange(n, device=dev)[None, :]  # [R, n]
            cos, sin = self._cos[pos].unsqueeze(1), self._sin[pos].unsqueeze(1)  # [R, 1, n, d]
            mask = (torch.arange(key_end, device=dev)[None, None, :] <= pos[:, :, None]).unsqueeze(1)
            row_idx = torch.arange(start, start + rows, device=dev)[:, None]  # [R, 1]
        q_size, kv_size = self.n_heads * self.head_dim, self.n_kv * self.head_dim
        x = F.embedding(ids, self.embed)  # [R, n, hidden]
        captured: list[torch.Tensor] = []
        for i, (layer, k_cache, v_cache) in enumerate(zip(self.layers, self._bk, self._bv, strict=True)):
            if i in self.capture:
                captured.append(x)
            h = rms_norm(x, layer.in_norm, layer.eps)
            qkv = F.linear(h, layer.qkv, layer.qkv_bias)
            q, k, v = qkv.split((q_size, kv_size, kv_size), dim=-1)
            q = q.view(rows, n, self.n_heads, self.head_dim)
            k = k.view(rows, n, self.n_kv, self.head_dim)
            if layer.q_norm is not None and layer.k_norm is not None:
                q, k = rms_norm(q, layer.q_norm, layer.eps), rms_norm(k, layer.k_norm, layer.eps)
            q = apply_rope(q.transpose(1, 2), cos, sin)  # [R, H, n, d]
            k = apply_rope(k.transpose(1, 2), cos, sin)  # [R, KV, n, d]
            v = v.view(rows, n, self.n_kv, self.head_dim)
            if pos is None:
                k_cache[start : start + rows, :, l0 : l0 + n] = k
                v_cache[start : start + rows, :, l0 : l0 + n] = v.transpose(1, 2)
            else:
                # Each row's keys/values at its own positions: index [R, 1] x [R, n] -> [R, n, KV, d].
                k_cache[row_idx, :, pos] = k.transpose(1, 2)
                v_cache[row_idx, :, pos] = v
            attn = F.scaled_dot_product_attention(
                q,
                k_cache[start : start + rows, :, :key_end],
                v_cache[start : start + rows, :, :key_end],
                attn_mask=mask,
                scale=self.scale,
                enable_gqa=self.n_kv != self.n_heads,
            )  # [R, H, n, d]
            x = x + F.linear(attn.transpose(1, 2).reshape(rows, n, q_size), layer.o, layer.o_bias)
            h = rms_norm(x, layer.post_norm, layer.eps)
            gate, up = F.linear(h, layer.gate_up).split(layer.inter, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer.down)
        if len(self.layers) in self.capture:
            captured.append(x)
        self._captured = captured
        for r, c in enumerate(counts):
            self._rows[start + r] = lens[r] + c
        if last_only:
            x = x[torch.arange(rows, device=dev), torch.tensor(counts, device=dev) - 1]  # [R, hidden]
        x = rms_norm(x, self.norm, self.eps)
        return F.linear(x, self.lm_head).float()
