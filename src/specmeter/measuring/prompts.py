"""The golden set as the engines take it: loaded, limited, rendered to token ids, checked against the context.

A conversation (a prompt with ``followups``) becomes one PreparedPrompt whose ``next_turn`` renders each
later turn from the model's own answers, decoded as a chat client shows them; the runner replays it.
Every prompt is checked before anything runs: one that renders to no tokens, or whose tokens plus its
output budget plus the last step's draft positions exceed the target's context, is reported as
``file:line: ...``, all of them at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from specmeter.measuring.errors import MeasureError

if TYPE_CHECKING:
    from specmeter.engine.runner import ModelLike, PreparedPrompt
    from specmeter.measuring.config import MeasureConfig
    from specmeter.workloads import Prompt

__all__ = ["prepare_prompts"]


def _next_turn(prompt: Prompt, tokenizer: Any) -> Callable[[Sequence[Sequence[int]]], tuple[int, ...]]:
    """Turn t's ids from the model's own answers to turns 0..t−1 (decoded as a chat client shows them)."""
    from specmeter.workloads import render_turn

    def next_turn(answers: Sequence[Sequence[int]]) -> tuple[int, ...]:
        texts = [tokenizer.decode(list(a), skip_special_tokens=True) for a in answers]
        return tuple(render_turn(prompt, texts, tokenizer))

    return next_turn


def prepare_prompts(cfg: MeasureConfig, target: ModelLike) -> list[PreparedPrompt]:
    from specmeter.engine.runner import PreparedPrompt
    from specmeter.workloads import WorkloadError, load_workloads, render_prompt, turn_id

    try:
        workload = load_workloads(cfg.prompt_files, cfg.limit, cfg.top_up)  # --limit: first N of each file
    except WorkloadError as e:
        raise MeasureError(str(e)) from None
    context = target.max_positions
    k = max(cfg.k)
    if context is not None and k + 2 > context:  # a step verifies k drafts + 1 beyond at least one token
        raise MeasureError(
            f"--k {k}: a step needs k + 1 = {k + 1} positions beyond the prompt, and the target holds "
            f"{context} positions in all"
        )
    prepared, problems = [], []
    for i, p in enumerate(workload.prompts):
        ids = render_prompt(p, target.tokenizer)
        max_tokens = p.max_tokens or cfg.max_tokens
        need = len(ids) + max_tokens + k + 1
        if not ids:
            problems.append(f"{workload.where(i)}: prompt {p.id!r} renders to no tokens")
        elif context is not None and need > context:
            problems.append(
                f"{workload.where(i)}: prompt {p.id!r} needs {need} positions ({len(ids)} prompt tokens + "
                f"max_tokens {max_tokens} + {k + 1} for the last step's drafts at --k {k}), the target has "
                f"{context}"
            )
        prepared.append(
            PreparedPrompt(
                id=p.id,
                category=p.category,
                ids=tuple(ids),
                max_tokens=max_tokens,
                turn_ids=tuple(turn_id(p.id, t) for t in range(p.turns)) if p.followups else (),
                next_turn=_next_turn(p, target.tokenizer) if p.followups else None,
            )
        )
    if problems:
        raise MeasureError("\n".join(problems))
    return prepared
