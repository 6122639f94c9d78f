"""Plain language-model training on a corpus (the core of ``specmeter train``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from specmeter.training.data import (
    COPY_WARMUP_VOCAB,
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


# The induction probe's string lengths: other lengths than the copy rows' (8-48) as well as theirs.
PROBE_MIN_SPAN, PROBE_MAX_SPAN = 11, 61


def ordinary_ids(tokenizer: Any) -> torch.Tensor:
    """The ids that are not special tokens, in id order."""
    special = set(tokenizer.all_special_ids)
    return torch.tensor([i for i in range(len(tokenizer)) if i not in special], dtype=torch.long)


def induction_score(model: Any, ordinary: torch.Tensor, bos: int, rows: int = 32, seed: int = 0) -> float:
    """Share of a repeated random string's second occurrence the model predicts, greedy and teacher-forced.

    Each row is a string of PROBE_MIN_SPAN to PROBE_MAX_SPAN ids drawn from the whole vocabulary, then the
    same string: nothing but copying predicts the repeat, so a model without an induction head scores about
    1/vocabulary and one that copies scores near 1 (the test of Olsson et al., 2022, "In-context learning
    and induction heads"). The length varies from row to row because a model trained on one length learns
    "copy the token that far back", which reads as copying on that length alone (docs/methods.md).
    """
    device = next(model.parameters()).device
    g = torch.Generator().manual_seed(seed)
    width = 2 * PROBE_MAX_SPAN
    span = torch.randint(PROBE_MIN_SPAN, PROBE_MAX_SPAN + 1, (rows, 1), generator=g)
    picks = torch.randint(0, ordinary.numel(), (rows, PROBE_MAX_SPAN), generator=g)
    body = ordinary[picks.gather(1, torch.arange(width).unsqueeze(0) % span)]  # period span per row
    ids = torch.cat([torch.full((rows, 1), bos, dtype=torch.long), body], dim=1).to(device)
    with torch.no_grad():
        predicted = model(input_ids=ids[:, :-1]).logits.argmax(-1).cpu()  # [rows, width]
    # predicted[:, i] is for ids[:, i + 1] = body[:, i]; the test is the repeat after its first token:
    # span 3, [bos, a, b, c, a, b, c] -> body positions 4, 5 (b, c), i.e. i >= span + 1 and i < 2 * span
    i = torch.arange(width).unsqueeze(0)
    tested = (i >= span + 1) & (i < 2 * span)
    hits = (predicted == body) & tested
    return float(hits.sum() / tested.sum())


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
        # the warm-up: copy rows alone, on 256-id strings, until an induction head forms (data.py)
        for _ in range(start, cfg.copy_warmup):
            yield (
                None,
                copy_rows(
                    ordinary, cfg.batch, bos, g, max_vocab=COPY_WARMUP_VOCAB, min_vocab=COPY_WARMUP_VOCAB
                ).to(device),
            )
        for w in random_windows(tokens.train, cfg.batch, cfg.seq_len, g):
            yield w.to(device), copy_rows(ordinary, cfg.copy_rows, bos, g).to(device)

    def evaluate(m: Any) -> float:
        return heldout_loss(m, tokens.heldout, cfg.batch, cfg.seq_len)

    if not cfg.copy_rows:
        return run_training(model, batches, lm_loss, cfg, checkpoint, evaluate=evaluate, on_step=on_step)
    return run_training(
        model, with_copies, lm_and_copy_loss, cfg, checkpoint, evaluate=evaluate, on_step=on_step
    )
