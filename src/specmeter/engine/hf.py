"""Fallback backend: any causal LM transformers can load, driven through the same ``CausalLM`` interface.

Slower per step than the native engine (transformers' generic forward and cache objects), but it lets
specmeter measure architectures the native engine does not implement. Rollback uses ``DynamicCache.crop``
with a negative count (transformers 5.x convention).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from specmeter.metrics.records import ModelInfo


class HFCausalLM:
    """Wraps a transformers ``PreTrainedModel``; implements ``engine.base.CausalLM``."""

    def __init__(self, model: Any, info: ModelInfo, device: torch.device) -> None:
        self.model = model
        self.info = info
        self.device = device
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.max_positions = int(getattr(model.config, "max_position_embeddings", 1 << 30))
        self._cache: Any = None
        self._length = 0
        # transformers 5.20+ renamed the forward argument `past_key_values` to `cache` (the old name is
        # deprecated until 5.40); pass whichever this model's forward declares.
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    @property
    def length(self) -> int:
        return self._length

    def reset(self, capacity: int) -> None:
        from transformers import DynamicCache

        if capacity > self.max_positions:
            raise ValueError(
                f"{self.info.name}: {capacity} tokens exceed the model's context of {self.max_positions}"
            )
        self._cache = DynamicCache(config=self.model.config)
        self._length = 0

    def rollback(self, length: int) -> None:
        if not 0 <= length <= self._length:
            raise ValueError(f"cannot roll back to {length} from {self._length}")
        if length < self._length:
            self._cache.crop(length - self._length)
        self._length = length

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        n = int(ids.shape[0])
        positions = torch.arange(self._length, self._length + n, device=self.device)
        out = self.model(
            input_ids=ids.unsqueeze(0),
            position_ids=positions.unsqueeze(0),
            **{self._cache_arg: self._cache},
            use_cache=True,
        )
        self._length += n
        logits: torch.Tensor = out.logits[0].float()
        return logits
