"""Train an EAGLE-3 head from a target on domain prompts (``specmeter distill --method eagle``).

The recipe is ``speculators`` 0.9.0's (PyPI wheel; ``speculators/models/eagle3/core.py``
``Eagle3DraftModel.forward``, ``data.py`` ``shift_batch``, ``metrics.py`` ``align_for_step`` and the
defaults of ``train/config/schema.py``: loss ``kl_div``, ``ttt_steps`` 3, ``ttt_step_loss_decay`` 1.0),
rewritten for a CPU and the native engine:

1. Teacher sequences: the target continues domain prompts greedily (``engine.batched``, k = 0). Their
   token ids are appended to ``sequences.jsonl`` as they are made (resumable).
2. Each training step runs the native target (no gradients) over a batch of sequences, keeping the inputs
   of its layers ``aux_layers`` (``NativeLlama.capture``) and its logits: the head's inputs and its labels.
3. Shifted as in ``shift_batch``: head index i gets (h_i, x_{i+1}) at position i + 1 and is scored against
   the target's distribution at position i + 1 (that of x_{i+2}). Test-time training unrolls 3 steps: step
   j ≥ 1 feeds the head's own output of step j-1 at index i with the true token x_{i+1+j} (teacher forcing),
   attends to the step-0 keys at indices ≤ i and to its own chain's keys at index i (speculators'
   ``create_combined_mask_mod`` and ``extend_dense_mask_for_draft_tokens``), and is scored against the
   target at index i + j. The loss is KL(p_target ‖ q_head) averaged over positions, summed over steps.
4. The embeddings and the LM head are the target's, frozen (speculators freezes both); ``fc``, the decoder
   layer and the head's final norm train. The export stores only the head's own tensors (fp16) in the
   speculators format (``modeldir.head``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from specmeter.engine.llama import apply_rope, rms_norm
from specmeter.training.loop import TrainConfig, TrainResult, run_training

__all__ = [
    "HeadShape",
    "TrainableHead",
    "default_aux_layers",
    "eagle_loss",
    "export_head",
    "head_config",
    "make_sequences",
    "train_head",
]

TTT_STEPS = 3  # speculators 0.9.0 LossArgs.ttt_steps default


def default_aux_layers(num_layers: int) -> tuple[int, ...]:
    """speculators' ``resolve_target_layer_ids`` default (also vLLM's): (2, L // 2, L - 3), made distinct
    and in range for shallow targets."""
    ids = [2, num_layers // 2, num_layers - 3]
    out = sorted({min(max(i, 0), num_layers) for i in ids})
    return tuple(out)


@dataclass(frozen=True)
class HeadShape:
    """The head's decoder layer; attention as the target's (heads, KV heads, head dim), a chosen MLP width."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    rms_norm_eps: float
    rope_theta: float
    max_positions: int
    aux_layers: tuple[int, ...]

    @classmethod
    def of_target(
        cls, config: dict[str, Any], intermediate: int | None = None, aux_layers: Sequence[int] | None = None
    ) -> HeadShape:
        hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
        rope = config.get("rope_parameters") or {}
        return cls(
            hidden=hidden,
            heads=heads,
            kv_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(config.get("head_dim") or hidden // heads),
            intermediate=int(intermediate or config["intermediate_size"]),
            vocab=int(config["vocab_size"]),
            rms_norm_eps=float(config.get("rms_norm_eps", 1e-6)),
            rope_theta=float(rope.get("rope_theta", config.get("rope_theta", 10000.0))),
            max_positions=int(config.get("max_position_embeddings", 4096)),
            aux_layers=tuple(aux_layers or default_aux_layers(int(config["num_hidden_layers"]))),
        )


class TrainableHead(torch.nn.Module):
    """The EAGLE-3 head as trainable parameters under speculators' names (``state_dict`` is the format)."""

    embed: torch.Tensor
    lm_head: torch.Tensor
    inv_freq: torch.Tensor

    def __init__(self, shape: HeadShape, embed: torch.Tensor, lm_head: torch.Tensor, seed: int = 0) -> None:
        super().__init__()
        self.shape = shape
        h, q, kv, inter = (
            shape.hidden,
            shape.heads * shape.head_dim,
            shape.kv_heads * shape.head_dim,
            shape.intermediate,
        )
        g = torch.Generator().manual_seed(seed)

        def lin(out: int, inp: int) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.randn(out, inp, generator=g) * 0.02)

        def ones(n: int) -> torch.nn.Parameter:
            return torch.nn.Parameter(torch.ones(n))

        a = len(shape.aux_layers)
        self.params = torch.nn.ParameterDict()
        named = {
            "fc.weight": lin(h, a * h),
            "layers.0.self_attn.q_proj.weight": lin(q, 2 * h),
            "layers.0.self_attn.k_proj.weight": lin(kv, 2 * h),
            "layers.0.self_attn.v_proj.weight": lin(kv, 2 * h),
            "layers.0.self_attn.o_proj.weight": lin(h, q),
            "layers.0.mlp.gate_proj.weight": lin(inter, h),
            "layers.0.mlp.up_proj.weight": lin(inter, h),
            "layers.0.mlp.down_proj.weight": lin(h, inter),
            "layers.0.input_layernorm.weight": ones(h),
            "layers.0.hidden_norm.weight": ones(h),
            "layers.0.post_attention_layernorm.weight": ones(h),
            "norm.weight": ones(h),
        }
        self.names = list(named)
        for name, p in named.items():
            self.params[name.replace(".", "__")] = p
        self.register_buffer("embed", embed.detach().float().clone(), persistent=False)
        self.register_buffer("lm_head", lm_head.detach().float().clone(), persistent=False)
        inv = 1.0 / (
            shape.rope_theta ** (torch.arange(0, shape.head_dim, 2, dtype=torch.float) / shape.head_dim)
        )
        self.register_buffer("inv_freq", inv, persistent=False)

    def p(self, name: str) -> torch.Tensor:
        param: torch.Tensor = self.params[name.replace(".", "__")]
        return param

    def head_state(self) -> dict[str, torch.Tensor]:
        """The head's own tensors by their speculators names."""
        return {n: self.p(n).detach() for n in self.names}

    def forward(self, aux: torch.Tensor, ids: torch.Tensor, steps: int = TTT_STEPS) -> list[torch.Tensor]:
        """Logits [B, T, V] of each TTT step; ``aux`` [B, T, A·H] (h_i), ``ids`` [B, T] (x_{i+1})."""
        s, eps = self.shape, self.shape.rms_norm_eps
        b, t = ids.shape
        dev = ids.device
        hidden = F.linear(aux, self.p("fc.weight"))
        keys: list[torch.Tensor] = []
        values: list[torch.Tensor] = []
        idx = torch.arange(t, device=dev)
        causal = idx[:, None] >= idx[None, :]  # step-0 keys: indices <= i
        diag = idx[:, None] == idx[None, :]  # a later step's own chain: index i only
        out_logits = []
        for j in range(steps):
            ids_j = torch.cat([ids[:, j:], ids.new_zeros(b, j)], dim=1) if j else ids
            pos = (idx + 1 + j).float()
            freqs = torch.outer(pos, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos()[None, None], emb.sin()[None, None]
            embeds = rms_norm(F.embedding(ids_j, self.embed), self.p("layers.0.input_layernorm.weight"), eps)
            normed = rms_norm(hidden, self.p("layers.0.hidden_norm.weight"), eps)
            x = torch.cat([embeds, normed], dim=-1)
            q = F.linear(x, self.p("layers.0.self_attn.q_proj.weight")).view(b, t, s.heads, s.head_dim)
            k = F.linear(x, self.p("layers.0.self_attn.k_proj.weight")).view(b, t, s.kv_heads, s.head_dim)
            v = F.linear(x, self.p("layers.0.self_attn.v_proj.weight")).view(b, t, s.kv_heads, s.head_dim)
            q = apply_rope(q.transpose(1, 2), cos, sin)
            keys.append(apply_rope(k.transpose(1, 2), cos, sin))
            values.append(v.transpose(1, 2))
            mask = torch.cat([causal] + [diag] * j, dim=1)  # [T, (j+1)·T]
            attn = F.scaled_dot_product_attention(
                q, torch.cat(keys, 2), torch.cat(values, 2), attn_mask=mask, scale=s.head_dim**-0.5,
                enable_gqa=s.kv_heads != s.heads,
            )  # fmt: skip
            h = hidden + F.linear(
                attn.transpose(1, 2).reshape(b, t, -1), self.p("layers.0.self_attn.o_proj.weight")
            )
            m = rms_norm(h, self.p("layers.0.post_attention_layernorm.weight"), eps)
            gate = F.linear(m, self.p("layers.0.mlp.gate_proj.weight"))
            up = F.linear(m, self.p("layers.0.mlp.up_proj.weight"))
            hidden = h + F.linear(F.silu(gate) * up, self.p("layers.0.mlp.down_proj.weight"))
            out_logits.append(F.linear(rms_norm(hidden, self.p("norm.weight"), eps), self.lm_head))
        return out_logits


@dataclass
class HeadBatch:
    aux: torch.Tensor  # [B, T-1, A·H]: h_i
    ids: torch.Tensor  # [B, T-1]: x_{i+1}
    target_logits: torch.Tensor  # [B, T-1, V]: the target at position i + 1
    mask: torch.Tensor  # [B, T-1]: x_{i+1} is a real token


def target_batch(target: Any, seqs: Sequence[Sequence[int]], aux_layers: Sequence[int]) -> HeadBatch:
    """Run the native ``target`` over ``seqs`` (batched rows, no gradients): the head's shifted inputs."""
    with torch.no_grad():  # not inference mode: the target's caches stay usable by the decode loops
        target.capture = tuple(aux_layers)
        width = max(len(s) for s in seqs)
        target.batch_reset(len(seqs), width)
        logits = target.forward_rows(0, [list(s) for s in seqs]).float()  # [B, T, V]
        aux = target.hidden_states().float()  # [B, T, A·H]
    ids = torch.tensor([list(s) + [0] * (width - len(s)) for s in seqs], dtype=torch.long)
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], dtype=torch.bool)
    return HeadBatch(aux[:, :-1].clone(), ids[:, 1:], logits[:, 1:].clone(), mask[:, 1:])


