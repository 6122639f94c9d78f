"""A result file read back (``report``, ``compare``, ``roi``, ``whatif --overlay``) checked against
docs/results.md, field by field.

Result files are often edited, merged or produced by other tools, and every reader downstream (charts,
bootstrap comparisons, the ROI, the what-if overlay) trusts their types. A value of the wrong type or out of
its documented range is reported with its path in the file (``candidates[0].k: expected an integer >= 0,
got 'four'``) instead of failing deep inside a chart — or, for ``whatif --overlay``, after a whole
measurement. Only documented keys are checked: commands add their own sections (``hygiene``, ``load``,
``server``, ``tune``) and later versions may add keys, which are left alone.

Besides the keys every result shares, the sections that readers read back have a small schema each:
``sweep`` (the HTML report, ``roi --from-sweep``), ``whatif`` (the HTML report, ``roi --from-whatif``) and
a ``monitor --json`` file's ``windows`` (``whatif --overlay``). One entry point per reader:
:func:`validate_result` (a whole result file, its ``sweep``/``whatif`` section included when its kind is
that), :func:`validate_sweep` and :func:`validate_whatif` (the section alone: ``roi`` reads files holding
little more), :func:`validate_overlay` (a bench-like result or monitor windows).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["validate_overlay", "validate_result", "validate_sweep", "validate_whatif"]

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
        known = len(self.problems)
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
        if len(self.problems) == known:
            self.across(where, s)

    def across(self, where: str, s: Mapping[str, Any]) -> None:
        """The summary's fields against each other (each is already of its type and range): accepted and
        rejected tokens within the drafted ones, α = accepted / drafted, and per position the counts
        non-increasing, reached within drafted and P_i non-increasing (a position is reached only through
        the ones before it)."""
        drafted, accepted = s.get("drafted_tokens"), s.get("accepted_tokens")
        if isinstance(drafted, int | float) and isinstance(accepted, int | float):
            if accepted > drafted:
                self.problems.append(
                    f"{where}.accepted_tokens: {accepted} accepted of {drafted} drafted (accepted <= drafted)"
                )
                return
            rate = s.get("acceptance_rate")
            if drafted and isinstance(rate, int | float) and abs(rate - accepted / drafted) > 1e-6:
                self.problems.append(
                    f"{where}.acceptance_rate: {rate:g}, but accepted / drafted is {accepted / drafted:g}"
                )
                return
            rejections = s.get("rejections")
            if isinstance(rejections, int | float) and rejections > drafted:
                self.problems.append(f"{where}.rejections: {rejections} rejected of {drafted} drafted")
                return
        before: Mapping[str, Any] | None = None
        for i, entry in enumerate(s.get("per_position") or []):
            at = f"{where}.per_position[{i}]"
            count, reached, p = entry.get("count"), entry.get("reached"), entry.get("cumulative")
            if isinstance(count, int | float) and isinstance(reached, int | float) and reached > count:
                self.problems.append(f"{at}.reached: {reached}, more than its count {count}")
                return
            if before is not None:
                for key in ("count", "reached", "cumulative"):
                    now, then = entry.get(key), before.get(key)
                    if isinstance(now, int | float) and isinstance(then, int | float) and now > then + 1e-9:
                        self.problems.append(
                            f"{at}.{key}: {now:g}, above position {i}'s {then:g} (it never rises with the "
                            "position)"
                        )
                        return
            before = (
                entry
                if p is not None
                else {**entry, "cumulative": before.get("cumulative") if before else None}
            )

    def by_category(self, where: str, value: Any) -> None:
        if not self.mapping(where, value):
            return
        for category, s in value.items():
            self.summary(f"{where}.{category}", s)

    def text(self, where: str, value: Any, *, null: bool = True) -> None:
        if not (isinstance(value, str) or (value is None and null)):
            self.bad(where, "a string" + (" or null" if null else ""), value)

    def flag(self, where: str, value: Any) -> None:
        if value is not None and not isinstance(value, bool):
            self.bad(where, "true, false or null", value)

    def interval(self, where: str, value: Any) -> None:
        """``[lo, hi]`` of numbers, or null."""
        if value is None:
            return
        if not isinstance(value, list) or len(value) != 2:
            self.bad(where, "[lo, hi] or null", value)
            return
        for i, bound in enumerate(value):
            self.number(f"{where}[{i}]", bound, null=False)

    def objects(self, where: str, value: Any) -> list[tuple[str, Mapping[str, Any]]]:
        """(path, object) of each entry of a list of objects (null: none); a wrong entry is a problem."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.bad(where, "a list or null", value)
            return []
        return [
            (f"{where}[{i}]", v) for i, v in enumerate(value) if self.mapping(f"{where}[{i}]", v, null=False)
        ]

    def strings(self, where: str, value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, list):
            self.bad(where, "a list or null", value)
            return
        for i, v in enumerate(value):
            self.text(f"{where}[{i}]", v, null=False)

    def percentiles(self, where: str, value: Any) -> None:
        if self.mapping(where, value):
            for q, v in value.items():
                self.number(f"{where}.{q}", v)

    def sweep(self, where: str, s: Any) -> None:
        """The ``sweep`` section (docs/serving.md): what ``report`` and ``roi --from-sweep`` read."""
        if not self.mapping(where, s):
            return
        self.strings(f"{where}.levels", s.get("levels"))
        for at, c in self.objects(f"{where}.cells", s.get("cells")):
            for key in ("run", "level"):
                self.text(f"{at}.{key}", c.get(key))
            self.number(f"{at}.k", c.get("k"), low=0, integer=True)
            self.number(f"{at}.concurrency", c.get("concurrency"), low=1, integer=True)
            for key in ("rate", "e", "e_first", "e_end", "e_decode", "requests_per_s", "tau"):
                self.number(f"{at}.{key}", c.get(key), low=0)
            for key in ("e_ci", "e_first_ci", "e_end_ci"):
                self.interval(f"{at}.{key}", c.get(key))
            self.number(f"{at}.alpha", c.get("alpha"), low=0, high=1)
            for key in ("stalls", "requests", "failed"):
                self.number(f"{at}.{key}", c.get(key), low=0, integer=True)
            for key in ("ttft_ms", "tpot_ms", "gap_ms", "gap_per_token_ms"):
                self.percentiles(f"{at}.{key}", c.get(key))
            if self.mapping(f"{at}.counters", c.get("counters")):
                self.flag(f"{at}.counters.equal", c["counters"].get("equal"))
        for at, b in self.objects(f"{where}.best", s.get("best")):
            self.text(f"{at}.level", b.get("level"))
            self.number(f"{at}.k", b.get("k"), low=0, integer=True)
            self.number(f"{at}.e", b.get("e"), low=0)
            self.interval(f"{at}.e_ci", b.get("e_ci"))
            self.flag(f"{at}.sure", b.get("sure"))
        for at, d in self.objects(f"{where}.drift", s.get("drift")):
            self.text(f"{at}.level", d.get("level"))
            self.number(f"{at}.first_over_end", d.get("first_over_end"), low=0)
            self.interval(f"{at}.ci", d.get("ci"))
        if self.mapping(f"{where}.schedule", s.get("schedule")):
            self.text(f"{where}.schedule.describe", s["schedule"].get("describe"))
        capacity = s.get("capacity")
        if self.mapping(f"{where}.capacity", capacity):
            self.text(f"{where}.capacity.headline", capacity.get("headline"))
            for role in ("baseline", "speculative"):
                block = capacity.get(role)
                if self.mapping(f"{where}.capacity.{role}", block):
                    self.number(f"{where}.capacity.{role}.requests_per_s", block.get("requests_per_s"), low=0)
                    self.text(f"{where}.capacity.{role}.level", block.get("level"))
        self.strings(f"{where}.failures", s.get("failures"))
        validate = s.get("validate")
        if self.mapping(f"{where}.validate", validate):
            for at, r in self.objects(f"{where}.validate.levels", validate.get("levels")):
                for key in ("k_scheduled", "best_static_k"):
                    self.number(f"{at}.{key}", r.get(key), low=0, integer=True)
                for key in ("e", "best_static_e"):
                    self.number(f"{at}.{key}", r.get(key), low=0)
                for key in ("e_ci", "best_static_e_ci"):
                    self.interval(f"{at}.{key}", r.get(key))
                self.flag(f"{at}.below_best_static", r.get("below_best_static"))

    def whatif(self, where: str, s: Any) -> None:
        """The ``whatif`` section (docs/results.md): what ``report`` and ``roi --from-whatif`` read."""
        if not self.mapping(where, s):
            return
        self.number(f"{where}.cost_ratio", s.get("cost_ratio"), low=0)
        for key, low in (("alphas", 0), ("ks", 1), ("batches", 1)):
            values = s.get(key)
            if values is not None and not isinstance(values, list):
                self.bad(f"{where}.{key}", "a list or null", values)
                continue
            for i, v in enumerate(values or []):
                self.number(f"{where}.{key}[{i}]", v, low=low, high=1 if key == "alphas" else None,
                            integer=key != "alphas", null=False)  # fmt: skip
        draft = s.get("draft")
        if self.mapping(f"{where}.draft", draft):
            self.mapping(f"{where}.draft.standin", draft.get("standin"))
        for at, c in self.objects(f"{where}.cells", s.get("cells")):
            # Every cell is keyed by (α, k, B): the surface, break-even and best k read all three.
            self.number(f"{at}.alpha", c.get("alpha"), low=0, high=1, null=False)
            self.number(f"{at}.k", c.get("k"), low=1, integer=True, null=False)
            self.number(f"{at}.batch", c.get("batch"), low=1, integer=True, null=False)
            for key in ("e", "e_decode", "measured_tau", "requested_tau", "decode_tokens_per_s"):
                self.number(f"{at}.{key}", c.get(key), low=0)
            for key in ("e_ci", "e_decode_ci", "measured_alpha_ci"):
                self.interval(f"{at}.{key}", c.get(key))
            self.number(f"{at}.measured_alpha", c.get("measured_alpha"), low=0, high=1)
        break_even = s.get("break_even")
        if self.mapping(f"{where}.break_even", break_even):
            for at, r in self.objects(f"{where}.break_even.best", break_even.get("best")):
                self.number(f"{at}.batch", r.get("batch"), low=1, integer=True)
                self.number(f"{at}.alpha", r.get("alpha"), low=0, high=1)
                self.number(f"{at}.k", r.get("k"), low=0, integer=True)
        for at, o in self.objects(f"{where}.overlay", s.get("overlay")):
            self.number(f"{at}.alpha", o.get("alpha"), low=0, high=1)
            self.number(f"{at}.measured_e", o.get("measured_e"), low=0)
            for at_s, p in self.objects(f"{at}.surface", o.get("surface")):
                self.number(f"{at_s}.batch", p.get("batch"), low=1, integer=True, null=False)
                self.number(f"{at_s}.e", p.get("e"), low=0)

    def windows(self, where: str, value: Any) -> None:
        """A ``monitor --json`` file's windows (docs/monitoring.md): what ``whatif --overlay`` reads."""
        for at, w in self.objects(where, value):
            for key in ("domain", "tenant"):
                self.text(f"{at}.{key}", w.get(key))
            self.number(f"{at}.acceptance_rate", w.get("acceptance_rate"), low=0, high=1)
            self.interval(f"{at}.acceptance_rate_ci", w.get("acceptance_rate_ci"))
            self.number(f"{at}.acceptance_length", w.get("acceptance_length"), low=0)
            for key in ("requests", "steps", "drafted_tokens", "accepted_tokens", "tokens"):
                self.number(f"{at}.{key}", w.get(key), low=0, integer=True)

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
        self.sections(data)

    def sections(self, data: Mapping[str, Any]) -> None:
        """The section a result of kind ``sweep`` or ``whatif`` adds, which its readers read back."""
        for name in ("sweep", "whatif"):
            if data.get("kind") == name and name in data:
                getattr(self, name)(name, data[name])


