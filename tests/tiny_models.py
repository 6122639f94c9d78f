"""Build tiny Llama checkpoints on the fly for the tests: a shared BPE tokenizer, random targets, drafts.

Nothing can be downloaded where specmeter is built and tested, so the tests make their own models
(``tests/conftest.py``'s ``tiny`` fixture; any test folder imports this module as ``tiny_models``). A
*layer-skip* draft keeps the target's embeddings, its first and last layers and its head: in a randomly
initialised network each layer only nudges the residual stream, so such a draft agrees with the target
often enough to exercise every path of the speculative loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from specmeter.training import tokenizer as _tokenizer

_SAMPLE_TEXT = """\
The committee met on Tuesday to review the quarterly report and agreed to publish the summary next week.
She walked to the station, bought a coffee, and read the morning paper while the train was late again.
Preheat the oven, mix the flour with the butter, add two eggs and bake the dough for twenty minutes.
This Agreement shall commence on the Effective Date and continue until terminated in accordance with it.
The Supplier shall indemnify the Customer against all losses arising from any breach of this Agreement.
"Confidential Information" means all information disclosed by either party, whether in writing or orally.
Either party may terminate this Agreement by giving not less than thirty days' written notice to the other.
This Agreement shall be governed by and construed in accordance with the laws of England and Wales.
The children played in the garden until the sun went down and their mother called them in for dinner.
To reset the device, hold the power button for ten seconds and wait until the light turns green.
"""


def sample_corpus(repeat: int = 20) -> list[str]:
    lines = [line for line in _SAMPLE_TEXT.splitlines() if line]
    return [
        f"{line} {lines[(i * 7 + j) % len(lines)]}" for i in range(repeat) for j, line in enumerate(lines)
    ]


def build_tokenizer(out: Path, texts: Iterable[str] | None = None, vocab_size: int = 512) -> Any:
    """``specmeter train``'s byte-level BPE, trained on ``texts`` (default: :func:`sample_corpus`)."""
    return _tokenizer.build_tokenizer(out, sample_corpus() if texts is None else texts, vocab_size=vocab_size)


@dataclass(frozen=True)
class TinyConfig:
    hidden: int = 64
    layers: int = 4
    heads: int = 4
    kv_heads: int = 2
    intermediate: int = 172
    max_positions: int = 1024
    init_std: float = 0.02
    # >1 makes token embeddings dominate the residual stream, so fewer layers predict nearly the same tokens.
    embed_scale: float = 1.0
    tie_embeddings: bool = False
    attention_bias: bool = False
    model_type: str = "llama"
    # RMSNorm weights start at 1; random ones make a test notice a norm that is skipped or misapplied.
    random_norms: bool = False


def build_random_llama(out: Path, tokenizer: Any, cfg: TinyConfig, seed: int = 0) -> Path:
    """Save a randomly initialised Llama-family model (fp32 safetensors) plus ``tokenizer`` in ``out``."""
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    config = AutoConfig.for_model(
        cfg.model_type,
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden,
        intermediate_size=cfg.intermediate,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        num_key_value_heads=cfg.kv_heads,
        max_position_embeddings=cfg.max_positions,
        initializer_range=cfg.init_std,
        tie_word_embeddings=cfg.tie_embeddings,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **({"attention_bias": cfg.attention_bias} if cfg.model_type == "llama" else {}),
        # Qwen3's config defaults head_dim to 128 whatever the hidden size; keep the tiny model tiny.
        **({"head_dim": cfg.hidden // cfg.heads} if cfg.model_type == "qwen3" else {}),
    )
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        model.get_input_embeddings().weight.mul_(cfg.embed_scale)
        if cfg.random_norms:
            for name, param in model.named_parameters():
                if "norm" in name:
                    param.copy_(1.0 + 0.5 * torch.randn_like(param))
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


def build_layer_skip_draft(target_dir: Path, out: Path, keep: Iterable[int]) -> Path:
    """A draft made of the target's embeddings, head and the listed layers (same tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(target_dir), local_files_only=True)
    keep = list(keep)
    layers = model.model.layers
    model.model.layers = torch.nn.ModuleList([layers[i] for i in keep])
    for new_idx, layer in enumerate(model.model.layers):
        layer.self_attn.layer_idx = new_idx
    model.config.num_hidden_layers = len(keep)
    if hasattr(model.config, "layer_types") and model.config.layer_types is not None:
        model.config.layer_types = [model.config.layer_types[i] for i in keep]
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(target_dir), local_files_only=True).save_pretrained(str(out))
    return out
