"""Native runs of a speculation method on the bundled target, greedy, one request at a time, in float32.

What the real-engine comparisons (``make test-vllm``, ``make test-llamacpp``) put beside vLLM and llama.cpp:
the same prompt token ids (sent to the engines as ids, so tokenization cannot differ), the same decode loop
``bench`` runs (``engine.speculative.speculative_decode`` with ``engine.proposers.candidate.make_proposer``),
the
per-step records it keeps. α and τ are reduced with the formulas of docs/metrics.md over the steps that
drafted at least one token: α = A/D, τ = 1 + A/S.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from specmeter.metrics.records import StepRecord


@dataclass(frozen=True)
class PromptIds:
    id: str
    category: str
    ids: tuple[int, ...]


@dataclass(frozen=True)
class NativeRequest:
    id: str
    category: str
    output_ids: tuple[int, ...]
    steps: tuple[StepRecord, ...]
    finish_reason: str


@dataclass(frozen=True)
class Tally:
    """Counts over the steps that drafted (S, D, A) and what they give (α, τ)."""

    steps: int
    drafted: int
    accepted: int

    @property
    def alpha(self) -> float:
        return self.accepted / self.drafted if self.drafted else float("nan")

    @property
    def tau(self) -> float:
        return 1 + self.accepted / self.steps if self.steps else float("nan")

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.steps + other.steps, self.drafted + other.drafted, self.accepted + other.accepted)


def tally(pairs: Iterable[tuple[int, int]]) -> Tally:
    """A tally of (drafted, accepted) per step; steps that drafted nothing are target-only, left out."""
    drafting = [(d, a) for d, a in pairs if d > 0]
    return Tally(len(drafting), sum(d for d, _ in drafting), sum(a for _, a in drafting))


def step_pairs(
    steps: Sequence[StepRecord], accepted: Callable[[StepRecord], int] | None = None
) -> list[tuple[int, int]]:
    return [(s.drafted, accepted(s) if accepted else s.accepted) for s in steps]


def load_target() -> object:
    """The bundled target on the CPU in float32 (as the engines run it here), one thread."""
    import torch

    from specmeter.bundled.models import bundled_model
    from specmeter.engine.loader import load_model

    torch.set_num_threads(1)
    return load_model(bundled_model("target"), dtype="float32", device="cpu")


def prompt_ids(target: object, path: Path, ids: Sequence[str] | None = None) -> list[PromptIds]:
    """Token ids of a golden set's prompts (all, or those with the given ids, in that order)."""
    from specmeter.workloads import load_workload
    from specmeter.workloads.render import render_prompt

    prompts = {p.id: p for p in load_workload(path).prompts}
    chosen = [prompts[i] for i in ids] if ids is not None else list(prompts.values())
    tokenizer = target.tokenizer  # type: ignore[attr-defined]
    return [PromptIds(p.id, p.category or "", tuple(render_prompt(p, tokenizer))) for p in chosen]


def run_native(
    target: object, method: str | None, prompts: Sequence[PromptIds], *, k: int, max_tokens: int
) -> list[NativeRequest]:
    """Greedy decoding of each prompt alone with ``method`` (a method spec or draft directory; None: the
    baseline). One proposer for the whole run, as bench makes one (suffix decoding learns across requests)."""
    from specmeter.engine.proposers.candidate import make_proposer
    from specmeter.engine.sampling import SamplingParams
    from specmeter.engine.speculative import speculative_decode

    proposer = make_proposer(method, target, dtype="float32", device="cpu") if method else None  # type: ignore[arg-type]
    out = []
    for p in prompts:
        g = speculative_decode(
            target.model,  # type: ignore[attr-defined]
            proposer,
            list(p.ids),
            k=k if proposer is not None else 0,
            params=SamplingParams(),
            max_tokens=max_tokens,
            eos_ids=target.eos_ids,  # type: ignore[attr-defined]
        )
        out.append(NativeRequest(p.id, p.category, g.output_ids, g.steps, g.finish_reason))
    return out
