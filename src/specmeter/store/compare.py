"""``compare``: what changed between two runs, per candidate and per category, and is it real?

For α, β, τ, per-position acceptance, E_meas, TTFT p50, TPOT p50 and the chunk-gap p99, each row holds
run A's value, run B's, the difference B − A and a bootstrap 95% interval of that difference. With
per-request records (stored runs) the interval resamples each run's requests independently and
subtracts resample by resample (``store.resample``). With only summaries (result JSON files) it is
approximate: each run's own 95% interval is turned into a standard error and the two are combined as if
normal; figures without an interval in the summary (latency percentiles) then get none.

When both runs hold the same requests (the same golden set replayed), the bootstrap is *paired*: each
resample draws request ids and takes those requests from both runs, so prompt difficulty cancels and two
identical greedy runs differ by exactly 0. Otherwise (or with ``paired=False``) each run's requests are
resampled independently.

A change is *significant* when the interval excludes 0; ``store.gate`` turns significant changes beyond
``--fail-on`` thresholds into regressions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any, Literal

import numpy as np

from specmeter.metrics.records import BASELINE, run_label
from specmeter.store.resample import N_RESAMPLES, RequestSample, metric_keys
from specmeter.store.sources import RunSource

__all__ = ["ALL", "Block", "Comparison", "Diff", "compare_sources", "metric_label", "mismatches"]

_Z95 = 1.959963984540054
ALL = "all"

# key -> (label, higher is better, summary key, summary CI key)
_METRICS: dict[str, tuple[str, bool, str | None, str | None]] = {
    "alpha": ("α", True, "acceptance_rate", "acceptance_rate_ci"),
    "beta": ("β", True, "beta", "beta_ci"),
    "tau": ("τ", True, "acceptance_length", "acceptance_length_ci"),
    "e_meas": ("E_meas", True, "speedup_measured", "speedup_measured_ci"),
    "ttft": ("TTFT p50 ms", False, None, None),
    "tpot": ("TPOT p50 ms", False, None, None),
    "gap_p99": ("gap p99 ms", False, None, None),
}
_LATENCY = ("ttft", "tpot", "gap_p99")


def metric_label(key: str) -> str:
    if re.fullmatch(r"p\d+", key):
        return f"P{key[1:]} (position {key[1:]})"
    return _METRICS[key][0]


def _higher_is_better(key: str) -> bool:
    return True if key.startswith("p") and key[1:].isdigit() else _METRICS[key][1]


@dataclass(frozen=True)
class Diff:
    metric: str
    a: float | None
    b: float | None
    ci: tuple[float, float] | None
    approximate: bool

    @property
    def label(self) -> str:
        return metric_label(self.metric)

    @property
    def diff(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    @property
    def significant(self) -> bool:
        return self.ci is not None and (self.ci[0] > 0 or self.ci[1] < 0)

    @property
    def change(self) -> Literal["better", "worse", "same", "unknown"]:
        if self.diff is None or self.ci is None:
            return "unknown"
        if not self.significant:
            return "same"
        return "better" if (self.diff > 0) == _higher_is_better(self.metric) else "worse"


@dataclass(frozen=True)
class Block:
    """The rows of one candidate (or the baseline) in one category (or ``all``)."""

    candidate: str
    category: str
    requests_a: int | None
    requests_b: int | None
    rows: list[Diff]
    paired: bool = False


@dataclass
class Comparison:
    a_name: str
    b_name: str
    approximate: bool
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Why A and B do not measure the same thing (prompt sets, kinds, targets, k, temperature); unless
    # forced, intervals and significance are then withheld: a difference would not be the change's.
    mismatches: list[str] = field(default_factory=list)
    withheld: bool = False


# -------------------------------------------------------------------------------- matching


def _cand_key(c: Mapping[str, Any]) -> tuple[str, int]:
    return str(c.get("draft")), int(c.get("k") or 0)


def _run(key: tuple[str, int]) -> str:
    return run_label(*key)


def _candidates(source: RunSource) -> dict[tuple[str, int], Mapping[str, Any]]:
    out: dict[tuple[str, int], Mapping[str, Any]] = {}
    for c in source.result.get("candidates") or []:
        if isinstance(c, Mapping):
            out[_cand_key(c)] = c
    return out


def _pairs(a: RunSource, b: RunSource, notes: list[str]) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    ca, cb = _candidates(a), _candidates(b)
    common = [k for k in ca if k in cb]
    if not common and len(ca) == 1 and len(cb) == 1:
        (ka,), (kb,) = ca, cb
        notes.append(f"compared {_run(ka)} (A) with {_run(kb)} (B): their only candidates")
        return [(ka, kb)]
    if not common:
        raise ValueError(
            "no candidate in common (matched by draft name and k): "
            f"A has {', '.join(map(_run, ca)) or 'none'}; B has {', '.join(map(_run, cb)) or 'none'}"
        )
    for side, only in (("A", [k for k in ca if k not in cb]), ("B", [k for k in cb if k not in ca])):
        if only:
            notes.append(f"only in {side}, not compared: {', '.join(map(_run, only))}")
    return [(k, k) for k in common]


def _categories(*cands: Mapping[str, Any] | None) -> list[str]:
    names = {str(cat) for c in cands if c for cat in (c.get("by_category") or {})}
    return [ALL, *sorted(names)]


# -------------------------------------------------------------------------------- exact (records)


def _records(source: RunSource, slot: str, category: str) -> list[Any]:
    recs = source.slot_records(slot)
    return recs if category == ALL else [r for r in recs if r.category == category]


def _occurrence_keys(records: Sequence[Any]) -> list[tuple[str, int]]:
    seen: dict[str, int] = {}
    keys = []
    for r in records:
        n = seen.get(r.id, 0)
        seen[r.id] = n + 1
        keys.append((r.id, n))
    return keys


def _align(ra: list[Any], rb: list[Any], paired: bool) -> tuple[list[Any], bool]:
    """``rb`` in ``ra``'s request order when both hold the same requests (pairable), else as is."""
    ka, kb = _occurrence_keys(ra), _occurrence_keys(rb)
    if not paired or len(ka) != len(kb) or set(ka) != set(kb):
        return rb, False
    by_key = dict(zip(kb, rb, strict=True))
    return [by_key[k] for k in ka], True


