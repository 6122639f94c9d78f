"""The batch-size → k schedule, with the semantics of vLLM's ``num_speculative_tokens_per_batch_size``.

vLLM (``vllm/v1/spec_decode/dynamic/utils.py``, 0.32) takes ``[[lo, hi, k], ...]``: inclusive batch-size
ranges, each with the draft length to use while that many requests are scheduled in a step. Its rules,
checked in that source and repeated here so a schedule specmeter prints is one vLLM accepts:

* every entry is three integers; ``lo`` and ``hi`` are ≥ 1, ``lo ≤ hi``; ``k`` ≥ 0 (0 = plain decoding);
* entries are sorted by ``lo`` and must not overlap; the first range starts at 1;
* a batch size in a gap between two ranges takes the previous range's k, and one above the last range
  takes the last range's k (``build_dynamic_sd_schedule_lookup`` "carries forward");
* the k looked up is capped at ``num_speculative_tokens`` (here: the engine's ``k_max``).

The batch size is the number of requests in the step (vLLM: ``len(num_scheduled_tokens)``). No torch here:
the CLI parses ``--k-schedule`` with this module and ``tune`` builds schedules with ``KSchedule.from_best``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["KSchedule", "ScheduleError", "find_schedule", "parse_schedule_option", "schedule_file"]


class ScheduleError(ValueError):
    """A schedule that vLLM would refuse; the message says which entry and why, in one line."""


@dataclass(frozen=True)
class KSchedule:
    """Inclusive batch-size ranges ``(lo, hi, k)``, sorted, the first starting at 1 (see :meth:`parse`)."""

    ranges: tuple[tuple[int, int, int], ...]

    @classmethod
    def parse(cls, value: Any) -> KSchedule:
        """Validate ``[[lo, hi, k], ...]`` (any order) as vLLM does; raises :class:`ScheduleError`."""
        if not isinstance(value, list | tuple) or not value:
            raise ScheduleError("a schedule is a non-empty list of [lo, hi, k] entries")
        entries: list[tuple[int, int, int]] = []
        for n, entry in enumerate(value, 1):
            if not isinstance(entry, list | tuple) or len(entry) != 3:
                raise ScheduleError(f"entry {n}: expected [lo, hi, k], got {json.dumps(entry)}")
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in entry):
                raise ScheduleError(f"entry {n}: lo, hi and k must be integers, got {json.dumps(entry)}")
            lo, hi, k = (int(x) for x in entry)
            if lo < 1 or hi < 1:
                raise ScheduleError(f"entry {n}: batch-size range [{lo}, {hi}] must be positive")
            if lo > hi:
                raise ScheduleError(f"entry {n}: range start {lo} is above its end {hi}")
            if k < 0:
                raise ScheduleError(f"entry {n}: k must be >= 0, got {k}")
            entries.append((lo, hi, k))
        entries.sort(key=lambda e: e[0])
        previous = 0
        for lo, hi, _ in entries:
            if lo <= previous:
                raise ScheduleError(f"ranges overlap: batch size {lo} is in two ranges")
            previous = hi
        if entries[0][0] != 1:
            raise ScheduleError(
                f"the first range must start at batch size 1 (it starts at {entries[0][0]}), "
                "so every batch size has a k"
            )
        return cls(tuple(entries))

    @classmethod
    def constant(cls, k: int) -> KSchedule:
        """The same k at every batch size (a plain ``--k``)."""
        return cls.parse([[1, 1, k]])

    @classmethod
    def from_best(cls, best: Mapping[int, int]) -> KSchedule:
        """A schedule through measured points ``{batch size: best k}``.

        Each measured batch size B_i rules up to the geometric midpoint with the next one,
        ⌊√(B_i·B_{i+1})⌋: batch-size cost grows roughly with log B on the machines we measured, so the
        switch sits halfway on that scale. The smallest point also covers everything below it, the largest
        everything above (carried forward, as vLLM does). Neighbouring ranges with the same k merge.
        """
        if not best:
            raise ScheduleError("no measured batch sizes to build a schedule from")
        points = sorted(best.items())
        entries: list[list[int]] = []
        lo = 1
        for i, (b, k) in enumerate(points):
            hi = b if i + 1 == len(points) else max(b, math.isqrt(b * points[i + 1][0]))
            if entries and entries[-1][2] == k:
                entries[-1][1] = hi
            else:
                entries.append([lo, hi, k])
            lo = hi + 1
        return cls.parse(entries)

    def k_for(self, batch: int, k_max: int | None = None) -> int:
        """The k for a step of ``batch`` sequences, capped at ``k_max`` (vLLM's num_speculative_tokens)."""
        if batch < 1:
            raise ValueError("batch size must be >= 1")
        k = self.ranges[0][2]
        for lo, _, rk in self.ranges:
            if lo > batch:
                break
            k = rk  # inside this range, or past it: carried forward until the next range starts
        return k if k_max is None else min(k, k_max)

    @property
    def max_k(self) -> int:
        return max(k for _, _, k in self.ranges)

    def to_json(self) -> list[list[int]]:
        return [list(r) for r in self.ranges]

    def vllm_config(self, method: str = "draft_model", model: str | None = None) -> dict[str, Any]:
        """vLLM's ``--speculative-config`` with this schedule; num_speculative_tokens is its largest k.

        vLLM requires num_speculative_tokens > 0, so a schedule that never speculates is best served with
        no speculative config at all; ``max(1, …)`` keeps the dict valid for the ranges that do.
        """
        cfg: dict[str, Any] = {"method": method}
        if model is not None:
            cfg["model"] = model
        cfg["num_speculative_tokens"] = max(1, self.max_k)
        cfg["num_speculative_tokens_per_batch_size"] = self.to_json()
        return cfg

    def describe(self) -> str:
        parts = []
        for lo, hi, k in self.ranges:
            span = f"B={lo}" if lo == hi else f"B={lo}–{hi}"
            parts.append(f"{span}: k={k}")
        return "; ".join(parts) + " (larger B: last k)"


KEY = "num_speculative_tokens_per_batch_size"


def _schedules_in(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every ``num_speculative_tokens_per_batch_size`` nested in ``value``, with its dotted path."""
    found: list[tuple[str, Any]] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            here = f"{path}.{key}" if path else str(key)
            if key == KEY:
                found.append((here, item))
            else:
                found += _schedules_in(item, here)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _schedules_in(item, f"{path}[{i}]")
    return found


def find_schedule(value: Any) -> Any:
    """The schedule in a JSON value: a bare ``[[lo, hi, k], ...]`` list, or the one
    ``num_speculative_tokens_per_batch_size`` nested in an object — a ``--speculative-config``, a ``tune
    --batch`` result (``tune.batch``, its ``speculative_config`` repeating it), a ``sweep`` result
    (``sweep.schedule``) or the demo's summary. ScheduleError when an object holds none, or several that
    differ (each named by its path)."""
    if not isinstance(value, Mapping):
        return value
    found = _schedules_in(value)
    distinct = {json.dumps(v, sort_keys=True) for _, v in found}
    if not found:
        kind = f" (a {value['kind']} result)" if isinstance(value.get("kind"), str) else ""
        raise ScheduleError(
            f"no {KEY} in this JSON object{kind}: give the list itself, a tune --batch result "
            "(tune.batch) or a sweep result (sweep.schedule)"
        )
    if len(distinct) > 1:
        raise ScheduleError(
            f"{len(distinct)} different schedules in it ({', '.join(p for p, _ in found)}); pass the one "
            "to serve as a JSON list"
        )
    return found[0][1]


def schedule_file(text: str) -> Path | None:
    """The file ``--k-schedule`` names, or None when its text is JSON itself (a list or an object)."""
    source = text.strip()
    return None if source.startswith(("[", "{")) else Path(source).expanduser()


def parse_schedule_option(text: str, option: str = "--k-schedule") -> KSchedule:
    """``--k-schedule`` as JSON text or as the path of a JSON file; ScheduleError names the option.

    The JSON is the list itself or any object holding exactly one schedule (``find_schedule``): a tune
    ``--json`` result of ``tune --batch``, a sweep result, a ``--speculative-config``.
    """
    source = text.strip()
    where = option
    path = schedule_file(text)
    if path is not None:
        if not path.is_file():
            raise ScheduleError(f"{option}: {text!r} is neither a JSON list nor a file (nor a JSON object)")
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ScheduleError(f"{option}: {path}: unreadable ({e})") from None
        where = f"{option} {path}"
    try:
        value = json.loads(source)
    except json.JSONDecodeError as e:
        raise ScheduleError(f"{where}: not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    try:
        return KSchedule.parse(find_schedule(value))
    except ScheduleError as e:
        raise ScheduleError(f"{where}: {e}") from None