def eagle_loss(head: TrainableHead, batch: HeadBatch, steps: int = TTT_STEPS) -> torch.Tensor:
    """Σ_j mean over scored positions of KL(p_target ‖ q_head) at TTT step j (speculators' align_for_step)."""
    total = torch.zeros(())
    for j, logits in enumerate(head(batch.aux, batch.ids, steps)):
        t = logits.shape[1] - j
        if t <= 0:
            break
        logq = F.log_softmax(logits[:, :t].float(), -1)
        logp = F.log_softmax(batch.target_logits[:, j:], -1)
        kl = (logp.exp() * (logp - logq)).sum(-1)  # [B, t]
        m = batch.mask[:, j:].float()
        total = total + (kl * m).sum() / m.sum().clamp_min(1)
    return total


def make_sequences(
    target: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    out_file: Path,
    eos_ids: frozenset[int],
    *,
    new_tokens: int = 64,
    batch: int = 16,
    on_batch: Callable[[int], None] | None = None,
) -> list[list[int]]:
    """Prompt + the target's greedy continuation for every prompt; appended to ``out_file`` (resumable)."""
    from specmeter.engine.batched import SequenceRequest, decode_batch

    done = [json.loads(line)["ids"] for line in out_file.open(encoding="utf-8") if line.strip()] \
        if out_file.is_file() else []  # fmt: skip
    with out_file.open("a", encoding="utf-8") as fh:
        for start in range(len(done), len(prompts), batch):
            enc = [tokenizer(p)["input_ids"] for p in prompts[start : start + batch]]
            reqs = [SequenceRequest(e, new_tokens) for e in enc]
            gens = decode_batch(target, None, reqs, schedule=0, max_batch=len(reqs), eos_ids=eos_ids)
            for e, g in zip(enc, gens, strict=True):
                seq = list(e) + list(g.output_ids)
                done.append(seq)
                fh.write(json.dumps({"ids": seq}) + "\n")
            fh.flush()
            if on_batch is not None:
                on_batch(len(enc))
    return done[: len(prompts)]


