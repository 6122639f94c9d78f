"""Analysis behind ``specmeter select --from``: rank the (method, k) of a replay (or bench) result for a
traffic mix, without running a model.

The domains are the result's categories (``--mix`` weighs them and groups them by prefix exactly as
``select`` does: ``selection.mix``); a domain's figures are its categories' per-position counts pooled
(``selection.acceptance_source.pool``). Each candidate gets one figure per domain:

* with a cost surface (``--costs``, read by ``replay --costs``' predictor, passed in as ``predict``): the
  predicted E(B, k) = τ(k) · t_step(B, 0) / t_step(B, k) at the domain's per-position rates (docs/metrics.md,
  "Under load"), with the steps at which the method proposed nothing run as plain forwards (docs/replay.md,
  ``--costs``), at every batch size of the surface; the ranking is at one of them (``batch``, by default
  the smallest);
* without one, the expected tokens per step (per target forward), f · τ(k) + 1 − f with τ(k) = 1 +
  Σ_{i<k} P_i and f the share of steps that drafted: acceptance only, no speedup (E if drafting and
  verifying k tokens cost nothing, an upper bound).

A P_i that the domain's steps never reached is unknown; it is taken at its lower bound 0, and the row says
so (``lower_bound``), rather than leaving the candidate out.

Traffic weighting is ``select``'s E_mix = Σ_r w_r T_base,r / Σ_r w_r T_spec,r with each domain's figure
applied to its requests: a request of n tokens takes n · t_step(B, 0) without speculation and n · t_step(B,
0) / E_d with it, so E_mix = Σ_d w_d n̄_d / Σ_d (w_d n̄_d / E_d), n̄_d the domain's mean response tokens
(``mix.weighted_speedups`` with one row per domain); τ is weighted the same way (tokens per step over the
mix). A result holds no per-request times, so there are no intervals on the weighted figures and no
separation test; per domain, α keeps its bootstrap interval where the domain is one category.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from specmeter.metrics.records import run_label
from specmeter.metrics.summary import judge
from specmeter.selection.acceptance_source import (
    AcceptanceSourceError,
    Figures,
    Source,
    SourceCandidate,
    pool,
)
from specmeter.selection.mix import assign_domains, weighted_speedups

__all__ = ["Predict", "analyse_source", "select_from_source", "source_lines"]

# replay --costs' predictor: candidates (draft, k, summary) -> {"source", "batches", "rows": [{draft, k, e}]}
Predict = Callable[[Sequence[Mapping[str, Any]]], Mapping[str, Any]]
LOW_DRAFTING = 0.9  # below this share of decode steps with a proposal, a line says how much was plain


def _figures(c: SourceCandidate, category: str) -> Figures:
    return c.categories.get(category, c.overall) if c.categories else c.overall


def _domains(
    source: Source, mix: Mapping[str, float] | None
) -> tuple[dict[str, float], dict[str, str | None]]:
    """(weight per domain, category -> domain): ``select``'s rule (``select_analysis.domains_of``) on the
    result's request counts per category."""
    counts = source.categories
    if mix is not None:
        return dict(mix), assign_domains(counts, mix)
    total = sum(counts.values()) or 1
    return {c: n / total for c, n in counts.items()}, {c: c for c in counts}


def _judged(alpha: float | None, e: float | None, batch: int | None, share: float | None) -> dict[str, Any]:
    """``metrics.summary.judge`` on a predicted E (no interval: a result holds no per-request times): the
    verdict from E at ``batch``; α < 0.5 a warning beside it, the danger zone only without an E."""
    what = f"predicted (B={batch})" if batch is not None else "predicted"
    return judge({"acceptance_rate": alpha, "speedup": e, "drafting_share": share}, speedup_key="speedup",
                 what=what)  # fmt: skip


def _lookups(source: Source) -> dict[str, float]:
    """A replay result's lookup time per row and step of each model-free candidate (seconds), by run label:
    what ``--costs`` prices a method with where the cost file did not time it."""
    section = source.data.get("replay") if isinstance(source.data, Mapping) else None
    timed = section.get("lookup_us_per_step") if isinstance(section, Mapping) else None
    if not isinstance(timed, Mapping):
        return {}
    out = {}
    for label, us in timed.items():
        if isinstance(us, int | float) and not isinstance(us, bool) and 0 <= us < 1e9:
            out[str(label)] = float(us) / 1e6
    return out


def _weighted(
    base: np.ndarray, values: Sequence[Sequence[float | None]], weights: Sequence[float]
) -> list[float | None]:
    """E_mix (or τ_mix) per column of ``values[domain][candidate]``; None where a weighted domain lacks
    one."""
    if not values:
        return []
    rows = zip(base, values, weights, strict=True)
    spec = np.array(
        [[0.0 if w <= 0 else (b / v if v else np.nan) for v in row] for b, row, w in rows], dtype=np.float64
    )
    return weighted_speedups(base, spec, np.arange(len(values)), weights)


