"""The interface every decoding backend implements, so the speculative loop never knows which one it drives.

A model owns its KV cache. ``forward`` appends tokens to the cache and returns logits for each of them;
``rollback`` truncates the cache to a shorter length. Rolling back is how rejected draft tokens vanish,
so it must be cheap (a pointer move for the native engine).
"""

from __future__ import annotations

from typing import Protocol

import torch

from specmeter.metrics.records import ModelInfo


class CausalLM(Protocol):
    info: ModelInfo
    device: torch.device
    vocab_size: int

    @property
    def length(self) -> int:
        """Tokens currently held in the KV cache."""
        ...

    def reset(self, capacity: int) -> None:
        """Empty the cache and make room for at least ``capacity`` tokens."""
        ...

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Append ``ids`` (shape [n], int64) to the cache; return logits of shape [n, vocab] (float32)."""
        ...

    def rollback(self, length: int) -> None:
        """Truncate the cache to its first ``length`` tokens."""
        ...


def synchronize(device: torch.device) -> None:
    """Wait for queued kernels so wall-clock timings mean what they say (a no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
