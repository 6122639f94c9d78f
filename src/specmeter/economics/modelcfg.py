"""Architecture facts of a model from its config.json alone: parameter counts and KV-cache shape.

``plan`` must size a 70B target on a laptop, so nothing is loaded and transformers is not imported: the
JSON is read directly (fast, and it works for architectures the installed transformers does not know).
Counts follow the Llama-style decoder that the supported families share (Llama, Mistral, Qwen2/3,
Gemma, Phi-3, Granite, OLMo, Mixtral and Qwen MoE): attention q/k/v/o, a gated MLP (gate, up, down) or
an MoE of such MLPs, RMS norms, token embeddings and an LM head unless it is tied. A few layouts use
a plain two-matrix MLP; they are listed in ``_PLAIN_MLP``.

Parameters are split into *linear* ones (the decoder blocks' matrices, which quantized formats
compress) and *other* ones (embeddings, LM head, norms, biases, routers, which quantized checkpoints
usually keep in bf16).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmeter.metrics.memory import kv_bytes_per_token

__all__ = ["ArchFacts", "ConfigError", "arch_from_config", "arch_from_dict"]

_PLAIN_MLP = {"gpt_neox", "gpt_bigcode", "starcoder2", "phi", "falcon", "opt", "gpt2"}
_QKV_BIAS = {"qwen2", "qwen2_moe"}


class ConfigError(ValueError):
    """A config.json that cannot be sized; the message names the file and the field."""


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
    experts: int  # 1 for a dense model
    max_positions: int | None
    linear_params: int
    other_params: int

    @property
    def params(self) -> int:
        return self.linear_params + self.other_params

    def kv_bytes_per_token(self, bytes_per_elem: float) -> float:
        return float(kv_bytes_per_token(self.layers, self.kv_heads, self.head_dim, 1)) * bytes_per_elem


def _field(cfg: dict[str, Any], where: str, *names: str, default: Any = None) -> Any:
    for name in names:
        value = cfg.get(name)
        if value is not None:
            return value
    if default is not None:
        return default
    raise ConfigError(f"{where}: missing field {names[0]!r} (needed to size the model)")


def _int(cfg: dict[str, Any], where: str, *names: str, default: int | None = None) -> int:
    value = _field(cfg, where, *names, default=default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where}: field {names[0]!r} must be a non-negative integer (got {value!r})")
    return value


def arch_from_dict(cfg: dict[str, Any], *, name: str = "model", where: str = "config.json") -> ArchFacts:
    """Facts from a parsed config; multimodal configs are sized by their ``text_config``."""
    if "hidden_size" not in cfg and isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg["text_config"], "tie_word_embeddings": cfg.get("tie_word_embeddings")}
        where += " (text_config)"
    model_type = str(cfg.get("model_type", "unknown"))
    hidden = _int(cfg, where, "hidden_size", "n_embd", "d_model")
    layers = _int(cfg, where, "num_hidden_layers", "n_layer", "num_layers")
    heads = _int(cfg, where, "num_attention_heads", "n_head")
    if heads == 0 or layers == 0 or hidden == 0:
        raise ConfigError(f"{where}: hidden_size, num_hidden_layers and num_attention_heads must be > 0")
    kv_heads = _int(cfg, where, "num_key_value_heads", default=heads)
    head_dim = _int(cfg, where, "head_dim", default=hidden // heads)
    vocab = _int(cfg, where, "vocab_size")
    tied = bool(cfg.get("tie_word_embeddings", model_type in {"gemma", "gemma2", "gemma3_text"}))
    experts = _int(cfg, where, "num_local_experts", "num_experts", default=1) or 1

    q_out, kv_out = heads * head_dim, kv_heads * head_dim
    attention = hidden * q_out + 2 * hidden * kv_out + q_out * hidden
    mlp_matrices = 2 if model_type in _PLAIN_MLP else 3
    other_per_layer = 2 * hidden  # input and post-attention norms
    if cfg.get("attention_bias") or model_type in _QKV_BIAS:
        other_per_layer += q_out + 2 * kv_out
    if experts > 1:
        expert_size = _int(cfg, where, "moe_intermediate_size", "intermediate_size")
        mlp = experts * mlp_matrices * hidden * expert_size
        other_per_layer += hidden * experts  # router
        shared = cfg.get("shared_expert_intermediate_size")
        if isinstance(shared, int) and shared > 0:
            mlp += mlp_matrices * hidden * shared
            other_per_layer += hidden  # the shared expert's gate
    else:
        mlp = mlp_matrices * hidden * _int(cfg, where, "intermediate_size", "n_inner", "ffn_dim")
    embeddings = vocab * hidden * (1 if tied else 2)
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
        linear_params=layers * (attention + mlp),
        other_params=layers * other_per_layer + embeddings + hidden,  # + the final norm
    )


def arch_from_config(path: Path) -> ArchFacts:
    """Facts from a model directory (or its config.json); ConfigError names the file on any problem."""
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(f"{path}: no config.json (expected a Hugging Face model directory)")
    try:
        cfg = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ConfigError(f"{file}:{e.lineno}: invalid JSON ({e.msg})") from e
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{file}: unreadable ({e})") from e
    if not isinstance(cfg, dict):
        raise ConfigError(f"{file}: expected a JSON object")
    name = file.parent.name if file.name == "config.json" else file.stem
    return arch_from_dict(cfg, name=name, where=str(file))
