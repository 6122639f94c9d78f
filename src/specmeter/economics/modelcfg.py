"""Architecture facts of a model from its config.json alone: parameters (total and active) and KV-cache shape.

``plan`` must size a 671B target on a laptop, so nothing is loaded and transformers is not imported: the
JSON is read by ``specmeter.modeldir`` (fast, and it works for architectures the installed transformers does
not know), and every problem is its one-line ``ModelDirError``.
Counts follow the decoder the supported families share — Llama, Mistral, Qwen2/3, Gemma, Phi-3, Granite,
OLMo: attention q/k/v/o, a gated MLP (gate, up, down), RMS norms, token embeddings and an LM head unless
it is tied — with the per-family layers of ``economics.families``: DeepSeek V2/V3's multi-head latent
attention and MoE (shared experts, first dense layers), Qwen2/3-MoE, Mixtral, Llama 4's interleaved MoE
layers and chunked attention, sliding-window and interleaved attention (Mistral, Gemma 2/3,
``layer_types``). A few layouts use a plain two-matrix MLP; they are listed in ``_PLAIN_MLP``.

Parameters are split into *linear* ones (the decoder blocks' matrices, which quantized formats compress)
and *other* ones (embeddings, LM head, norms, biases, routers, a vision tower, which quantized checkpoints
usually keep in bf16). *Active* parameters are the ones one decoded token reads: everything but the
routed experts it does not use, the input embedding table (one row is read) and a vision tower. Vendors
publish "active" counts with the embedding table (Qwen, Meta) or without it (DeepSeek's 37B); the weight
traffic of decoding is the count without it.

Multimodal configs are sized by their ``text_config``; Llama 4's vision tower (``llama4_vision_model``) is
counted too, because the published totals include it and vLLM loads it; other vision towers are not
counted and ``notes`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmeter.economics.families import (
    LayerKV,
    attention_shape,
    describe_windows,
    expected_distinct_experts,
    layer_windows,
    moe_layers,
    moe_shape,
)
from specmeter.metrics.memory import kv_bytes_for_context
from specmeter.modeldir import ModelDirError, read_json, read_model_config

__all__ = ["ArchFacts", "arch_from_config", "arch_from_dict"]

_PLAIN_MLP = {"gpt_neox", "gpt_bigcode", "starcoder2", "phi", "falcon", "opt", "gpt2"}
_FOUR_NORMS = {"gemma2", "gemma3", "gemma3_text"}  # pre and post norms around attention and MLP


@dataclass(frozen=True)
class ArchFacts:
    name: str
    model_type: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    experts: int  # routed experts per MoE layer; 1 for a dense model
    max_positions: int | None
    linear_params: int
    other_params: int
    experts_per_token: int  # routed experts one token uses (1 for a dense model)
    moe_layers: int  # layers with routed experts
    expert_params: int  # one routed expert's matrices
    shared_expert_params: int  # the always-on shared expert(s) of one MoE layer, 0 without
    active_linear_params: int  # matrices one decoded token reads
    active_other_params: int  # norms, biases, routers, LM head one decoded token reads
    embedding_params: int  # the input embedding table (vocab × hidden)
    vision_params: int  # a vision tower and projector (in other_params; never active)
    attention: str  # for people: "GQA 8 KV heads × 128", "MLA latent 512 + rope key 64", with windows
    kv_layers: tuple[LayerKV, ...]
    notes: tuple[str, ...] = ()

    @property
    def params(self) -> int:
        return self.linear_params + self.other_params

    @property
    def active_params(self) -> int:
        return self.active_linear_params + self.active_other_params

    @property
    def is_moe(self) -> bool:
        return self.moe_layers > 0

    def kv_bytes_per_token(self, bytes_per_elem: float, context: int | None = None) -> float:
        """KV bytes per token: every layer's, or with ``context`` the average over a sequence that long.

        Windowed layers (sliding or chunked attention) keep at most their window, so past it a token costs
        only the full-attention layers; without ``context`` no window is reached.
        """
        if context is None or context <= 0:
            return float(sum(layer.elements for layer in self.kv_layers)) * bytes_per_elem
        layers = [(layer.elements, layer.window) for layer in self.kv_layers]
        return kv_bytes_for_context(layers, context, bytes_per_elem) / context

    def verify_linear_params(self, positions: int) -> float:
        """Matrices one forward over ``positions`` tokens reads (a speculative verification: k + 1).

        Dense parts are read once whatever the number of positions; each MoE layer reads the union of the
        experts its positions picked, estimated under uniform routing (``expected_distinct_experts``).
        """
        if not self.is_moe or positions <= 1:
            return float(self.active_linear_params)
        union = expected_distinct_experts(self.experts, self.experts_per_token, positions)
        return self.active_linear_params + self.moe_layers * self.expert_params * (
            union - self.experts_per_token
        )


def _field(cfg: dict[str, Any], where: str, *names: str, default: Any = None) -> Any:
    for name in names:
        value = cfg.get(name)
        if value is not None:
            return value
    if default is not None:
        return default
    raise ModelDirError(f"{where}: missing field {names[0]!r} (needed to size the model)")


def _int(cfg: dict[str, Any], where: str, *names: str, default: int | None = None) -> int:
    value = _field(cfg, where, *names, default=default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ModelDirError(f"{where}: field {names[0]!r} must be a non-negative integer (got {value!r})")
    return value


def _llama4_vision_params(vision: dict[str, Any], text_hidden: int, where: str) -> int:
    """Llama 4's vision tower as transformers builds it (``Llama4VisionModel`` + the projector).

    Unfold-conv patch embedding (no bias), class and positional embeddings, pre/post LayerNorms, ViT layers
    (q/k/v/o and a two-matrix MLP, all with biases, two LayerNorms), the pixel-shuffle adapter MLP
    (intermediate → projector_input_dim → projector_output_dim, no biases) and the projector into the text
    model (vision_output_dim → hidden).
    """
    h, i = _int(vision, where, "hidden_size"), _int(vision, where, "intermediate_size")
    patch, image = _int(vision, where, "patch_size"), _int(vision, where, "image_size")
    channels = _int(vision, where, "num_channels", default=3)
    positions = (image // patch) ** 2 + 1 if patch else 0
    layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 4 * h
    adapter = (
        i * _int(vision, where, "projector_input_dim") + _int(vision, where, "projector_output_dim") ** 2
    )
    projector = _int(vision, where, "vision_output_dim") * text_hidden
    embeddings = channels * patch * patch * h + h + positions * h + 4 * h
    return embeddings + _int(vision, where, "num_hidden_layers") * layer + adapter + projector


def arch_from_dict(cfg: dict[str, Any], *, name: str = "model", where: str = "config.json") -> ArchFacts:
    """Facts from a parsed config; multimodal configs are sized by their ``text_config``."""
    notes: list[str] = []
    vision_params = 0
    if "hidden_size" not in cfg and isinstance(cfg.get("text_config"), dict):
        outer, text = cfg, cfg["text_config"]
        tie = outer.get("tie_word_embeddings")
        cfg = {**text, "tie_word_embeddings": text.get("tie_word_embeddings") if tie is None else tie}
        where += " (text_config)"
        vision = outer.get("vision_config")
        if isinstance(vision, dict) and vision.get("model_type") == "llama4_vision_model":
            vision_params = _llama4_vision_params(vision, _int(cfg, where, "hidden_size"), where)
        elif isinstance(vision, dict):
            notes.append("the vision tower is not counted (only Llama 4's is modelled)")
    model_type = str(cfg.get("model_type", "unknown"))
    hidden = _int(cfg, where, "hidden_size", "n_embd", "d_model")
    layers = _int(cfg, where, "num_hidden_layers", "n_layer", "num_layers")
    heads = _int(cfg, where, "num_attention_heads", "n_head")
    if heads == 0 or layers == 0 or hidden == 0:
        raise ModelDirError(f"{where}: hidden_size, num_hidden_layers and num_attention_heads must be > 0")
    kv_heads = _int(cfg, where, "num_key_value_heads", default=heads)
    head_dim = _int(cfg, where, "head_dim", default=hidden // heads)
    vocab = _int(cfg, where, "vocab_size")
    tied = bool(cfg.get("tie_word_embeddings", model_type in {"gemma", "gemma2", "gemma3_text"}))

    attn = attention_shape(cfg, hidden, heads, kv_heads, head_dim)
    mlp_matrices = 2 if model_type in _PLAIN_MLP else 3
    norms = (4 if model_type in _FOUR_NORMS else 2) * hidden
    is_moe = moe_layers(cfg, layers)
    n_moe = sum(is_moe)
    dense_size = _int(cfg, where, "intermediate_size_mlp", "intermediate_size", "n_inner", "ffn_dim")
    dense = mlp_matrices * hidden * dense_size
    linear = other = active_linear = active_other = 0
    experts, per_token, expert_params, shared_params = 1, 1, 0, 0
    if n_moe:
        expert_size = _int(cfg, where, "moe_intermediate_size", "intermediate_size")
        moe = moe_shape(cfg, hidden, mlp_matrices, expert_size)
        experts, per_token, expert_params = moe.experts, moe.per_token, moe.expert_linear
        shared_params = moe.shared_linear
        linear += n_moe * (moe.experts * moe.expert_linear + moe.shared_linear)
        active_linear += n_moe * (moe.per_token * moe.expert_linear + moe.shared_linear)
        other += n_moe * moe.router
        active_other += n_moe * moe.router
    linear += (layers - n_moe) * dense + layers * attn.linear
    active_linear += (layers - n_moe) * dense + layers * attn.linear
    other += layers * (attn.other + norms) + hidden  # + the final norm
    active_other += layers * (attn.other + norms) + hidden
    embedding = vocab * hidden
    other += embedding * (1 if tied else 2) + vision_params
    active_other += embedding  # the LM head (the tied table, or its own matrix)
    if _int(cfg, where, "num_nextn_predict_layers", default=0):
        notes.append(
            f"{cfg['num_nextn_predict_layers']} multi-token-prediction layer(s) not counted: DeepSeek's own "
            "draft (vLLM method deepseek_mtp), loaded only when used"
        )
    kv_layers = layer_windows(cfg, layers, attn.kv_elements)
    windows = describe_windows(kv_layers)
    max_positions = cfg.get("max_position_embeddings")
    return ArchFacts(
        name=name,
        model_type=model_type,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=vocab,
        tied=tied,
        experts=experts,
        max_positions=max_positions if isinstance(max_positions, int) else None,
        linear_params=linear,
        other_params=other,
        experts_per_token=per_token,
        moe_layers=n_moe,
        expert_params=expert_params,
        shared_expert_params=shared_params,
        active_linear_params=active_linear,
        active_other_params=active_other,
        embedding_params=embedding,
        vision_params=vision_params,
        attention=attn.label + (f", {windows}" if windows else ""),
        kv_layers=kv_layers,
        notes=tuple(notes),
    )


def arch_from_config(path: Path) -> ArchFacts:
    """Facts from a model directory (or its config.json); ModelDirError names the file on any problem."""
    if path.is_file():
        file, cfg = path, read_json(path, "config")
    else:
        file, cfg = path / "config.json", read_model_config(path)
    name = file.parent.name if file.name == "config.json" else file.stem
    return arch_from_dict(cfg, name=name, where=str(file))