def analyse_source(
    source: Source,
    mix: Mapping[str, float] | None,
    predict: Predict | None = None,
    batch: int | None = None,
) -> dict[str, Any]:
    """The ``select`` section for ``source`` (see the module docstring); ``mix`` as ``mix.parse_mix``
    returns it (None: the result's own proportions). A ``batch`` the surface lacks is an
    ``AcceptanceSourceError``, a mix key matching no category a ``MixError``."""
    weights, assignment = _domains(source, mix)
    names, w = list(weights), list(weights.values())
    members = {n: sorted(c for c, d in assignment.items() if d == n) for n in names}
    cands = list(source.candidates)
    figs = {n: [pool(_figures(c, m) for m in members[n]) for c in cands] for n in names}

    # Predicted E per (domain, candidate) at every batch size of the surface.
    batches: list[int] = []
    e: dict[str, list[dict[str, float | None]]] = {n: [{} for _ in cands] for n in names}
    costs: dict[str, Any] | None = None
    priced: dict[str, list[dict[str, Any]]] = {n: [{} for _ in cands] for n in names}
    if predict is not None:
        lookups = _lookups(source)
        entries = [{"draft": c.draft, "k": c.k, "summary": f.summary(c.k),
                    "lookup_s": lookups.get(run_label(c.draft, c.k))} for n in names
                   for c, f in zip(cands, figs[n], strict=True)]  # fmt: skip
        got = predict(entries)
        rows = iter(got.get("rows") or [])
        for n in names:
            for j in range(len(cands)):
                row = next(rows)
                e[n][j] = dict(row.get("e") or {})
                priced[n][j] = {
                    "cost_basis": row.get("cost_basis"), "borrowed_from": row.get("borrowed_from"),
                    "refused": dict(row.get("refused") or {}),
                }  # fmt: skip
        batches = sorted(int(b) for b in got.get("batches") or [])
        if not batches:
            raise AcceptanceSourceError(f"--costs: {got.get('source')}: no batch size to predict at")
        if batch is not None and batch not in batches:
            raise AcceptanceSourceError(
                f"--batch {batch}: the cost surface has B = {', '.join(map(str, batches))} only"
            )
        batch = batches[0] if batch is None else batch
        costs = {"source": got.get("source"), "batches": batches, "batch": batch,
                 "notes": list(got.get("notes") or []), "verdict": got.get("verdict")}  # fmt: skip
    elif batch is not None:
        raise AcceptanceSourceError("--batch: a batch size needs a cost surface (--costs)")

    def value(n: str, j: int) -> float | None:
        return e[n][j].get(str(batch)) if costs is not None else figs[n][j].tokens_per_step(cands[j].k)

    first = [figs[n][0] for n in names]
    base = np.array([f.tokens / f.requests if f.requests else 0.0 for f in first], dtype=np.float64)
    taus: list[list[float | None]] = [
        [figs[n][j].tokens_per_step(c.k) for j, c in enumerate(cands)] for n in names
    ]
    tau_mix = _weighted(base, taus, w)
    e_mix = {b: _weighted(base, [[e[n][j].get(str(b)) for j in range(len(cands))] for n in names], w)
             for b in batches}  # fmt: skip
    score = e_mix[batch] if costs is not None and batch is not None else tau_mix

    by_domain = {
        n: [{**_domain_row(c, figs[n][j], e[n][j], batch), **priced[n][j]} for j, c in enumerate(cands)]
        for n in names
    }
    picks: dict[str, int | None] = {}
    for n in names:
        scored = [(v, j) for j in range(len(cands)) if (v := value(n, j)) is not None]
        pick = max(scored) if scored else None
        picks[n] = None if pick is None or (costs is not None and pick[0] < 1.0) else pick[1]

    def routed_value(n: str) -> float | None:
        j = picks[n]
        return 1.0 if j is None else value(n, j)  # the target alone where no method pays

    router = _weighted(base, [[routed_value(n)] for n in names], w)[0]

    order = sorted(range(len(cands)), key=lambda j: _sort_key(score[j]), reverse=True)
    ranking = []
    for rank, j in enumerate(order, start=1):
        c = cands[j]
        predicted = score[j] if costs is not None else None
        judged = _judged(c.overall.alpha, predicted, batch, c.overall.drafting_share)
        ranking.append({
            "rank": rank, "draft": c.draft, "k": c.k, "speedup_weighted": predicted,
            "speedup_weighted_ci": None, "speedup_by_batch": {str(b): e_mix[b][j] for b in batches},
            "tokens_per_step_weighted": tau_mix[j], "acceptance_rate": c.overall.alpha,
            "drafting_share": c.overall.drafting_share,
            "lower_bound": any(figs[n][j].lower_bound(c.k) for n, wn in zip(names, w, strict=True) if wn > 0),
            **judged,
        })  # fmt: skip

    single: dict[str, Any] | None = None
    gain = None
    if ranking and score[order[0]] is not None:
        top = ranking[0]
        keys = ("draft", "k", "speedup_weighted", "speedup_weighted_ci", "tokens_per_step_weighted",
                "lower_bound", "danger_zone")  # fmt: skip
        single = {key: top[key] for key in keys}
        top_score = score[order[0]]
        gain = None if router is None or not top_score else router / top_score - 1.0
    routed: dict[str, dict[str, Any] | None] = {}
    for n, picked in picks.items():
        if picked is None:
            routed[n] = None
            continue
        row = by_domain[n][picked]
        kept = {key: row[key] for key in _ROUTED if key in row}
        if costs is not None and batch is not None:
            kept.update(_within(by_domain[n], picked, str(batch)))
        routed[n] = kept
    section: dict[str, Any] = {
        "source": {"path": str(source.path), "kind": source.kind, "exact": source.exact},
        "basis": "predicted" if costs is not None else "acceptance",
        "costs": costs,
        "mix": weights,
        "mix_source": "option" if mix is not None else "result",
        "domains": {
            n: {"weight": weights[n], "categories": members[n], "requests": first[i].requests}
            for i, n in enumerate(names)
        },
        "unweighted_categories": sorted(c for c, d in assignment.items() if d is None),
        "requests": sum(f.requests for f in first),
        "ranking": ranking,
        "separation": None,
        "by_domain": by_domain,
        "memory": {},
        "recommendation": {
            "single": single,
            "by_domain": routed,
            "router": {
                "speedup_weighted": router if costs is not None else None,
                "tokens_per_step_weighted": router if costs is None else None,
                "gain_over_single": gain,
                "drafts": sorted({r["draft"] for r in routed.values() if r is not None}),
            },
        },
    }
    section["recommendation"]["lines"] = source_lines(section)
    return section