def _exact_rows(
    sa: RequestSample, sb: RequestSample, keys: Sequence[str], n_resamples: int, paired: bool
) -> list[Diff]:
    pa, pb = sa.point(), sb.point()
    # The same seed on aligned samples draws the same requests in both runs: a paired bootstrap.
    ba, bb = sa.bootstrap(n_resamples, seed=0), sb.bootstrap(n_resamples, seed=0 if paired else 1)
    rows = []
    for key in keys:
        ci = None
        if ba is not None and bb is not None and pa[key] is not None and pb[key] is not None:
            d = bb[key] - ba[key]
            d = d[np.isfinite(d)]
            if d.size:
                lo, hi = np.percentile(d, [2.5, 97.5])
                ci = (float(lo), float(hi))
        rows.append(Diff(key, pa[key], pb[key], ci, approximate=False))
    return rows


def _compare_exact(a: RunSource, b: RunSource, cmp: Comparison, n_resamples: int, paired: bool) -> None:
    categories = sorted({r.record.category for src in (a, b) for r in src.requests or []})
    # With one category its block would repeat "all".
    shown = [ALL, *categories] if len(categories) > 1 else [ALL]
    slots = [
        (_run(ka), _run(kb), min(ka[1], kb[1]), _run(ka) if ka == kb else f"{_run(ka)} → {_run(kb)}")
        for ka, kb in _pairs(a, b, cmp.notes)
    ]
    for slot_a, slot_b, k, name in [*slots, (BASELINE, BASELINE, 0, BASELINE)]:
        for category in shown:
            ra, rb = _records(a, slot_a, category), _records(b, slot_b, category)
            if not ra or not rb:
                continue
            rb, is_paired = _align(ra, rb, paired)
            base_a = a.slot_records(BASELINE) if slot_a != BASELINE else None
            base_b = b.slot_records(BASELINE) if slot_b != BASELINE else None
            sa, sb = RequestSample(ra, base_a, k), RequestSample(rb, base_b, k)
            keys = _LATENCY if slot_a == BASELINE else metric_keys(k)
            rows = _exact_rows(sa, sb, keys, n_resamples, is_paired)
            cmp.blocks.append(Block(name, category, len(ra), len(rb), rows, paired=is_paired))


# -------------------------------------------------------------------------------- approximate


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _se_from_ci(ci: Any) -> float | None:
    if not isinstance(ci, Sequence) or isinstance(ci, str) or len(ci) != 2:
        return None
    lo, hi = _num(ci[0]), _num(ci[1])
    return None if lo is None or hi is None else (hi - lo) / (2 * _Z95)


