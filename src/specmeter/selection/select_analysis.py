"""Analysis behind ``specmeter select``: rank (draft, k) candidates for a traffic mix and recommend.

From the baseline and one run per candidate over the same prompts it computes the ``select`` section of the
result JSON (docs/selection.md): the ranking by traffic-weighted E_meas with bootstrap intervals, whether
the top two are statistically separated, per-domain α and E with danger flags, each draft's memory cost,
the best (draft, k) per domain and what a router by domain would gain over one draft for all traffic.

The router's per-domain choices are made on the same data they are scored on, so its gain is an upper
estimate (winner's curse); its interval holds those choices fixed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from specmeter.methods import DRAFT_MODEL
from specmeter.metrics.acceptance import acceptance_counts, acceptance_rate
from specmeter.metrics.memory import extra_memory_bytes
from specmeter.metrics.records import BASELINE, ModelInfo, RunRecord
from specmeter.metrics.speedup import by_occurrence
from specmeter.metrics.stats import percentile_interval
from specmeter.metrics.summary import judge, summarize
from specmeter.report.fmt import fmt_bytes
from specmeter.selection.mix import assign_domains, bootstrap_weighted, weighted_speedups

__all__ = ["analyse_select", "domains_of", "recommendation_lines"]

CONFIDENCE = 0.95
_DOMAIN_KEYS = (
    "requests",
    "accepted_tokens",
    "drafted_tokens",
    "acceptance_rate",
    "acceptance_rate_ci",
    "beta",
    "acceptance_length",
    "speedup_measured",
    "speedup_measured_ci",
    "danger_zone",
    "danger_reasons",
    "verdict",
    "warnings",
)


def domains_of(
    categories: Sequence[str], mix: Mapping[str, float] | None
) -> tuple[dict[str, float], dict[str, str | None]]:
    """(domain weights, category -> domain). Without a mix the domains are the categories, weighted by
    their share of the golden set, so the weighted speedup is the plain E_meas."""
    if mix is not None:
        return dict(mix), assign_domains(categories, mix)
    counts = {c: list(categories).count(c) for c in sorted(set(categories))}
    total = sum(counts.values()) or 1
    return {c: n / total for c, n in counts.items()}, {c: c for c in counts}


def _interval(samples: np.ndarray | None) -> list[float] | None:
    return None if samples is None else percentile_interval(samples, CONFIDENCE)


def _name(run: RunRecord) -> str:
    return run.draft.name if run.draft is not None else BASELINE


@dataclass(frozen=True)
class _Aligned:
    """Latencies of the requests every run finished: base[r], spec[r, j]; dom[r] = domain index or -1."""

    base: np.ndarray
    spec: np.ndarray
    dom: np.ndarray


def _align(
    baseline: RunRecord, runs: Sequence[RunRecord], names: list[str], assignment: Mapping[str, str | None]
) -> _Aligned:
    base_keyed = by_occurrence(baseline.requests)
    keyed = [by_occurrence(r.requests) for r in runs]
    keys = [k for k in base_keyed if all(k in kr for kr in keyed)]
    domains = [assignment.get(base_keyed[k].category) for k in keys]
    return _Aligned(
        base=np.array([base_keyed[k].latency_s for k in keys], dtype=np.float64),
        spec=np.array([[kr[k].latency_s for kr in keyed] for k in keys], dtype=np.float64).reshape(
            len(keys), len(runs)
        ),
        dom=np.array([-1 if d is None else names.index(d) for d in domains], dtype=np.int64),
    )


def _domain_rows(baseline: RunRecord, runs: Sequence[RunRecord], cats: set[str]) -> list[dict[str, Any]]:
    base_part = replace(baseline, requests=tuple(r for r in baseline.requests if r.category in cats))
    rows = []
    for run in runs:
        s = summarize(replace(run, requests=tuple(r for r in run.requests if r.category in cats)), base_part)
        rows.append({"draft": _name(run), "k": run.k, **{key: s[key] for key in _DOMAIN_KEYS}})
    return rows


def _best(rows: Sequence[Mapping[str, Any]]) -> int | None:
    """Index of the best candidate by measured E in a domain, or None where none beats the target alone."""
    scored = [
        (row["speedup_measured"], j) for j, row in enumerate(rows) if row["speedup_measured"] is not None
    ]
    if not scored:
        return None
    value, j = max(scored)
    return j if value >= 1.0 else None


@dataclass(frozen=True)
class _Scores:
    """Traffic-weighted E per column (candidates, then the router) and its bootstrap samples."""

    point: list[float | None]
    samples: np.ndarray | None

    def ci(self, j: int) -> list[float] | None:
        return None if self.samples is None else _interval(self.samples[:, j])


def _ranking(runs: Sequence[RunRecord], scores: _Scores) -> tuple[list[int], list[dict[str, Any]]]:
    order = sorted(range(len(runs)), key=lambda j: _sort_key(scores.point[j]), reverse=True)
    rows = []
    for rank, j in enumerate(order, start=1):
        alpha = acceptance_rate(acceptance_counts(runs[j].requests))
        counts = acceptance_counts(runs[j].requests)
        judged = judge(
            {"acceptance_rate": alpha, "speedup_measured": scores.point[j],
             "speedup_measured_ci": scores.ci(j), "steps": counts.steps,
             "target_forwards": counts.target_forwards},
            what="traffic-weighted",
        )  # fmt: skip
        rows.append(
            {
                "rank": rank,
                "draft": _name(runs[j]),
                "k": runs[j].k,
                "speedup_weighted": scores.point[j],
                "speedup_weighted_ci": scores.ci(j),
                "acceptance_rate": alpha,
                **judged,
            }
        )
    return order, rows


def _sort_key(value: float | None) -> float:
    return -np.inf if value is None else value


def _separation(runs: Sequence[RunRecord], order: list[int], scores: _Scores) -> dict[str, Any] | None:
    """Paired bootstrap of the difference between the top two: separated when its interval excludes 0."""
    if len(order) < 2:
        return None
    first, second = order[0], order[1]
    a, b = scores.point[first], scores.point[second]
    if a is None or b is None:
        return None
    diff = None if scores.samples is None else scores.samples[:, first] - scores.samples[:, second]
    ci = _interval(diff)
    return {
        "first": runs[first].label,
        "second": runs[second].label,
        "difference": a - b,
        "difference_ci": ci,
        "probability_first_better": None if diff is None else float(np.mean(diff > 0)),
        "separated": ci is not None and ci[0] > 0,
    }


def method_of(d: ModelInfo) -> str:
    """A candidate's method for the tables: its spec's label, or ``draft_model`` (a model directory)."""
    return d.method if d.method is not None else DRAFT_MODEL


def _memory(runs: Sequence[RunRecord]) -> dict[str, dict[str, Any]]:
    """Each candidate's method, the weights it adds, KV bytes per token and extra memory for the longest
    request it served (docs/methods.md: 0 for a model-free method, n/L of the target's KV for layers:n)."""
    out = {}
    for run in runs:
        d = run.draft
        assert d is not None
        context = max((r.prompt_tokens + r.output_tokens for r in run.requests), default=0)
        out[d.name] = {
            "method": method_of(d),
            "params": d.params,
            "weight_bytes": d.added_weight_bytes,  # weights it adds (layers:n adds none of its own)
            "kv_bytes_per_token": d.kv_bytes_per_token,
            "extra_memory_bytes": extra_memory_bytes(d.added_weight_bytes, d.kv_bytes_per_token, context),
            "context_tokens": context,
        }
    return out


def _routed(run: RunRecord, row: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("speedup_measured", "danger_zone", "danger_reasons", "verdict", "warnings")
    return {"draft": _name(run), "k": run.k, **{key: row.get(key) for key in keys}}


def analyse_select(
    baseline: RunRecord, runs: Sequence[RunRecord], mix: Mapping[str, float] | None
) -> dict[str, Any]:
    """The ``select`` section; ``mix`` as returned by ``mix.parse_mix`` (None: the golden set's own mix)."""
    runs = [r for r in runs if r.draft is not None]
    weights, assignment = domains_of([r.category for r in baseline.requests], mix)
    names, w = list(weights), list(weights.values())
    members = {n: {c for c, d in assignment.items() if d == n} for n in names}
    a = _align(baseline, runs, names, assignment)
    by_domain = {n: _domain_rows(baseline, runs, members[n]) for n in names}
    choice = {n: _best(rows) for n, rows in by_domain.items()}

    # The router is one more column: each request timed with its domain's choice (the baseline if none).
    picks = [None if d < 0 else choice[names[d]] for d in a.dom]
    router = np.array([a.base[i] if c is None else a.spec[i, c] for i, c in enumerate(picks)])
    columns = np.column_stack([a.spec, router]) if a.base.size else np.zeros((0, len(runs) + 1))
    scores = _Scores(
        weighted_speedups(a.base, columns, a.dom, w), bootstrap_weighted(a.base, columns, a.dom, w)
    )
    order, ranking = _ranking(runs, scores)
    memory = _memory(runs)
    routed = {n: None if c is None else _routed(runs[c], by_domain[n][c]) for n, c in choice.items()}
    router_drafts = sorted({r["draft"] for r in routed.values() if r is not None})

    single: dict[str, Any] | None = None
    gain = gain_ci = None
    router_e = scores.point[len(runs)]
    if order and (best := scores.point[order[0]]) is not None:
        j = order[0]
        single = {key: ranking[0][key] for key in ("draft", "k", "speedup_weighted", "speedup_weighted_ci")}
        single["danger_zone"] = ranking[0]["danger_zone"]
        if router_e is not None:
            gain = router_e / best - 1.0
            if scores.samples is not None:
                gain_ci = _interval(scores.samples[:, len(runs)] / scores.samples[:, j] - 1.0)

    section: dict[str, Any] = {
        "mix": weights,
        "mix_source": "option" if mix is not None else "workload",
        "domains": {
            n: {"weight": weights[n], "categories": sorted(members[n]), "requests": int((a.dom == i).sum())}
            for i, n in enumerate(names)
        },
        "unweighted_categories": sorted(c for c, d in assignment.items() if d is None),
        "requests_paired": int(a.base.size),
        "ranking": ranking,
        "separation": _separation(runs, order, scores),
        "by_domain": by_domain,
        "memory": memory,
        "recommendation": {
            "single": single,
            "by_domain": routed,
            "router": {
                "speedup_weighted": router_e,
                "speedup_weighted_ci": scores.ci(len(runs)),
                "gain_over_single": gain,
                "gain_over_single_ci": gain_ci,
                "drafts": router_drafts,
                "extra_memory_bytes": sum(memory[d]["extra_memory_bytes"] for d in router_drafts),
            },
        },
    }
    section["recommendation"]["lines"] = recommendation_lines(section)
    return section


def _x(value: Any) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _ci(ci: Any) -> str:
    return "" if not ci else f" [{ci[0]:.2f}, {ci[1]:.2f}]"


def _pct_ci(ci: Any) -> str:
    return "" if not ci else f" [{ci[0]:+.0%}, {ci[1]:+.0%}]"


def _tie_break(section: Mapping[str, Any]) -> str:
    """What decides between the top two when they tie: the one that holds less memory, named, where their
    extra memory differs; otherwise that memory does not decide (the same draft at two k, or two drafts
    of one size)."""
    ranking, memory = section.get("ranking") or [], section.get("memory") or {}
    if len(ranking) < 2:
        return "either will do."
    first, second = ranking[0]["draft"], ranking[1]["draft"]
    if first == second:
        return f"both are {first}: either k will do (the same draft holds the same memory)."
    a, b = ((memory.get(d) or {}).get("extra_memory_bytes") for d in (first, second))
    if a is None or b is None:
        return "prefer the one that holds less memory."
    if a == b:
        return f"both drafts hold {fmt_bytes(a)} of extra memory, so memory does not decide either."
    smaller = first if a < b else second
    return (
        f"prefer {smaller}, which holds less memory ({fmt_bytes(min(a, b))} against {fmt_bytes(max(a, b))})."
    )


def recommendation_lines(section: Mapping[str, Any]) -> list[str]:
    """The recommendation in plain sentences, from a ``select`` section."""
    rec = section["recommendation"]
    single, sep, router = rec["single"], section["separation"], rec["router"]
    if single is None:
        return ["No candidate finished a paired request: nothing to recommend."]
    lines = []
    label = f"{single['draft']} at k={single['k']}"
    if single["speedup_weighted"] < 1.0:
        lines.append(
            f"Do not speculate with one draft for all traffic: the best, {label}, is at "
            f"{_x(single['speedup_weighted'])}{_ci(single['speedup_weighted_ci'])}, "
            "slower than the target alone."
        )
    else:
        lines.append(
            f"One draft for all traffic: {label}, traffic-weighted E_meas "
            f"{_x(single['speedup_weighted'])}{_ci(single['speedup_weighted_ci'])}."
        )
    if sep is not None:
        if sep["separated"]:
            lines.append(
                f"It is ahead of {sep['second']} by {sep['difference']:+.2f}×{_ci(sep['difference_ci'])}: "
                "the ranking is statistically separated."
            )
        else:
            lines.append(
                f"Not separated from {sep['second']} "
                f"(difference {sep['difference']:+.2f}×{_ci(sep['difference_ci'])} "
                f"includes 0): on this golden set the two are a tie; {_tie_break(section)}"
            )
    for domain, pick in rec["by_domain"].items():
        if pick is None:
            lines.append(f"{domain}: no candidate beats the target alone; do not speculate on this traffic.")
        else:
            danger = (
                " — in the danger zone: " + " ".join(pick["danger_reasons"]) if pick["danger_zone"] else ""
            )
            lines.append(
                f"{domain}: {pick['draft']} at k={pick['k']} ({_x(pick['speedup_measured'])}){danger}"
                + "".join(f" — {w}" for w in pick.get("warnings") or [])
                + "."
            )
    if router["gain_over_single"] is not None and len(rec["by_domain"]) > 1:
        lines.append(
            f"A router by domain would reach "
            f"{_x(router['speedup_weighted'])}{_ci(router['speedup_weighted_ci'])}, "
            f"{router['gain_over_single']:+.0%}{_pct_ci(router['gain_over_single_ci'])} "
            "over one draft for all, "
            f"holding {len(router['drafts'])} draft(s) (an upper estimate: choices made on the same data)."
        )
    return lines
