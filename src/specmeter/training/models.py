"""Model shapes for training, building a fresh Llama from a shape, and exporting a trained model.

The presets are the bundled demo's models: a target large enough that verification pays on a CPU, a
general draft of about a tenth of its size (candidate A) and a tiny one of about a fiftieth (candidate B).
Exports are Hugging Face directories in float16 safetensors with the shared tokenizer beside them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch


@dataclass(frozen=True)
class ModelShape:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    tie_embeddings: bool = True
    max_positions: int = 1024
    rope_theta: float = 10000.0

    def with_overrides(self, **kw: Any) -> ModelShape:
        return replace(self, **{k: v for k, v in kw.items() if v is not None})


PRESETS: dict[str, ModelShape] = {
    "target": ModelShape(hidden=384, layers=10, heads=6, kv_heads=2, intermediate=1024, tie_embeddings=False),
    "draft-general": ModelShape(hidden=192, layers=3, heads=3, kv_heads=1, intermediate=512),
    "draft-tiny": ModelShape(hidden=96, layers=2, heads=3, kv_heads=1, intermediate=256),
}


def build_model(shape: ModelShape, tokenizer: Any, seed: int) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        max_position_embeddings=shape.max_positions,
        tie_word_embeddings=shape.tie_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": shape.rope_theta},
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config)


def load_trainable(path: Path) -> Any:
    """A Hugging Face checkpoint as a float32 model ready for training."""
    from transformers import AutoModelForCausalLM

    from specmeter.modeldir import ModelDirError, first_line

    try:
        return AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32, local_files_only=True)
    except Exception as e:  # transformers raises many types for a checkpoint it cannot load; one line
        raise ModelDirError(f"{path}: cannot be loaded for training ({first_line(e)})") from e


def export(model: Any, tokenizer: Any, out: Path, dtype: torch.dtype = torch.float16) -> Path:
    """Save model (cast to ``dtype``) and tokenizer as a Hugging Face directory."""
    import copy

    out.mkdir(parents=True, exist_ok=True)
    exported = copy.deepcopy(model).to(dtype)
    exported.config.dtype = dtype
    exported.generation_config.pad_token_id = tokenizer.pad_token_id
    exported.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


def param_count(model: Any) -> int:
    return int(sum(p.numel() for p in model.parameters()))