# What a domain's pick keeps of its row.
_ROUTED = (
    "draft", "k", "speedup_predicted", "tokens_per_step", "danger_zone", "danger_reasons", "verdict",
    "warnings", "cost_basis", "borrowed_from",
)  # fmt: skip


def _within(rows: Sequence[Mapping[str, Any]], j: int, batch: str) -> dict[str, Any]:
    """The pick's interval at ``batch`` (``Figures.speedup_interval``) and the other candidates whose
    predicted E lies inside it, best first: what another sample of the same traffic might pick instead."""
    ci = (rows[j].get("speedup_by_batch_ci") or {}).get(batch)
    close = []
    if ci is not None:
        for i, r in enumerate(rows):
            e = (r.get("speedup_by_batch") or {}).get(batch)
            if i != j and e is not None and ci[0] <= e <= ci[1]:
                close.append({"draft": r["draft"], "k": r["k"], "speedup_predicted": e})
        close.sort(key=lambda r: -r["speedup_predicted"])
    return {"speedup_predicted_ci": ci, "within_interval": close}


def _sort_key(value: float | None) -> float:
    return -np.inf if value is None else value


def _domain_row(
    c: SourceCandidate, f: Figures, e: Mapping[str, float | None], batch: int | None
) -> dict[str, Any]:
    predicted = e.get(str(batch)) if batch is not None else None
    judged = _judged(f.alpha, predicted, batch, f.drafting_share)
    return {
        "draft": c.draft, "k": c.k, "requests": f.requests, "accepted_tokens": f.accepted_tokens,
        "drafted_tokens": f.drafted, "acceptance_rate": f.alpha, "acceptance_rate_ci": f.alpha_ci,
        "beta": f.beta, "acceptance_length": f.acceptance_length, "acceptance_length_k": f.tau_low(c.k),
        "tokens_per_step": f.tokens_per_step(c.k), "lower_bound": f.lower_bound(c.k),
        "drafting_share": f.drafting_share, "speedup_predicted": predicted, "speedup_by_batch": dict(e),
        "speedup_by_batch_ci": {b: f.speedup_interval(v) for b, v in e.items()},
        **judged,
    }  # fmt: skip


def _x(value: Any) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _tau(value: Any) -> str:
    return "—" if value is None else f"{value:.2f} tokens/step"


