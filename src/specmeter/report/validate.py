"""A result file read back (``report``, ``compare``, ``roi``) checked against docs/results.md, field by field.

Result files are often edited, merged or produced by other tools, and every reader downstream (charts,
bootstrap comparisons, the ROI) trusts their types. A value of the wrong type or out of its documented
range is reported with its path in the file (``candidates[0].k: expected an integer >= 0, got 'four'``)
instead of failing deep inside a chart. Only documented keys are checked: commands add their own sections
(``hygiene``, ``load``, ``server``, ``tune``) and later versions may add keys, which are left alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["validate_result"]

# docs/results.md, "Summary": counts are integers >= 0; rates lie in [0, 1]; the rest are plain numbers.
_COUNTS = ("requests", "steps", "target_forwards", "drafted_tokens", "accepted_tokens", "emitted_tokens",
           "rejections", "stalls")  # fmt: skip
_RATES = ("acceptance_rate", "beta", "stall_rate")
_NUMBERS = ("acceptance_length", "cost_ratio", "speedup_measured", "speedup_measured_decode", "speedup_seed",
            "speedup_leviathan", "speedup_calibrated", "jitter", "gap_p99_over_p50", "tokens_per_s",
            "decode_tokens_per_s", "extra_memory_bytes", "weight_traffic_per_token",
            "baseline_weight_traffic_per_token", "bandwidth_efficiency", "achieved_bytes_per_s",
            "copy_bytes_per_s", "bandwidth_fraction")  # fmt: skip
_INTERVALS = ("acceptance_rate_ci", "beta_ci", "acceptance_length_ci", "speedup_measured_ci")
_DISTRIBUTIONS = ("ttft_ms", "tpot_ms", "gap_ms", "gap_per_token_ms", "latency_ms")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def bad(self, where: str, expected: str, value: Any) -> None:
        self.problems.append(f"{where}: expected {expected}, got {_show(value)}")

    def number(self, where: str, value: Any, *, low: float | None = None, high: float | None = None,
               integer: bool = False, null: bool = True) -> None:  # fmt: skip
        if value is None and null:
            return
        kind = "an integer" if integer else "a number"
        if low is not None and high is not None:
            kind += f" in [{low:g}, {high:g}]"
        elif low is not None:
            kind += f" >= {low:g}"
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok and (
            not integer or isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        )
        ok = ok and math.isfinite(value)
        ok = ok and (low is None or value >= low) and (high is None or value <= high)
        if not ok:
            self.bad(where, kind + (" or null" if null else ""), value)

    def mapping(self, where: str, value: Any, *, null: bool = True) -> bool:
        """True when ``value`` is an object to look into."""
        if isinstance(value, Mapping):
            return True
        if not (value is None and null):
            self.bad(where, "an object" + (" or null" if null else ""), value)
        return False

    def summary(self, where: str, s: Any) -> None:
        if not self.mapping(where, s):
            return
        for key in _COUNTS:
            self.number(f"{where}.{key}", s.get(key), low=0, integer=True)
        for key in _RATES:
            self.number(f"{where}.{key}", s.get(key), low=0, high=1)
        for key in _NUMBERS:
            self.number(f"{where}.{key}", s.get(key))
        for key in _INTERVALS:
            ci = s.get(key)
            if ci is None:
                continue
            if not isinstance(ci, list) or len(ci) != 2:
                self.bad(f"{where}.{key}", "[lo, hi] or null", ci)
                continue
            for i, bound in enumerate(ci):
                self.number(f"{where}.{key}[{i}]", bound)
        for key in _DISTRIBUTIONS:
            dist = s.get(key)
            if self.mapping(f"{where}.{key}", dist):
                for q, value in dist.items():
                    self.number(f"{where}.{key}.{q}", value)
        positions = s.get("per_position")
        if positions is not None and not isinstance(positions, list):
            self.bad(f"{where}.per_position", "a list or null", positions)
        for i, entry in enumerate(positions if isinstance(positions, list) else []):
            at = f"{where}.per_position[{i}]"
            if not self.mapping(at, entry, null=False):
                continue
            self.number(f"{at}.position", entry.get("position"), low=1, integer=True)
            for key in ("cumulative", "conditional"):
                self.number(f"{at}.{key}", entry.get(key), low=0, high=1)
            for key in ("count", "reached"):
                self.number(f"{at}.{key}", entry.get(key), low=0, integer=True)
        danger = s.get("danger_zone")
        if danger is not None and not isinstance(danger, bool):
            self.bad(f"{where}.danger_zone", "true, false or null", danger)

    def by_category(self, where: str, value: Any) -> None:
        if not self.mapping(where, value):
            return
        for category, s in value.items():
            self.summary(f"{where}.{category}", s)

    def result(self, data: Any) -> None:
        if not isinstance(data, Mapping):
            self.bad("the file", "a JSON object (a specmeter result file)", type(data).__name__)
            return
        missing = [key for key in ("baseline", "candidates") if key not in data]
        if missing:
            self.problems.append(
                "not a specmeter result file (needs 'baseline' and 'candidates'; "
                f"{' and '.join(missing)} missing)"
            )
            return
        self.number("schema_version", data.get("schema_version"), low=1, integer=True)
        for key, kind in (("kind", str), ("complete", bool)):
            value = data.get(key)
            if value is not None and not isinstance(value, kind):
                self.bad(key, "a string" if kind is str else "true or false", value)
        if self.mapping("run", data.get("run")):
            self.mapping("run.config", data["run"].get("config"))
        baseline: Any = data.get("baseline")
        if self.mapping("baseline", baseline, null=False):
            self.summary("baseline.summary", baseline.get("summary"))
            self.by_category("baseline.by_category", baseline.get("by_category"))
        candidates = data.get("candidates")
        if "candidates" in data and not isinstance(candidates, list):
            self.bad("candidates", "a list", candidates)
        for i, c in enumerate(candidates if isinstance(candidates, list) else []):
            at = f"candidates[{i}]"
            if not self.mapping(at, c, null=False):
                continue
            draft = c.get("draft")
            if draft is not None and not isinstance(draft, str):
                self.bad(f"{at}.draft", "a string or null", draft)
            self.number(f"{at}.k", c.get("k"), low=0, integer=True)
            self.summary(f"{at}.summary", c.get("summary"))
            self.by_category(f"{at}.by_category", c.get("by_category"))


def validate_result(data: Any, limit: int = 5) -> list[str]:
    """Problems of a result file read back, each ``field.path: expected …, got …``; at most ``limit``
    (with a last line counting the rest). Empty when the documented fields have their documented types."""
    checker = _Checker()
    checker.result(data)
    problems = checker.problems
    if len(problems) > limit:
        problems = [*problems[:limit], f"… and {len(problems) - limit} more"]
    return problems
