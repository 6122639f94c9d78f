"""specmeter's own engine behind the ``ServingEngine`` protocol: load target (+ draft), tokenize, decode.

The draft is a model directory or a method spec (``serve --draft ngram``, docs/methods.md): the proposer
``engine.proposers.candidate.make_proposer`` builds, one for the server's life, so suffix decoding's global
cache learns from every request served, in the order they started.

One request at a time goes through ``engine.speculative`` (the single-stream loop); ``open_batch`` hands
out a continuous-batching session over ``engine.batched``. The draft length is ``k`` or, with a schedule,
the schedule's k for the live batch size (vLLM's ``num_speculative_tokens_per_batch_size``), capped at
``k``. This is the only serving module that imports torch; the CLI imports it inside the ``serve`` command.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from specmeter.engine.base import CausalLM
from specmeter.engine.batched import BatchedDecoder, SequenceRequest
from specmeter.engine.loader import LoadedModel, load_model, tokenizer_mismatch
from specmeter.engine.proposers.proposer import Proposer
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.schedule import KSchedule
from specmeter.engine.speculative import Generation, speculative_decode
from specmeter.methods import MethodSpec, MethodSpecError
from specmeter.metrics.records import ModelInfo
from specmeter.modeldir import ModelDirError
from specmeter.server.engine import Decoding, Emit
from specmeter.workloads.loader import Message, Prompt
from specmeter.workloads.render import render_prompt

__all__ = ["LocalEngine"]


def _generator(device: Any, seed: int | None) -> torch.Generator:
    generator = torch.Generator(device=device)
    if seed is None:
        generator.seed()  # the default generator state is a constant: unseeded requests must differ
    else:
        generator.manual_seed(seed)
    return generator


def effective_k(k: int, schedule: KSchedule | None) -> int:
    """The largest k a server will ever draft: ``k`` capped by the schedule's largest (0: no speculation)."""
    return k if schedule is None else min(k, schedule.max_k)


def default_max_batch(engine: LocalEngine) -> int:
    """``serve --max-batch`` when not given: 16 on CPU (where B = 16 already runs the bundled models'
    forwards near their compute limit on 2 cores), 64 on a GPU. Only the native engine batches for real."""
    return 64 if engine.target.model.device.type == "cuda" else 16


class LocalEngine:
    """Target plus optional draft (a loaded model or a method's proposer); ``k = 0`` or no draft serves plain
    target decoding (a baseline server)."""

    def __init__(
        self,
        target: LoadedModel,
        draft: LoadedModel | Proposer | None,
        k: int,
        *,
        model_name: str | None = None,
        schedule: KSchedule | None = None,
    ) -> None:
        if effective_k(k, schedule) < 1:
            draft = None  # k = 0 with a draft is a baseline server: the draft never runs
        if isinstance(draft, LoadedModel):
            reason = tokenizer_mismatch(target.tokenizer, draft.tokenizer)
            if reason:
                raise ModelDirError(f"the draft's tokenizer differs from the target's: {reason}")
        self.target, self.draft = target, draft
        # What the loops run: a draft model, or a method's proposer (its one cache for every request).
        self.proposer: CausalLM | Proposer | None = draft.model if isinstance(draft, LoadedModel) else draft
        self.k = effective_k(k, schedule) if draft is not None else 0
        self.schedule = KSchedule.constant(0) if draft is None else schedule or KSchedule.constant(self.k)
        self.model_name = model_name or target.info.name
        self.draft_name = (
            None if draft is None else draft.info.name if isinstance(draft, LoadedModel) else draft.name
        )
        positions = getattr(target.model, "max_positions", None)
        self.context_length: int | None = int(positions) if positions is not None else None
        self.target_info: ModelInfo | None = target.info
        self.tokenizer = target.tokenizer

    @classmethod
    def load(
        cls,
        target: Path,
        draft: Path | str | MethodSpec | None,
        k: int,
        *,
        model_name: str | None = None,
        dtype: str = "auto",
        device: str = "auto",
        implementation: str = "auto",
        trust_remote_code: bool = False,
        schedule: KSchedule | None = None,
    ) -> LocalEngine:
        """Load from local directories; raises ModelDirError with a one-line reason.

        With k = 0 (or a schedule that never speculates) the draft is not even loaded. A method spec becomes
        its proposer; one this engine cannot run is a ModelDirError too.
        """

        def one(path: Path) -> LoadedModel:
            return load_model(
                path,
                dtype=dtype,
                device=device,
                implementation=implementation,  # type: ignore[arg-type]
                trust_remote_code=trust_remote_code,
            )

        speculates = draft is not None and effective_k(k, schedule) > 0
        loaded = one(target)
        proposer: LoadedModel | Proposer | None = None
        if speculates and isinstance(draft, MethodSpec):
            from specmeter.engine.proposers.candidate import make_proposer

            try:
                proposer = make_proposer(draft, loaded)
            except (MethodSpecError, ValueError) as e:
                raise ModelDirError(f"--draft {draft.label}: {e}") from None
        elif speculates and isinstance(draft, str | Path):
            proposer = one(Path(draft))  # a directory (a library caller's str too)
        return cls(loaded, proposer, k, model_name=model_name, schedule=schedule)

    def encode_text(self, text: str) -> list[int]:
        return render_prompt(Prompt("request", "serve", text, None, None, 0), self.tokenizer)

    def encode_chat(self, messages: Sequence[tuple[str, str]]) -> list[int]:
        msgs = tuple(Message(role, content) for role, content in messages)  # type: ignore[arg-type]
        return render_prompt(Prompt("request", "serve", None, msgs, None, 0), self.tokenizer)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True))

    def vocab_size(self) -> int:
        return int(self.target.model.vocab_size)

    def generate(self, prompt_ids: Sequence[int], decoding: Decoding, on_emit: Emit) -> Generation:
        return speculative_decode(
            self.target.model,
            self.proposer,
            prompt_ids,
            k=self.schedule.k_for(1, self.k),
            params=SamplingParams(decoding.temperature, decoding.top_p),
            max_tokens=decoding.max_tokens,
            eos_ids=self.target.eos_ids,
            generator=_generator(self.target.model.device, decoding.seed),
            on_emit=on_emit,
        )

    def open_batch(self, max_batch: int) -> LocalBatch:
        return LocalBatch(self, max_batch)


class LocalBatch:
    """A continuous-batching session (``server.engine.BatchSession``) over ``engine.batched``."""

    def __init__(self, engine: LocalEngine, max_batch: int) -> None:
        self.engine = engine
        self.decoder = BatchedDecoder(
            engine.target.model,  # type: ignore[arg-type]  # every loaded model implements BatchedCausalLM
            engine.proposer,  # type: ignore[arg-type]  # a draft model batches, as every loaded model does
            schedule=engine.schedule,
            max_batch=max_batch,
            eos_ids=engine.target.eos_ids,
        )

    @property
    def live(self) -> int:
        return self.decoder.live + self.decoder.waiting

    def add(self, prompt_ids: Sequence[int], decoding: Decoding, on_emit: Emit, tag: Any) -> None:
        generator = _generator(self.engine.target.model.device, decoding.seed)
        params = SamplingParams(decoding.temperature, decoding.top_p)
        self.decoder.add(SequenceRequest(prompt_ids, decoding.max_tokens, params, generator, on_emit, tag))

    def step(self) -> list[tuple[Any, Generation | BaseException]]:
        """The sequences that finished; one whose own sampling failed comes back as its error."""
        return [(tag, self.decoder.pop_error(tag) or gen) for tag, gen in self.decoder.step()]
