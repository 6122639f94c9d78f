"""Distil a domain draft from a target: sequence-level data plus token-level KL (``specmeter distill``).

1. Teacher data: the target continues domain prompts greedily (what it will actually say in production),
   and one forward over prompt + continuation gives its next-token distribution at every position; the
   top-K probabilities are stored (K=16 keeps >99% of the mass of a trained model's distribution and makes
   the file small). Rows are appended as they are made, so an interrupted run resumes where it stopped.
2. Training: the draft minimises the cross-entropy to the renormalised top-K teacher distribution at every
   position, i.e. the token-level KL(p_target || q_draft) up to the teacher's own entropy.
3. Evaluation: held-out prompts (never trained on) are decoded greedily with k draft tokens through the
   real speculative loop before and after, and the draft acceptance rate α is reported.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from specmeter import jsonsafe
from specmeter.training.data import CorpusError, corpus_lines
from specmeter.training.loop import TrainConfig, run_training


def read_prompts(path: Path, min_words: int = 8, max_words: int = 40, seed: int = 0) -> list[str]:
    """Prompts from a JSONL file: ``prompt`` fields as they are, or prefixes of ``text`` documents."""
    rng = random.Random(seed)
    out: list[str] = []
    for n, line in corpus_lines(path):
        if not line.strip():
            continue
        try:
            obj = jsonsafe.loads(line)
        except json.JSONDecodeError as e:
            raise CorpusError(f"{path}:{n}: invalid JSON ({e.msg} at column {e.colno})") from e
        if isinstance(obj, dict) and isinstance(obj.get("prompt"), str):
            out.append(obj["prompt"])
        elif isinstance(obj, dict) and isinstance(obj.get("text"), str):
            words = obj["text"].split()
            cut = rng.randint(min(min_words, len(words)), min(max_words, len(words)))
            out.append(" ".join(words[:cut]))
        else:
            raise CorpusError(f"{path}:{n}: field 'prompt' or 'text': missing or not a string")
    if not out:
        raise CorpusError(f"{path}: no prompts")
    return out


@torch.no_grad()
def make_teacher_data(
    target: Any,
    tokenizer: Any,
    prompts: list[str],
    out_file: Path,
    *,
    new_tokens: int = 64,
    batch: int = 32,
    top_k: int = 16,
    on_batch: Callable[[int], None] | None = None,
) -> None:
    """Append teacher rows for the prompts not yet in ``out_file`` (resumable)."""
    done = sum(1 for line in out_file.open(encoding="utf-8") if line.strip()) if out_file.is_file() else 0
    device = next(target.parameters()).device
    pad = tokenizer.pad_token_id
    target.eval()
    with out_file.open("a", encoding="utf-8") as fh:
        for start in range(done, len(prompts), batch):
            chunk = prompts[start : start + batch]
            enc = [tokenizer(p)["input_ids"] for p in chunk]
            width = max(len(e) for e in enc)
            ids = torch.tensor([[pad] * (width - len(e)) + e for e in enc], device=device)  # left-padded
            mask = (torch.arange(width, device=device)[None, :] >= torch.tensor([width - len(e) for e in enc],
                    device=device)[:, None]).long()  # fmt: skip
            gen = target.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=new_tokens, do_sample=False,
                pad_token_id=pad, eos_token_id=tokenizer.eos_token_id,
            )[:, width:]  # fmt: skip
            seqs = []
            for e, g in zip(enc, gen.tolist(), strict=True):
                if tokenizer.eos_token_id in g:
                    g = g[: g.index(tokenizer.eos_token_id) + 1]
                seqs.append(e + [t for t in g if t != pad])
            for seq, row in zip(seqs, _soft_labels(target, seqs, pad, top_k), strict=True):
                fh.write(json.dumps({"ids": seq, "topk_ids": row[0], "topk_probs": row[1]}) + "\n")
            fh.flush()
            if on_batch is not None:
                on_batch(len(chunk))


def _soft_labels(target: Any, seqs: list[list[int]], pad: int, top_k: int) -> list[tuple[Any, Any]]:
    device = next(target.parameters()).device
    width = max(len(s) for s in seqs)
    ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=device)
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=device)
    probs = torch.softmax(target(input_ids=ids, attention_mask=mask).logits.float(), -1)
    top = probs.topk(top_k, dim=-1)
    out = []
    for i, s in enumerate(seqs):
        n = len(s) - 1  # position j predicts token j+1
        out.append(
            (top.indices[i, :n].tolist(), [[round(p, 5) for p in row] for row in top.values[i, :n].tolist()])
        )
    return out


@dataclass
class TeacherBatch:
    ids: torch.Tensor  # [B, T]
    mask: torch.Tensor  # [B, T-1] positions with a label
    topk_ids: torch.Tensor  # [B, T-1, K]
    topk_probs: torch.Tensor  # [B, T-1, K], renormalised


def load_teacher_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]


def teacher_batches(
    rows: list[dict[str, Any]], batch: int, pad: int, device: torch.device
) -> Callable[[torch.Generator, int], Iterator[TeacherBatch]]:
    def gen(g: torch.Generator, start: int) -> Iterator[TeacherBatch]:
        while True:
            pick = torch.randint(0, len(rows), (batch,), generator=g).tolist()
            chosen = [rows[i] for i in pick]
            width = max(len(r["ids"]) for r in chosen)
            k = len(chosen[0]["topk_ids"][0])
            ids = torch.full((batch, width), pad, dtype=torch.long)
            mask = torch.zeros(batch, width - 1, dtype=torch.bool)
            tk_ids = torch.zeros(batch, width - 1, k, dtype=torch.long)
            tk_p = torch.zeros(batch, width - 1, k)
            for b, r in enumerate(chosen):
                n = len(r["ids"])
                ids[b, :n] = torch.tensor(r["ids"])
                mask[b, : n - 1] = True
                tk_ids[b, : n - 1] = torch.tensor(r["topk_ids"])
                tk_p[b, : n - 1] = torch.tensor(r["topk_probs"])
            tk_p = tk_p / tk_p.sum(-1, keepdim=True).clamp_min(1e-9)
            yield TeacherBatch(ids.to(device), mask.to(device), tk_ids.to(device), tk_p.to(device))

    return gen


def kl_loss(model: Any, b: TeacherBatch) -> torch.Tensor:
    """Cross-entropy of the draft against the top-K teacher distribution, averaged over labelled positions."""
    logits = model(input_ids=b.ids[:, :-1]).logits.float()  # [B, T-1, V]
    logq = F.log_softmax(logits, -1).gather(-1, b.topk_ids)  # [B, T-1, K]
    per_pos = -(b.topk_probs * logq).sum(-1)  # [B, T-1]
    return (per_pos * b.mask).sum() / b.mask.sum().clamp_min(1)


def train_on_teacher(
    draft: Any,
    rows: list[dict[str, Any]],
    pad: int,
    cfg: TrainConfig,
    checkpoint: Path,
    on_step: Callable[[int, float, float | None], None] | None = None,
) -> Any:
    device = next(draft.parameters()).device
    return run_training(draft, teacher_batches(rows, cfg.batch, pad, device), kl_loss, cfg, checkpoint,
                        on_step=on_step)  # fmt: skip


def heldout_alpha(
    target_dir: Path, draft_dir: Path, prompts: list[str], k: int = 4, max_tokens: int = 48
) -> float:
    """Greedy draft acceptance rate α = A / D of ``draft_dir`` on ``prompts`` through the real loop."""
    from specmeter.engine.loader import load_model
    from specmeter.engine.sampling import SamplingParams
    from specmeter.engine.speculative import speculative_decode

    target, draft = load_model(target_dir), load_model(draft_dir)
    accepted = drafted = 0
    for p in prompts:
        ids = target.tokenizer(p)["input_ids"]
        g = speculative_decode(
            target.model, draft.model, ids, k=k, params=SamplingParams(), max_tokens=max_tokens,
            eos_ids=target.eos_ids,
        )  # fmt: skip
        accepted += sum(s.accepted for s in g.steps)
        drafted += sum(s.drafted for s in g.steps)
    return accepted / drafted if drafted else float("nan")