def train_head(
    head: TrainableHead,
    target: Any,
    seqs: Sequence[Sequence[int]],
    cfg: TrainConfig,
    checkpoint: Path,
    *,
    steps_ttt: int = TTT_STEPS,
    on_step: Callable[[int, float, float | None], None] | None = None,
) -> TrainResult:
    """Train ``head`` on random batches of ``seqs`` (target features computed per batch)."""
    aux_layers = head.shape.aux_layers

    def batches(g: torch.Generator, start: int) -> Iterator[HeadBatch]:
        while True:
            pick = torch.randint(0, len(seqs), (cfg.batch,), generator=g).tolist()
            yield target_batch(target, [seqs[i][: cfg.seq_len] for i in pick], aux_layers)

    return run_training(
        head, batches, lambda m, b: eagle_loss(m, b, steps_ttt), cfg, checkpoint, on_step=on_step
    )


def head_config(
    shape: HeadShape, target_config: dict[str, Any], verifier: str, dtype: str = "float16"
) -> dict[str, Any]:
    """config.json in speculators 0.9.0's Eagle3SpeculatorConfig layout (``modeldir.head`` reads it)."""
    layer = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": shape.hidden,
        "intermediate_size": shape.intermediate,
        "num_hidden_layers": 1,
        "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.kv_heads,
        "head_dim": shape.head_dim,
        "hidden_act": "silu",
        "rms_norm_eps": shape.rms_norm_eps,
        "vocab_size": shape.vocab,
        "max_position_embeddings": shape.max_positions,
        "rope_parameters": {"rope_type": "default", "rope_theta": shape.rope_theta},
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "bos_token_id": target_config.get("bos_token_id"),
        "eos_token_id": target_config.get("eos_token_id"),
        "pad_token_id": target_config.get("pad_token_id"),
    }
    return {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "speculators_version": "0.9.0",
        "transformer_layer_config": layer,
        "draft_vocab_size": shape.vocab,
        "norm_before_residual": False,
        "target_hidden_size": None,
        "eagle_aux_hidden_state_layer_ids": list(shape.aux_layers),
        "norm_before_fc": False,
        "fc_norm": False,
        "norm_output": False,
        "embed_requires_grad": False,
        "speculators_config": {
            "algorithm": "eagle3",
            "proposal_methods": [
                {
                    "proposal_type": "greedy",
                    "speculative_tokens": TTT_STEPS,
                    "verifier_accept_k": 1,
                    "accept_tolerance": 0.0,
                }
            ],
            "default_proposal_method": "greedy",
            "verifier": {
                "name_or_path": verifier,
                "architectures": list(target_config.get("architectures") or ["LlamaForCausalLM"]),
            },
        },
        "dtype": dtype,
    }


