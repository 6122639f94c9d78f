"""What the server needs from an engine, as a protocol, so the HTTP layer never imports torch.

``LocalEngine`` (``server.local_engine``) implements it with specmeter's own speculative loop; tests and
other backends can supply anything with the same shape. ``generate`` (one request at a time) and
``open_batch`` (continuous batching) are called from one worker thread only, never both in one server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from specmeter.metrics.records import Emission, FinishReason, ModelInfo, StepRecord

__all__ = ["BatchSession", "Decoding", "Emit", "GenerationResult", "ServingEngine"]

# Called after every step with the tokens it emitted; returning True stops the sequence (its client left).
Emit = Callable[[list[int]], bool | None]


@dataclass(frozen=True)
class Decoding:
    """How one request is decoded, as the server checked it: its output budget and its sampling."""

    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None = None  # None: a fresh random stream per request


class GenerationResult(Protocol):
    """The fields of ``specmeter.engine.speculative.Generation`` that serving uses."""

    @property
    def output_ids(self) -> tuple[int, ...]: ...
    @property
    def steps(self) -> tuple[StepRecord, ...]: ...
    @property
    def emissions(self) -> tuple[Emission, ...]: ...
    @property
    def ttft_s(self) -> float: ...
    @property
    def latency_s(self) -> float: ...
    @property
    def prefill_s(self) -> float: ...
    @property
    def finish_reason(self) -> FinishReason: ...


class BatchSession(Protocol):
    """Continuous batching: sequences join with ``add`` and advance together, one ``step`` at a time.

    Driven by one thread (the worker's). ``add`` queues a sequence that joins at the next step; ``step``
    runs one decode step of every live sequence and returns ``(tag, result)`` for those that finished —
    ``result`` is the exception of a sequence that failed alone (its own sampling), the others going on.
    An exception out of ``step`` itself fails every live sequence.
    """

    @property
    def live(self) -> int: ...

    def add(self, prompt_ids: Sequence[int], decoding: Decoding, on_emit: Emit, tag: Any) -> None: ...

    def step(self) -> Sequence[tuple[Any, GenerationResult | BaseException]]: ...


class ServingEngine(Protocol):
    model_name: str  # the name clients pass as "model"
    k: int  # (largest) draft length; 0 = no speculation (a baseline server)
    draft_name: str | None
    context_length: int | None  # positions the target can hold, None if unbounded
    target_info: ModelInfo | None

    def encode_text(self, text: str) -> list[int]: ...

    def encode_chat(self, messages: Sequence[tuple[str, str]]) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def vocab_size(self) -> int: ...

    def generate(self, prompt_ids: Sequence[int], decoding: Decoding, on_emit: Emit) -> GenerationResult: ...

    def open_batch(self, max_batch: int) -> BatchSession:
        """A batch session of up to ``max_batch`` sequences (serve ``--max-batch`` > 1)."""
        ...
