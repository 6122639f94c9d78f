"""Fallback backend: any causal LM transformers can load, driven through the same ``CausalLM`` interface.

Slower per step than the native engine (transformers' generic forward and cache objects), but it lets
specmeter measure architectures the native engine does not implement. Rollback uses ``DynamicCache.crop``
with a negative count (transformers 5.x convention).

The batched interface (``forward_rows`` and friends, used by ``engine.batched``) is served row by row: each
row keeps its own ``DynamicCache`` and a batched forward runs one forward per row. Correct at any batch
size, so ``serve --max-batch`` works with every model, but it does not batch the work: only the native
engine's batched forward makes B sequences cheaper than B single streams.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from specmeter.engine.base import CacheLengths
from specmeter.metrics.records import ModelInfo


class HFCausalLM(CacheLengths):
    """Wraps a transformers ``PreTrainedModel``; implements ``engine.base.CausalLM``."""

    def __init__(self, model: Any, info: ModelInfo, device: torch.device) -> None:
        self.model = model
        self.info = info
        self.device = device
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.max_positions = int(getattr(model.config, "max_position_embeddings", 1 << 30))
        self._cache: Any = None
        self._length = 0
        self._row_caches: list[Any] = []
        self._rows: list[int] = []
        # transformers 5.20+ renamed the forward argument `past_key_values` to `cache` (the old name is
        # deprecated until 5.40); pass whichever this model's forward declares.
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    def reset(self, capacity: int) -> None:
        from transformers import DynamicCache

        self.check_context(capacity)
        self._cache = DynamicCache(config=self.model.config)
        self._length = 0

    def rollback(self, length: int) -> None:
        self.check_rollback(length)
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

    # ------------------------------------------------------------------------ batched interface, row by row

    def batch_reset(self, slots: int, capacity: int) -> None:
        from transformers import DynamicCache

        self.check_context(capacity)
        self._row_caches = [DynamicCache(config=self.model.config) for _ in range(slots)]
        self._rows = [0] * slots

    def batch_reserve(self, capacity: int) -> None:
        self.check_context(capacity)

    def rollback_row(self, row: int, length: int) -> None:
        self.check_rollback(length, row)
        if length < self._rows[row]:
            self._row_caches[row].crop(length - self._rows[row])
        self._rows[row] = length

    def move_row(self, src: int, dst: int) -> None:
        from transformers import DynamicCache

        if src == dst:
            return
        self._row_caches[dst] = self._row_caches[src]
        self._rows[dst] = self._rows[src]
        self._row_caches[src] = DynamicCache(config=self.model.config)
        self._rows[src] = 0

    def forward_rows(self, start: int, tokens: list[list[int]], *, last_only: bool = False) -> torch.Tensor:
        """One forward per row; logits padded to [R, n, V] (or [R, V] with ``last_only``)."""
        n = max(len(t) for t in tokens)
        out = []
        saved = (self._cache, self._length)
        try:
            for r, t in enumerate(tokens):
                self._cache, self._length = self._row_caches[start + r], self._rows[start + r]
                logits = self.forward(torch.tensor(t, dtype=torch.long, device=self.device))
                self._rows[start + r] = self._length
                if last_only:
                    out.append(logits[-1])
                else:
                    pad = logits[-1:].expand(n - len(t), -1)
                    out.append(torch.cat([logits, pad]) if len(t) < n else logits)
        finally:
            self._cache, self._length = saved
        return torch.stack(out)