def export_head(
    head: TrainableHead,
    out: Path,
    target_config: dict[str, Any],
    verifier: str,
    dtype: torch.dtype = torch.float16,
    notes: dict[str, Any] | None = None,
) -> Path:
    """Write config.json and model.safetensors (the head's own tensors at ``dtype``) to ``out``."""
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    name = str(dtype).removeprefix("torch.")
    config = head_config(head.shape, target_config, verifier, name)
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    state = {k: v.to(dtype).contiguous() for k, v in head.head_state().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt", **(notes or {})})
    return out


def param_count(head: TrainableHead) -> int:
    return int(sum(math.prod(p.shape) for p in head.params.values()))


@dataclass(frozen=True)
class EagleDistillResult:
    out: Path
    params: int  # the head's own parameters (embeddings and LM head are the target's)
    file_bytes: int  # model.safetensors
    train_s: float  # wall time of the optimizer steps (teacher sequences excluded)
    sequences_s: float  # wall time spent making teacher sequences in this run
    alpha: float  # held-out greedy α through the real loop (nan without held-out prompts)


def heldout_alpha_head(
    target: Any, head_dir: Path, prompts: Sequence[str], k: int, max_tokens: int = 48
) -> float:
    """Greedy α = A / D of the head in ``head_dir`` on ``prompts`` through the single-stream loop."""
    from specmeter.engine.proposers.candidate import make_proposer
    from specmeter.engine.sampling import SamplingParams
    from specmeter.engine.speculative import speculative_decode

    proposer = make_proposer(f"eagle:head={head_dir}", target)
    accepted = drafted = 0
    for p in prompts:
        ids = target.tokenizer(p)["input_ids"]
        g = speculative_decode(
            target.model, proposer, ids, k=k, params=SamplingParams(), max_tokens=max_tokens,
            eos_ids=target.eos_ids,
        )  # fmt: skip
        accepted += sum(s.accepted for s in g.steps)
        drafted += sum(s.drafted for s in g.steps)
    return accepted / drafted if drafted else float("nan")


def distill_eagle(
    target_dir: Path,
    prompts: Sequence[str],
    heldout: Sequence[str],
    out: Path,
    work: Path,
    cfg: TrainConfig,
    *,
    new_tokens: int = 64,
    intermediate: int | None = None,
    k: int = 4,
    on_sequences: Callable[[int, int], None] | None = None,
    on_step: Callable[[int, float, float | None], None] | None = None,
) -> EagleDistillResult:
    """Teacher sequences, training, export, held-out α: the whole ``distill --method eagle`` (resumable)."""
    import time

    from specmeter.engine.loader import load_model
    from specmeter.modeldir import read_model_config

    target = load_model(target_dir, dtype="float32", implementation="native")
    config = read_model_config(target_dir)
    nested = config.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else config
    shape = HeadShape.of_target(text, intermediate=intermediate)
    model: Any = target.model
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    seq_file = work / "sequences.jsonl"
    have = sum(1 for line in seq_file.open(encoding="utf-8") if line.strip()) if seq_file.is_file() else 0
    if on_sequences is not None:
        on_sequences(have, len(prompts))
    seqs = make_sequences(
        model, target.tokenizer, prompts, seq_file, target.eos_ids, new_tokens=new_tokens,
        on_batch=(lambda n: on_sequences(n, len(prompts))) if on_sequences is not None else None,
    )  # fmt: skip
    t1 = time.perf_counter()
    head = TrainableHead(shape, model.embed, model.lm_head, seed=cfg.seed)
    train_head(head, model, seqs, cfg, work / "checkpoint.pt", on_step=on_step)
    t2 = time.perf_counter()
    notes = {"specmeter_train_steps": str(cfg.steps), "specmeter_train_sequences": str(len(seqs))}
    export_head(head, out, config, str(target_dir), notes=notes)
    alpha = heldout_alpha_head(target, out, heldout, k) if heldout else float("nan")
    return EagleDistillResult(
        out=out, params=param_count(head), file_bytes=(out / "model.safetensors").stat().st_size,
        train_s=t2 - t1, sequences_s=t1 - t0, alpha=alpha,
    )  # fmt: skip
