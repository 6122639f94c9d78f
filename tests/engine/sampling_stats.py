"""Statistics for the sampling tests: a chi-square p-value and exact target distributions by enumeration."""

from __future__ import annotations

import math

import torch

from specmeter.engine.sampling import SamplingParams, probs


def chi_square_pvalue(counts: list[int], expected_p: list[float]) -> float:
    """Pearson chi-square p-value; cells with expected count < 5 are pooled (Wilson-Hilferty tail)."""
    n = sum(counts)
    obs, exp, pool_o, pool_e = [], [], 0, 0.0
    for c, p in zip(counts, expected_p, strict=True):
        if n * p < 5:
            pool_o, pool_e = pool_o + c, pool_e + n * p
        else:
            obs.append(c)
            exp.append(n * p)
    if pool_e > 0:
        obs.append(pool_o)
        exp.append(max(pool_e, 1e-9))
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True))
    df = len(obs) - 1
    z = ((stat / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def exact_joint(model, prompt: list[int], params: SamplingParams, steps: int) -> dict[tuple[int, ...], float]:
    """P(t1..t_steps | prompt) under the processed target distribution, by enumeration."""
    joint: dict[tuple[int, ...], float] = {(): 1.0}
    with torch.inference_mode():
        for _ in range(steps):
            nxt: dict[tuple[int, ...], float] = {}
            for prefix, pr in joint.items():
                model.reset(len(prompt) + steps + 1)
                dist = probs(model.forward(torch.tensor(prompt + list(prefix)))[-1], params)
                for tok_id, pt in enumerate(dist.tolist()):
                    if pt > 0:
                        nxt[(*prefix, tok_id)] = pr * pt
            joint = nxt
    return joint