def source_lines(section: Mapping[str, Any]) -> list[str]:
    """The recommendation in plain sentences, from a ``select`` section built by :func:`analyse_source`."""
    rec = section["recommendation"]
    single, router = rec["single"], rec["router"]
    costs = section.get("costs")
    if single is None:
        return ["No candidate has a figure to rank (no per-position acceptance): nothing to recommend."]
    label = f"{single['draft']} at k={single['k']}"
    lines = []
    if costs is not None:
        b = costs["batch"]
        if single["speedup_weighted"] < 1.0:
            lines.append(
                f"Do not speculate with one method for all traffic: the best, {label}, is predicted at "
                f"{_x(single['speedup_weighted'])} at B={b}, slower than the target alone."
            )
        else:
            lines.append(
                f"One method for all traffic: {label}, traffic-weighted E {_x(single['speedup_weighted'])} "
                f"predicted at B={b} from the cost surface (no interval: a result holds no per-request "
                "times)."
            )
    else:
        lines.append(
            f"Acceptance only (no cost surface, so no speedup: give --costs): {label} yields the most tokens "
            f"per step, traffic-weighted {_tau(single['tokens_per_step_weighted'])} — the speedup if "
            "drafting and verifying cost nothing, an upper bound."
        )
    top = (section.get("ranking") or [{}])[0]
    share = top.get("drafting_share")
    if share is not None and share < LOW_DRAFTING:
        lines.append(
            f"{label} proposed at {share:.0%} of the decode steps; the others are plain target forwards "
            "(one token each), counted as such."
        )
    if single.get("lower_bound"):
        lines.append(
            f"{label}: some domain's steps never reached a position up to k={single['k']}; its P there is "
            "taken as 0, so its figure is a lower bound."
        )
    for domain, pick in rec["by_domain"].items():
        if pick is None:
            lines.append(
                f"{domain}: no method beats the target alone at B={costs['batch']}; do not speculate on "
                "this traffic."
                if costs is not None
                else f"{domain}: no method has a figure here."
            )
        else:
            figure = _x(pick["speedup_predicted"]) if costs is not None else _tau(pick["tokens_per_step"])
            ci = pick.get("speedup_predicted_ci")
            if ci is not None:
                figure += f" [{ci[0]:.2f}, {ci[1]:.2f}] for another sample of this traffic"
            close = pick.get("within_interval") or []
            if close:
                shown = ", ".join(f"{c['draft']} k={c['k']} {_x(c['speedup_predicted'])}" for c in close[:3])
                more = f" and {len(close) - 3} more" if len(close) > 3 else ""
                figure += f"; within that interval: {shown}{more}"
            danger = (
                " — in the danger zone: " + " ".join(pick["danger_reasons"]) if pick["danger_zone"] else ""
            )
            warned = "".join(f" — {w}" for w in pick.get("warnings") or [])
            borrowed = (
                f" — priced with {pick['borrowed_from']}'s proposing cost, an estimate"
                if pick.get("borrowed_from") else ""
            )  # fmt: skip
            lines.append(f"{domain}: {pick['draft']} at k={pick['k']} ({figure}){danger}{warned}{borrowed}.")
    value = router["speedup_weighted"] if costs is not None else router["tokens_per_step_weighted"]
    if router["gain_over_single"] is not None and len(rec["by_domain"]) > 1 and value is not None:
        figure = _x(value) if costs is not None else _tau(value)
        lines.append(
            f"A router by domain would reach {figure}, {router['gain_over_single']:+.0%} over one method for "
            "all (an upper estimate: choices made on the same data)."
        )
    for note in (costs or {}).get("notes") or []:
        lines.append(f"Cost file: {note}.")
    if section["source"].get("exact") is False:
        lines.append(
            "The log holds sampled (or unknown-temperature) requests: the replayed acceptance estimates the "
            'live one, it is not the live run exactly (docs/metrics.md, "Replay").'
        )
    return lines


def select_from_source(
    source: Source,
    mix: Mapping[str, float] | None,
    predict: Predict | None = None,
    batch: int | None = None,
    *,
    costs_path: str | None = None,
) -> dict[str, Any]:
    """A ``select`` result from ``source``: its result file with kind ``select``, the ``select`` section of
    :func:`analyse_source` and what was asked under ``run.config.select`` (``report``, ``whatif --overlay``
    and ``roi --alpha-from`` read it like the source)."""
    section = analyse_source(source, mix, predict, batch)
    data = dict(source.data)
    run = dict(data.get("run") or {})
    asked = {
        "from": str(source.path), "kind": source.kind, "costs": costs_path,
        "mix": None if mix is None else dict(mix), "batch": (section.get("costs") or {}).get("batch"),
    }  # fmt: skip
    run["config"] = {**(run.get("config") or {}), "select": asked}
    data.update(kind="select", complete=True, run=run, select=section)
    return data
