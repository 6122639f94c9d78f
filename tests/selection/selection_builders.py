"""Builders for the selection tests: synthetic runs with known acceptance and costs, and model directories.

Synthetic runs follow a known cost model exactly, so every prediction has a value it must hit:

* acceptance: per step, P(a_s = j) is that of i.i.d. acceptance with β = 1/2 (a block of 2^k steps holds
  exactly 2^{k-j-1} steps accepting j < k and one accepting all k), or β = 1 (every step accepts all k);
* time: each speculative step costs k·t_D(1) + t_T(k+1) + o_0 + o_1·k, each baseline step t_T(1) + o_0,
  plus the same TTFT on both sides;
* every request emits the same number of decode tokens at every k, as a real greedy run does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from specmeter.metrics.records import CostCurve, ModelInfo, RequestRecord, RunRecord, StepRecord

# t_T(n) = 10 + 2(n-1) ms, t_D(1) = 1 ms; engine overhead 1 ms per forward + 0.5 ms per drafted token
CURVE = CostCurve(target_s=tuple((10 + 2 * (n - 1)) / 1000 for n in range(1, 10)), draft_s=0.001, repeats=5)
O0, O1 = 0.001, 0.0005
TTFT = 0.05

TARGET = ModelInfo("target", "/m/target", "LlamaForCausalLM", 1000, 4000, 64, "float32", 4, 2, 8)
DRAFT = ModelInfo("draft", "/m/draft", "LlamaForCausalLM", 100, 400, 16, "float32", 1, 2, 8)
DRAFT_B = ModelInfo("draft_b", "/m/draft_b", "LlamaForCausalLM", 200, 800, 32, "float32", 2, 2, 8)


def step_time(k: int, curve: CostCurve = CURVE) -> float:
    return k * curve.draft_s + curve.t_target(k + 1) + O0 + O1 * k


def block(k: int, beta: float) -> list[int]:
    """Accepted counts a_s of one block of steps with exact i.i.d. proportions (β = 1/2 or 1)."""
    if beta == 1.0:
        return [k]
    assert beta == 0.5
    return [j for j in range(k) for _ in range(2 ** (k - j - 1))] + [k]


def block_tokens(k: int, beta: float) -> int:
    return sum(a + 1 for a in block(k, beta))


def spec_request(rid: str, category: str, k: int, beta: float, tokens: int) -> RequestRecord:
    """A request that emits ``tokens`` decode tokens (a multiple of the block's) at draft length k."""
    per_block = block_tokens(k, beta)
    assert tokens % per_block == 0, (tokens, per_block)
    accepted = block(k, beta) * (tokens // per_block)
    steps = tuple(StepRecord(k, a, a + 1, 0.0, 0.0, k) for a in accepted)
    return RequestRecord(
        id=rid, category=category, prompt_tokens=10, output_tokens=tokens + 1,
        latency_s=TTFT + len(steps) * step_time(k), ttft_s=TTFT, prefill_s=TTFT, steps=steps,
    )  # fmt: skip


def base_request(rid: str, category: str, tokens: int) -> RequestRecord:
    steps = tuple(StepRecord(0, 0, 1, 0.0, 0.0, 0) for _ in range(tokens))
    return RequestRecord(
        id=rid, category=category, prompt_tokens=10, output_tokens=tokens + 1,
        latency_s=TTFT + tokens * (CURVE.t_target(1) + O0), ttft_s=TTFT, prefill_s=TTFT, steps=steps,
    )  # fmt: skip


# (id, category, β, decode tokens): tokens divisible by every block size for k = 1..4
# (β = 1/2 blocks emit 2^{k+1} − 1 tokens: 3, 7, 15, 31 -> lcm 3255; β = 1 blocks emit k+1 -> lcm 60)
REQUESTS = (
    ("g1", "general/chat", 0.5, 3255),
    ("g2", "general/chat", 0.5, 3255),
    ("l1", "legal/nda", 1.0, 60),
    ("l2", "legal/nda", 1.0, 120),
)


def run(k: int, draft: ModelInfo | None = DRAFT, requests: Any = REQUESTS) -> RunRecord:
    if draft is None or k == 0:
        recs = tuple(base_request(rid, cat, n) for rid, cat, _, n in requests)
        return RunRecord(TARGET, None, 0, 0.0, 1.0, recs, CURVE)
    recs = tuple(spec_request(rid, cat, k, beta, n) for rid, cat, beta, n in requests)
    return RunRecord(TARGET, draft, k, 0.0, 1.0, recs, CURVE)


def expected_speedup_decode(k: int, beta: float) -> float:
    """E_meas decode-only of the synthetic run: τ(k)·(t_T(1) + o_0) / step time."""
    tau = sum(beta**j for j in range(k + 1))
    return tau * (CURVE.t_target(1) + O0) / step_time(k)


# ---------------------------------------------------------------------------------- model directories

CORPUS = [
    "The Supplier shall indemnify the Customer against all losses arising from any breach.",
    "Either party may terminate this Agreement by giving thirty days written notice.",
    "She walked to the station, bought a coffee and read the morning paper.",
    "Preheat the oven, mix the flour with the butter and bake for twenty minutes.",
] * 20
SPECIALS = ["<unk>", "<s>", "</s>", "<pad>"]


def train_tokenizer(vocab_size: int = 320) -> Tokenizer:
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )  # fmt: skip
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def permuted(tok: Tokenizer, a: int, b: int) -> Tokenizer:
    """The same tokenizer with the ids of two regular tokens swapped."""
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    inverse = {i: t for t, i in vocab.items()}
    vocab[inverse[a]], vocab[inverse[b]] = b, a
    return Tokenizer.from_str(json.dumps(data))


def write_model(
    path: Path,
    tok: Tokenizer,
    *,
    hidden: int = 16,
    layers: int = 2,
    rows: int | None = None,
    max_positions: int = 512,
    eos: str = "</s>",
    chat_template: str | None = None,
    config: dict[str, Any] | None = None,
    weights: bool = True,
) -> Path:
    """A Hugging Face-style model directory with zero weights: embedding rows × hidden + layers × hidden²."""
    path.mkdir(parents=True, exist_ok=True)
    rows = rows if rows is not None else tok.get_vocab_size()
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": rows,
        "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": max_positions,
        "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": tok.token_to_id(eos),
    }  # fmt: skip
    cfg.update(config or {})
    (path / "config.json").write_text(json.dumps(cfg))
    tok.save(str(path / "tokenizer.json"))
    tok_cfg: dict[str, Any] = {
        "bos_token": "<s>",
        "eos_token": eos,
        "unk_token": "<unk>",
        "pad_token": "<pad>",
    }
    if chat_template is not None:
        tok_cfg["chat_template"] = chat_template
    (path / "tokenizer_config.json").write_text(json.dumps(tok_cfg))
    if weights:
        tensors = {"model.embed_tokens.weight": np.zeros((rows, hidden), dtype=np.float32)}
        for i in range(layers):
            tensors[f"model.layers.{i}.mlp.weight"] = np.zeros((hidden, hidden), dtype=np.float32)
        save_file(tensors, str(path / "model.safetensors"))
    return path


def params(rows: int, hidden: int = 16, layers: int = 2) -> int:
    return rows * hidden + layers * hidden * hidden
