"""specmeter's own engine behind the ``ServingEngine`` protocol: load target (+ draft), tokenize, decode.

This is the only serving module that imports torch; the CLI imports it inside the ``serve`` command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from specmeter.engine.loader import LoadedModel, load_model, tokenizer_mismatch
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import Generation, speculative_decode
from specmeter.metrics.records import ModelInfo
from specmeter.modeldir import ModelDirError
from specmeter.workloads.loader import Message, Prompt
from specmeter.workloads.render import render_prompt

__all__ = ["LocalEngine"]


class LocalEngine:
    """Target plus optional draft; ``k = 0`` or no draft serves plain target decoding (a baseline server)."""

    def __init__(
        self,
        target: LoadedModel,
        draft: LoadedModel | None,
        k: int,
        *,
        model_name: str | None = None,
    ) -> None:
        if draft is not None:
            reason = tokenizer_mismatch(target.tokenizer, draft.tokenizer)
            if reason:
                raise ModelDirError(f"the draft's tokenizer differs from the target's: {reason}")
        self.target, self.draft = target, draft
        self.k = k if draft is not None else 0
        self.model_name = model_name or target.info.name
        self.draft_name = draft.info.name if draft is not None else None
        positions = getattr(target.model, "max_positions", None)
        self.context_length: int | None = int(positions) if positions is not None else None
        self.target_info: ModelInfo | None = target.info
        self.tokenizer = target.tokenizer

    @classmethod
    def load(
        cls,
        target: Path,
        draft: Path | None,
        k: int,
        *,
        model_name: str | None = None,
        dtype: str = "auto",
        device: str = "auto",
        implementation: str = "auto",
        trust_remote_code: bool = False,
    ) -> LocalEngine:
        """Load from local directories; raises ModelDirError with a one-line reason."""

        def one(path: Path) -> LoadedModel:
            return load_model(
                path,
                dtype=dtype,
                device=device,
                implementation=implementation,  # type: ignore[arg-type]
                trust_remote_code=trust_remote_code,
            )

        return cls(one(target), one(draft) if draft is not None else None, k, model_name=model_name)

    def encode_text(self, text: str) -> list[int]:
        return render_prompt(Prompt("request", "serve", text, None, None, 0), self.tokenizer)

    def encode_chat(self, messages: Sequence[tuple[str, str]]) -> list[int]:
        msgs = tuple(Message(role, content) for role, content in messages)  # type: ignore[arg-type]
        return render_prompt(Prompt("request", "serve", None, msgs, None, 0), self.tokenizer)

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True))

    def vocab_size(self) -> int:
        return int(self.target.model.vocab_size)

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        temperature: float,
        top_p: float,
        seed: int | None,
        on_emit: Callable[[list[int]], bool | None],
    ) -> Generation:
        generator = torch.Generator(device=self.target.model.device)
        if seed is None:
            generator.seed()  # the default generator state is a constant: unseeded requests must differ
        else:
            generator.manual_seed(seed)
        return speculative_decode(
            self.target.model,
            self.draft.model if self.draft is not None else None,
            prompt_ids,
            k=self.k,
            params=SamplingParams(temperature, top_p),
            max_tokens=max_tokens,
            eos_ids=self.target.eos_ids,
            generator=generator,
            on_emit=on_emit,
        )
