"""The ``--fail-on`` gate of ``compare``: which changes count as regressions, and the comparison as JSON.

A regression is a *significant* change (its 95% interval excludes 0) in the worse direction whose size
exceeds the metric's threshold: absolute in the metric's unit (ms for latencies), or relative to run A
with a ``%`` suffix. Only candidates are gated; the baseline's latency rows are informational (they say
whether the machine itself changed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specmeter.metrics.records import BASELINE
from specmeter.store.compare import Block, Comparison, Diff

__all__ = ["FAIL_ON_KEYS", "Regression", "Threshold", "comparison_to_dict", "parse_thresholds", "regressions"]

FAIL_ON_KEYS = ("alpha", "beta", "tau", "position", "e_meas", "ttft", "tpot", "gap_p99")


@dataclass(frozen=True)
class Threshold:
    value: float
    relative: bool  # True: a fraction of run A's value ("10%")

    def exceeded(self, d: Diff) -> bool:
        if d.diff is None:
            return False
        if self.relative:
            return d.a is not None and d.a != 0 and abs(d.diff) / abs(d.a) > self.value
        return abs(d.diff) > self.value


def parse_thresholds(text: str) -> dict[str, Threshold]:
    """``alpha=0.05,e_meas=0.1,ttft=10%`` -> thresholds; ValueError naming the bad part."""
    out: dict[str, Threshold] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, raw = part.partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep or key not in FAIL_ON_KEYS:
            raise ValueError(
                f"--fail-on: {part!r} is not METRIC=THRESHOLD with METRIC one of {', '.join(FAIL_ON_KEYS)}"
            )
        relative = raw.endswith("%")
        try:
            value = float(raw.removesuffix("%"))
        except ValueError:
            raise ValueError(
                f"--fail-on: {part!r}: {raw!r} is not a number (or a percentage such as 10%)"
            ) from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"--fail-on: {part!r}: the threshold must be a number >= 0")
        out[key] = Threshold(value / 100.0 if relative else value, relative)
    if not out:
        raise ValueError("--fail-on: no thresholds given")
    return out


@dataclass(frozen=True)
class Regression:
    block: Block
    diff: Diff
    threshold: Threshold


def regressions(cmp: Comparison, thresholds: Mapping[str, Threshold]) -> tuple[list[Regression], list[str]]:
    """(regressions beyond thresholds, metrics that could not be tested). Candidates only, not baseline."""
    found: list[Regression] = []
    untested: set[str] = set()
    for block in cmp.blocks:
        if block.candidate == BASELINE:
            continue
        for d in block.rows:
            key = "position" if d.metric.startswith("p") and d.metric[1:].isdigit() else d.metric
            t = thresholds.get(key)
            if t is None:
                continue
            if d.ci is None and d.a is not None and d.b is not None:
                untested.add(key)
            elif d.change == "worse" and t.exceeded(d):
                found.append(Regression(block, d, t))
    return found, sorted(untested)


def comparison_to_dict(cmp: Comparison, found: Sequence[Regression] = ()) -> dict[str, Any]:
    """Plain JSON for CI pipelines."""
    flagged = {(id(r.block), r.diff.metric) for r in found}
    return {
        "a": cmp.a_name,
        "b": cmp.b_name,
        "approximate": cmp.approximate,
        "comparable": not cmp.mismatches,
        "mismatches": list(cmp.mismatches),
        "withheld": cmp.withheld,
        "notes": list(cmp.notes),
        "blocks": [
            {
                "candidate": b.candidate,
                "category": b.category,
                "paired": b.paired,
                "requests_a": b.requests_a,
                "requests_b": b.requests_b,
                "rows": [
                    {
                        "metric": d.metric,
                        "a": d.a,
                        "b": d.b,
                        "diff": d.diff,
                        "ci": None if d.ci is None else list(d.ci),
                        "approximate": d.approximate,
                        "significant": d.significant,
                        "change": d.change,
                        "regression": (id(b), d.metric) in flagged,
                    }
                    for d in b.rows
                ],
            }
            for b in cmp.blocks
        ],
        "regressions": len(found),
    }