def _summary_values(s: Mapping[str, Any], key: str) -> tuple[float | None, float | None]:
    """(value, standard error) of one metric from a summary; the error may be unknown (None)."""
    if key.startswith("p") and key[1:].isdigit():
        positions = s.get("per_position") or []
        i = int(key[1:]) - 1
        entry = positions[i] if i < len(positions) and isinstance(positions[i], Mapping) else {}
        p, count = _num(entry.get("cumulative")), _num(entry.get("count"))
        # Binomial error over steps: ignores within-request correlation, hence "approximate".
        se = math.sqrt(p * (1 - p) / count) if p is not None and count else None
        return p, se
    if key in _LATENCY:
        dist_key, q = {"ttft": ("ttft_ms", "p50"), "tpot": ("tpot_ms", "p50"), "gap_p99": ("gap_ms", "p99")}[
            key
        ]
        dist = s.get(dist_key)
        return (_num(dist.get(q)) if isinstance(dist, Mapping) else None), None
    _, _, value_key, ci_key = _METRICS[key]
    assert value_key is not None and ci_key is not None
    return _num(s.get(value_key)), _se_from_ci(s.get(ci_key))


def _approx_rows(sa: Mapping[str, Any], sb: Mapping[str, Any], keys: Sequence[str]) -> list[Diff]:
    rows = []
    for key in keys:
        (va, ea), (vb, eb) = _summary_values(sa, key), _summary_values(sb, key)
        ci = None
        if va is not None and vb is not None and ea is not None and eb is not None:
            half = _Z95 * math.hypot(ea, eb)
            ci = (vb - va - half, vb - va + half)
        rows.append(Diff(key, va, vb, ci, approximate=True))
    return rows


def _compare_approx(a: RunSource, b: RunSource, cmp: Comparison) -> None:
    for ka, kb in _pairs(a, b, cmp.notes):
        k = min(ka[1], kb[1])
        ca, cb = _candidates(a)[ka], _candidates(b)[kb]
        for category in _categories(ca, cb):
            if category == ALL:
                sa, sb = ca.get("summary"), cb.get("summary")
            else:
                sa, sb = (
                    (ca.get("by_category") or {}).get(category),
                    (cb.get("by_category") or {}).get(category),
                )
            if not isinstance(sa, Mapping) or not isinstance(sb, Mapping):
                continue
            name = _run(ka) if ka == kb else f"{_run(ka)} → {_run(kb)}"
            rows = _approx_rows(sa, sb, metric_keys(k))
            cmp.blocks.append(Block(name, category, _int(sa.get("requests")), _int(sb.get("requests")), rows))
    base_a, base_b = a.result.get("baseline") or {}, b.result.get("baseline") or {}
    if isinstance(base_a.get("summary"), Mapping) and isinstance(base_b.get("summary"), Mapping):
        sa, sb = base_a["summary"], base_b["summary"]
        cmp.blocks.append(
            Block(
                BASELINE,
                ALL,
                _int(sa.get("requests")),
                _int(sb.get("requests")),
                _approx_rows(sa, sb, _LATENCY),
            )
        )


def _int(value: Any) -> int | None:
    x = _num(value)
    return None if x is None else int(x)


def compare_sources(
    a: RunSource, b: RunSource, *, n_resamples: int = N_RESAMPLES, paired: bool = True, force: bool = False
) -> Comparison:
    """Compare run B against run A; raises ValueError when nothing can be matched.

    ``paired`` allows the paired bootstrap where both runs hold the same requests; False forces
    independent resampling. When the runs do not measure the same thing (:func:`mismatches`, or matched
    candidates of different k) the intervals are withheld (``withheld``) unless ``force``.
    """
    exact = bool(a.requests) and bool(b.requests)
    cmp = Comparison(a_name=a.name, b_name=b.name, approximate=not exact)
    cmp.notes.extend(a.notes + b.notes)
    cmp.mismatches = mismatches(a, b)
    for side, source in (("A", a), ("B", b)):
        machine = source.result.get("hygiene")
        if isinstance(machine, Mapping) and machine.get("verdict") in ("busy", "unusable"):
            reasons = "; ".join(str(r) for r in machine.get("reasons") or [])
            cmp.notes.append(
                f"run {side} ({source.name}) was measured on a {machine['verdict']} machine ({reasons}): "
                "a difference in its timings may be the machine's, not the change's"
            )
    if exact:
        _compare_exact(a, b, cmp, n_resamples, paired)
    else:
        _compare_approx(a, b, cmp)
        lacking = [f"{side} ({s.name})" for side, s in (("A", a), ("B", b)) if not s.requests]
        whose = " and ".join(lacking)
        cmp.notes.append(
            f"intervals are approximate: run {whose} {'has' if len(lacking) == 1 else 'have'} no per-request "
            "records (a result JSON file), so they combine each run's own 95% interval as if normal; latency "
            "percentiles get none"
        )
    cmp.mismatches += [
        f"different draft lengths: {_run(ka)} (A) against {_run(kb)} (B)"
        for ka, kb in _pairs(a, b, []) if ka[1] != kb[1]
    ]  # fmt: skip
    if cmp.mismatches and not force:
        cmp.withheld = True
        cmp.blocks = [replace(block, rows=[replace(d, ci=None) for d in block.rows]) for block in cmp.blocks]
    return cmp


