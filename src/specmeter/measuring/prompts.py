"""The golden set as the engines take it: loaded, limited, rendered to token ids, checked against the context.

Every prompt is checked before anything runs: one that renders to no tokens, or whose tokens plus its
output budget plus the last step's draft positions exceed the target's context, is reported as
``file:line: ...``, all of them at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from specmeter.measuring.errors import MeasureError

if TYPE_CHECKING:
    from specmeter.engine.runner import ModelLike, PreparedPrompt
    from specmeter.measuring.config import MeasureConfig

__all__ = ["prepare_prompts"]


def prepare_prompts(cfg: MeasureConfig, target: ModelLike) -> list[PreparedPrompt]:
    from specmeter.engine.runner import PreparedPrompt
    from specmeter.workloads import WorkloadError, load_workload, render_prompt

    try:
        workload = load_workload(cfg.prompts)
    except WorkloadError as e:
        raise MeasureError(str(e)) from None
    if cfg.limit is not None:
        workload = workload.limit(cfg.limit)
    context = target.max_positions
    prepared, problems = [], []
    for p in workload.prompts:
        ids = render_prompt(p, target.tokenizer)
        max_tokens = p.max_tokens or cfg.max_tokens
        need = len(ids) + max_tokens + max(cfg.k) + 1
        if not ids:
            problems.append(f"{cfg.prompts}:{p.line}: prompt {p.id!r} renders to no tokens")
        elif context is not None and need > context:
            problems.append(
                f"{cfg.prompts}:{p.line}: prompt {p.id!r} has {len(ids)} tokens; "
                f"with max_tokens {max_tokens} it needs {need} positions, the target has {context}"
            )
        prepared.append(PreparedPrompt(id=p.id, category=p.category, ids=tuple(ids), max_tokens=max_tokens))
    if problems:
        raise MeasureError("\n".join(problems))
    return prepared