def _limited(problems: list[str], limit: int) -> list[str]:
    if len(problems) > limit:
        return [*problems[:limit], f"… and {len(problems) - limit} more"]
    return problems


def validate_result(data: Any, limit: int = 5) -> list[str]:
    """Problems of a result file read back, each ``field.path: expected …, got …``; at most ``limit``
    (with a last line counting the rest). Empty when the documented fields have their documented types.
    A ``sweep`` or ``whatif`` result's own section is checked too."""
    checker = _Checker()
    checker.result(data)
    return _limited(checker.problems, limit)


def _section(name: str, data: Any, limit: int) -> list[str]:
    checker = _Checker()
    if not isinstance(data, Mapping):
        checker.bad("the file", "a JSON object (a specmeter result file)", type(data).__name__)
    else:
        checker.text("kind", data.get("kind"))
        getattr(checker, name)(name, data.get(name))
    return _limited(checker.problems, limit)


def validate_sweep(data: Any, limit: int = 5) -> list[str]:
    """Problems of a sweep result's ``sweep`` section (``roi --from-sweep``), as :func:`validate_result`."""
    return _section("sweep", data, limit)


def validate_whatif(data: Any, limit: int = 5) -> list[str]:
    """Problems of a what-if result's ``whatif`` section (``roi --from-whatif``), as ``validate_result``."""
    return _section("whatif", data, limit)


def validate_overlay(data: Any, limit: int = 5) -> list[str]:
    """Problems of a ``whatif --overlay`` file: a ``monitor --json`` file (``windows``, no ``candidates``) or
    a result file (bench, select, tune …: :func:`validate_result`), as :func:`validate_result`."""
    checker = _Checker()
    if isinstance(data, Mapping) and "windows" in data and "candidates" not in data:
        checker.windows("windows", data["windows"])
    elif isinstance(data, Mapping) and not ("baseline" in data or "candidates" in data):
        checker.problems.append(
            "neither a specmeter result file (needs 'baseline' and 'candidates') nor a monitor --json file "
            "(needs 'windows')"
        )
    else:
        checker.result(data)
    return _limited(checker.problems, limit)
