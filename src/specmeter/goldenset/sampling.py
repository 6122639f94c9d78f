"""Seeded stratified sampling: N prompts per category, or N in total split by a traffic mix.

Each category is sampled by its own generator, seeded from ``(seed, category)``: the prompts chosen for
``legal`` do not change when another category gains or loses prompts, and the same seed always gives the
same golden set. Within a category every subset of the requested size is equally likely (``random.sample``
without replacement); the chosen prompts are written in their source order.

With ``mix`` (``legal=0.7,general=0.3``; shares are normalised to sum to 1) the total ``n`` is split by
largest remainder, so the quotas sum to exactly ``n``. Categories missing from the mix are left out; a
category with fewer prompts than its quota gives all it has, and the shortfall is reported rather than
silently filled from other categories (that would change the mix the user asked for).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Sample", "quotas", "stratified_sample"]


@dataclass
class Sample:
    chosen: dict[str, list[int]] = field(default_factory=dict)  # category → indices, source order
    wanted: dict[str, int] = field(default_factory=dict)  # category → quota (None n: all)
    available: dict[str, int] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)  # categories left out by the mix

    @property
    def shortfalls(self) -> dict[str, tuple[int, int]]:
        """category → (wanted, got) where fewer prompts were available than wanted."""
        return {
            c: (w, len(self.chosen.get(c, [])))
            for c, w in self.wanted.items()
            if len(self.chosen.get(c, [])) < w
        }

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.chosen.values())


def quotas(n: int, mix: Mapping[str, float]) -> dict[str, int]:
    """``n`` split by the normalised shares, largest remainder first (ties: mix order); sums to ``n``."""
    total = sum(mix.values())
    if n < 0 or not mix or total <= 0 or any(v < 0 or not math.isfinite(v) for v in mix.values()):
        raise ValueError("mix shares must be >= 0 with a positive sum, n >= 0")
    exact = {c: n * v / total for c, v in mix.items()}
    out = {c: math.floor(x) for c, x in exact.items()}
    order = sorted(mix, key=lambda c: -(exact[c] - out[c]))  # stable: ties keep mix order
    for c in order[: n - sum(out.values())]:
        out[c] += 1
    return out


def stratified_sample(
    groups: Mapping[str, Sequence[int]],
    *,
    n: int | None = None,
    mix: Mapping[str, float] | None = None,
    seed: int = 0,
) -> Sample:
    """Choose from ``groups`` (category → candidate indices in source order); see the module docstring.

    Without ``mix``, ``n`` is per category (None: everything). With ``mix``, ``n`` is the total.
    """
    sample = Sample(available={c: len(v) for c, v in groups.items()})
    if mix is not None:
        if n is None:
            raise ValueError("a mix needs a total n")
        sample.wanted = quotas(n, mix)
        sample.excluded = [c for c in groups if c not in mix]
    else:
        sample.wanted = {c: len(v) if n is None else n for c, v in groups.items()}
    for category, quota in sample.wanted.items():
        candidates = list(groups.get(category, ()))
        take = min(quota, len(candidates))
        rng = random.Random(f"specmeter-golden:{seed}:{category}")
        sample.chosen[category] = (
            sorted(rng.sample(candidates, take)) if take < len(candidates) else candidates
        )
    return sample