def _section(result: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    for key in keys:
        value = result.get(key) if isinstance(result, Mapping) else None
        result = value if isinstance(value, Mapping) else {}
    return result


def _target(result: Mapping[str, Any]) -> str | None:
    name = _section(result, "run", "models", "target").get("name")
    if name is None:
        config = _section(result, "run", "config")
        name = config.get("model") or (PurePath(str(config["target"])).name if config.get("target") else None)
    return None if name is None else str(name)


def _request_ids(source: RunSource) -> set[str] | None:
    return {r.record.id for r in source.requests} if source.requests else None


# Kinds that measure the same thing. The demo's golden-set benches were stored as kind "demo" until
# 2026-12-03: they are bench runs (the demo now stores them as "bench"), comparable with any bench.
_KIND = {"demo": "bench"}


def _batch(batch: Any) -> str:
    return "one request at a time" if not batch else "waves of " + ", ".join(map(str, batch))


def _files(prompts: Any) -> list[str]:
    """``run.config.prompts``: one golden set's path, or the list of several (combined)."""
    return [str(p) for p in prompts] if isinstance(prompts, list) else [str(prompts)]


def _file_names(prompts: Any) -> list[str]:
    return [PurePath(p).name for p in _files(prompts)]


def _shown(prompts: Any) -> str:
    return " + ".join(_files(prompts))


def mismatches(a: RunSource, b: RunSource) -> list[str]:
    """What makes A and B measure different things: the kind of run (bench, load, …; the demo's benches
    are benches), the target, the prompt set (request ids where both runs have them, else the golden set's
    file names), the batch size (``bench --batch``) and the sampling temperature. A run that covers part of
    the other's prompts (interrupted) is not a mismatch."""
    out = []
    ka, kb = a.result.get("kind"), b.result.get("kind")
    if ka and kb and _KIND.get(ka, ka) != _KIND.get(kb, kb):
        out.append(f"different kinds of run: A is {ka}, B is {kb}")
    ta, tb = _target(a.result), _target(b.result)
    if ta and tb and ta != tb:
        out.append(f"different targets: A {ta}, B {tb}")
    ids_a, ids_b = _request_ids(a), _request_ids(b)
    if ids_a is not None and ids_b is not None:
        if not (ids_a <= ids_b or ids_b <= ids_a):
            out.append(
                f"different prompt sets: {len(ids_a & ids_b)} request ids in common of A's {len(ids_a)} and "
                f"B's {len(ids_b)}"
            )
    else:
        pa = _section(a.result, "run", "config").get("prompts")
        pb = _section(b.result, "run", "config").get("prompts")
        if pa and pb and _file_names(pa) != _file_names(pb):
            out.append(f"different prompt sets: A {_shown(pa)}, B {_shown(pb)}")
    batch_a, batch_b = (_section(s.result, "run", "config").get("batch") for s in (a, b))
    if batch_a != batch_b:  # bench --batch B: waves of B sequences; without it one request at a time
        out.append(f"different batch sizes: A {_batch(batch_a)}, B {_batch(batch_b)}")
    temp_a = _num(_section(a.result, "run", "config").get("temperature"))
    temp_b = _num(_section(b.result, "run", "config").get("temperature"))
    if temp_a is not None and temp_b is not None and temp_a != temp_b:
        out.append(f"different sampling temperatures: A {temp_a:g}, B {temp_b:g}")
    return out
