"""The interface every decoding backend implements, so the speculative loop never knows which one it drives.

A model owns its KV cache. ``forward`` appends tokens to the cache and returns logits for each of them;
``rollback`` truncates the cache to a shorter length. Rolling back is how rejected draft tokens vanish,
so it must be cheap (a pointer move for the native engine).
"""

from __future__ import annotations

from collections.abc import Sequence
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


class BatchedCausalLM(CausalLM, Protocol):
    """A model that also holds a batched KV cache: one row per sequence, each with its own length.

    Rows are numbered 0 … slots-1; ``engine.batched`` keeps the live sequences in rows 0 … B-1 (moving
    the last row into a freed one), so a decode step is one ``forward_rows(0, …)``.
    """

    @property
    def batch_slots(self) -> int: ...

    def row_length(self, row: int) -> int:
        """Tokens row ``row`` holds."""
        ...

    def batch_reset(self, slots: int, capacity: int) -> None:
        """Empty every row; room for ``slots`` rows of at least ``capacity`` tokens."""
        ...

    def batch_reserve(self, capacity: int) -> None:
        """Make every row hold at least ``capacity`` tokens, keeping their contents."""
        ...

    def rollback_row(self, row: int, length: int) -> None: ...

    def move_row(self, src: int, dst: int) -> None:
        """Row ``dst`` takes row ``src``'s tokens (``src`` is free afterwards)."""
        ...

    def forward_rows(self, start: int, tokens: list[list[int]], *, last_only: bool = False) -> torch.Tensor:
        """Append ``tokens[r]`` to row ``start + r``; logits [R, max n, V], or [R, V] with ``last_only``."""
        ...


class CacheLengths:
    """The bookkeeping the native and the transformers backends share around their own cache tensors: the
    context limit, the single cache's length (``_length``) and the batched cache's row lengths (``_rows``)."""

    info: ModelInfo
    max_positions: int
    _length: int
    _rows: list[int]

    def check_context(self, capacity: int) -> None:
        """ValueError unless ``capacity`` tokens fit the model's context."""
        if capacity > self.max_positions:
            raise ValueError(
                f"{self.info.name}: {capacity} tokens exceed the model's context of {self.max_positions}"
            )

    def check_rollback(self, length: int, row: int | None = None) -> None:
        """ValueError unless the cache (or row ``row``) holds at least ``length`` tokens."""
        held = self._length if row is None else self._rows[row]
        if not 0 <= length <= held:
            where = "" if row is None else f"row {row}: "
            raise ValueError(f"{where}cannot roll back to {length} from {held}")

    @property
    def length(self) -> int:
        return self._length

    @property
    def batch_slots(self) -> int:
        return len(self._rows)

    def row_length(self, row: int) -> int:
        return self._rows[row]


def reserve_rows(model: BatchedCausalLM, start: int, feeds: Sequence[Sequence[int]]) -> None:
    """Before feeding ``feeds[r]`` to row ``start + r``: padding writes up to the longest feed past every
    row's length, so make every row hold that much."""
    n = max(len(f) for f in feeds)
    model.batch_reserve(max(model.row_length(start + r) for r in range(len(feeds))) + n)


def hidden_states(model: CausalLM) -> torch.Tensor:
    """The hidden states ``model`` kept in its last forward (the native engine's ``capture``): [n, F] after
    ``forward``, [R, n, F] after ``forward_rows``. ValueError for a backend that keeps none."""
    kept = getattr(model, "hidden_states", None)
    if kept is None:
        raise ValueError(
            f"{model.info.name}: this backend keeps no hidden states (EAGLE needs the native engine)"
        )
    result: torch.Tensor = kept()
    return result


def synchronize(device: torch.device) -> None:
    """Wait for queued kernels so wall-clock timings mean what they say (a no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
