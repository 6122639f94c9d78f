"""Plain language-model training on a corpus (the core of ``specmeter train``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from specmeter.training.data import TokenStream, random_windows, sequential_windows
from specmeter.training.loop import TrainConfig, TrainResult, run_training


def lm_loss(model: Any, batch: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy over a batch of windows [B, T+1]."""
    logits = model(input_ids=batch[:, :-1]).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))


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
) -> TrainResult:
    device = next(model.parameters()).device

    def batches(g: torch.Generator) -> Any:
        return (w.to(device) for w in random_windows(tokens.train, cfg.batch, cfg.seq_len, g))

    def evaluate(m: Any) -> float:
        return heldout_loss(m, tokens.heldout, cfg.batch, cfg.seq_len)

    return run_training(model, batches, lm_loss, cfg, checkpoint, evaluate=evaluate, on_step=on_step)
