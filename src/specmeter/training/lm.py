"""Plain language-model training on a corpus (the core of ``specmeter train``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from specmeter.training.data import (
    COPY_MIN_VOCAB,
    COPY_SPAN,
    TokenStream,
    copy_rows,
    random_windows,
    sequential_windows,
)
from specmeter.training.loop import TrainConfig, TrainResult, run_training


def lm_loss(model: Any, batch: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy over a batch of windows [B, T+1]."""
    logits = model(input_ids=batch[:, :-1]).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))


def lm_and_copy_loss(model: Any, batch: tuple[torch.Tensor | None, torch.Tensor]) -> torch.Tensor:
    """Next-token cross-entropy over corpus windows [B, T+1] and copy rows [C, L+1], a mean over all tokens.

    Weighting by tokens keeps the corpus's share of the gradient what its share of the tokens is (16 windows
    of 256 and 4 rows of 128: 89%). Windows are None in the copy warm-up.
    """
    windows, copies = batch
    parts = [copies] if windows is None else [windows, copies]
    total = sum(p[:, 1:].numel() for p in parts)
    loss = torch.zeros((), device=copies.device)
    for part in parts:
        logits = model(input_ids=part[:, :-1]).logits
        ce = F.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]), part[:, 1:].reshape(-1), reduction="sum"
        )
        loss = loss + ce
    return loss / total


def ordinary_ids(tokenizer: Any) -> torch.Tensor:
    """The ids that are not special tokens, in id order."""
    special = set(tokenizer.all_special_ids)
    return torch.tensor([i for i in range(len(tokenizer)) if i not in special], dtype=torch.long)


def induction_score(model: Any, ordinary: torch.Tensor, bos: int, rows: int = 32, seed: int = 0) -> float:
    """Share of a repeated random string's second occurrence the model predicts, greedy and teacher-forced.

    A string of COPY_SPAN ids drawn from the whole vocabulary, then the same string: nothing but copying
    predicts the repeat, so a model without an induction head scores about 1/vocabulary and one that copies
    scores near 1 (the test of Olsson et al., 2022, "In-context learning and induction heads").
    """
    device = next(model.parameters()).device
    g = torch.Generator().manual_seed(seed)
    strings = ordinary[torch.randint(0, ordinary.numel(), (rows, COPY_SPAN), generator=g)]
    ids = torch.cat([torch.full((rows, 1), bos, dtype=torch.long), strings, strings], dim=1).to(device)
    with torch.no_grad():
        predicted = model(input_ids=ids[:, :-1]).logits.argmax(-1)  # [rows, 2 * span]
    # the prediction at position i is for token i + 1; the repeat's tokens after its first are the test
    # [bos, a, b, c, a, b, c] -> predictions of b, c at positions 4, 5 (the first repeated a is not copyable)
    hits = predicted[:, COPY_SPAN + 1 :] == ids[:, COPY_SPAN + 2 :]
    return float(hits.float().mean().item())


def heldout_loss(model: Any, stream: torch.Tensor, batch: int, seq_len: int, max_batches: int = 20) -> float:
    device = next(model.parameters()).device
    losses = []
    for i, windows in enumerate(sequential_windows(stream, batch, seq_len)):
        if i >= max_batches:
            break
        losses.append(float(lm_loss(model, windows.to(device)).item()))
    return sum(losses) / len(losses) if losses else float("nan")


def train_language_model(
    model: Any,
    tokens: TokenStream,
    cfg: TrainConfig,
    checkpoint: Path,
    on_step: Callable[[int, float, float | None], None] | None = None,
    *,
    ordinary: torch.Tensor | None = None,
    bos: int = 1,
) -> TrainResult:
    """Train on random windows of the corpus; with ``cfg.copy_rows``, copy rows of ``ordinary`` ids beside."""
    device = next(model.parameters()).device
    if cfg.copy_rows and ordinary is None:
        raise ValueError("copy rows need the tokenizer's ordinary ids")

    def batches(g: torch.Generator, start: int) -> Any:
        return (w.to(device) for w in random_windows(tokens.train, cfg.batch, cfg.seq_len, g))

    def with_copies(g: torch.Generator, start: int) -> Any:
        assert ordinary is not None
        # the warm-up: copy rows alone, few-token strings, where the circuit forms in a hundred-odd steps
        for _ in range(start, cfg.copy_warmup):
            yield None, copy_rows(ordinary, cfg.batch, bos, g, max_vocab=COPY_MIN_VOCAB).to(device)
        for w in random_windows(tokens.train, cfg.batch, cfg.seq_len, g):
            yield w.to(device), copy_rows(ordinary, cfg.copy_rows, bos, g).to(device)

    def evaluate(m: Any) -> float:
        return heldout_loss(m, tokens.heldout, cfg.batch, cfg.seq_len)

    if not cfg.copy_rows:
        return run_training(model, batches, lm_loss, cfg, checkpoint, evaluate=evaluate, on_step=on_step)
    return run_training(
        model, with_copies, lm_and_copy_loss, cfg, checkpoint, evaluate=evaluate, on_step=on_step
    )
