"""Measure the cost curve t_T(n), n = 1..n_max, and t_D(1) on warm KV caches.

Verification is not free: one target forward over k+1 new tokens costs more than over one, and by how much
depends on the hardware. E_cal uses these measured numbers instead of assuming a flat curve. Each point is
the median of several repeats, taken in interleaved order so slow drift of a shared machine spreads evenly.

t_D(1) is timed where the loop runs the draft: k draft forwards right after a target forward over k+1
tokens. Timed back to back instead, a small draft keeps its weights in the CPU cache and looks up to 2x
cheaper than it is inside the loop, where every target forward evicts them.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from time import perf_counter

import torch

from specmeter.engine.base import CausalLM, synchronize
from specmeter.metrics.records import CostCurve


def _iqr(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[2] - q[0]


def _time_forwards(
    model: CausalLM, context: Sequence[int], ns: Sequence[int], repeats: int
) -> list[list[float]]:
    device = model.device
    model.reset(len(context) + max(ns) + 1)
    with torch.inference_mode():
        model.forward(torch.tensor(list(context), dtype=torch.long, device=device))
        base = model.length
        ids = torch.tensor(
            [context[i % len(context)] for i in range(max(ns))], dtype=torch.long, device=device
        )
        for n in ns:  # warm-up: allocator, kernels and caches settle before anything is timed
            model.forward(ids[:n])
            model.rollback(base)
        times: list[list[float]] = [[] for _ in ns]
        for r in range(repeats):
            order = range(len(ns)) if r % 2 == 0 else reversed(range(len(ns)))
            for j in order:
                synchronize(device)
                t = perf_counter()
                model.forward(ids[: ns[j]])
                synchronize(device)
                times[j].append(perf_counter() - t)
                model.rollback(base)
    return times


def _time_draft_in_loop(
    target: CausalLM, draft: CausalLM, context: Sequence[int], k: int, repeats: int
) -> list[float]:
    """Per-forward times of ``k`` single-token draft forwards, each group right after a target forward."""
    device = draft.device
    for m in (target, draft):
        m.reset(len(context) + k + 2)
    ctx = torch.tensor(list(context), dtype=torch.long, device=device)
    verify = torch.tensor([context[i % len(context)] for i in range(k + 1)], dtype=torch.long, device=device)
    times: list[float] = []
    with torch.inference_mode():
        target.forward(ctx)
        draft.forward(ctx)
        t_base, d_base = target.length, draft.length
        for r in range(repeats + 1):  # the first round is warm-up
            target.forward(verify)
            target.rollback(t_base)
            for i in range(k):
                synchronize(device)
                t = perf_counter()
                draft.forward(verify[i : i + 1])
                synchronize(device)
                if r:
                    times.append(perf_counter() - t)
            draft.rollback(d_base)
    return times


def measure_cost_curve(
    target: CausalLM, draft: CausalLM | None, context: Sequence[int], n_max: int, repeats: int = 9
) -> CostCurve:
    """Cost curve on a warm cache holding ``context`` (use a real prompt so attention length is realistic).

    ``n_max`` is k+1: t_T(n) is measured for n = 1..k+1, and t_D(1) over groups of k draft forwards.
    """
    if not context:
        raise ValueError("empty context")
    ns = list(range(1, n_max + 1))
    t_times = _time_forwards(target, context, ns, repeats)
    k = max(1, n_max - 1)
    d_times = _time_draft_in_loop(target, draft, context, k, repeats) if draft is not None else [0.0]
    return CostCurve(
        target_s=tuple(statistics.median(t) for t in t_times),
        draft_s=statistics.median(d_times),
        target_spread=tuple(_iqr(t) for t in t_times),
        draft_spread=_iqr(d_times),
        repeats=repeats,
    )
