"""An independent reading of pricing's E(B) for the CLI tests (a uniquely named module: the test dirs have no
__init__.py): the forwards per draft length from a summary's per-position counts, then the expectation over
every B-tuple of rows written out, without the max-of-draws shortcut the package uses."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any


def lengths(summary: Mapping[str, Any]) -> dict[int, int]:
    """Forwards per draft length d (0: plain) from docs/results.md's counts."""
    counts = [int(p["count"]) for p in summary["per_position"]] + [0]
    out = {0: int(summary["target_forwards"]) - int(summary["steps"])}
    for d in range(1, len(counts)):
        out[d] = counts[d - 1] - counts[d]
    return {d: n for d, n in out.items() if n}


def expected_e(
    summary: Mapping[str, Any], batch: int, step_s: Callable[[int, int], float], plain_s: float
) -> float:
    """τ̄ · t_plain(B) / E[t(B, max_r d_r)], rows drawn independently from the summary's forwards;
    ``plain_s`` is the step without speculation (no proposer at all)."""
    by_d = lengths(summary)
    total = sum(by_d.values())
    tau = (int(summary["target_forwards"]) + int(summary["accepted_tokens"])) / total
    cost = 0.0
    for rows in itertools.product(list(by_d), repeat=batch):
        p = 1.0
        for d in rows:
            p *= by_d[d] / total
        cost += p * step_s(batch, max(rows))
    return tau * plain_s / cost
