"""``--costs``: a predicted speedup per batch size for candidates given by their acceptance summaries.

``replay --costs``, ``replay --merge`` and ``select --from --costs`` call :func:`predictor` with the cost
file; the predictor turns candidates (``{"draft", "k", "summary"}``, optionally ``"lookup_s"``: replay's
own host time per row and step for a model-free method) into rows of E per batch size. Three sources:

- a **cost book** (``tune --batch``, ``bench --batch``: :mod:`specmeter.pricing.book`): every candidate at
  its own proposing cost and every step at the draft length it used, batched steps at their longest row
  (:mod:`specmeter.pricing.predict`). A borrowed cost, a busy or noisy surface and a refused figure are
  named in the row and in ``notes``;
- **what-if** cells (``whatif``): E at the summary's α for (k, B), linear between the measured α, with the
  plain steps (f) counted (:func:`specmeter.pricing.predict.with_plain_steps`): the cells were measured at
  full drafts and say nothing of a method's own proposing cost;
- a **sweep** of a real server (closed-loop cells): E(c, k) = E_decode(c, k) · τ_replay(k) / τ_sweep(c, k)
  with the plain-step correction. The step includes the swept drafter's proposing: for a model-free method
  the figure is a lower bound. Rate levels are left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from specmeter.metrics.batch_surface import tau_by_k
from specmeter.pricing.book import (
    CostBook,
    CostsError,
    book_from,
    machine_warning,
    read_json,
    result_verdict,
    walk_nodes,
)
from specmeter.pricing.predict import price_summary, with_plain_steps
from specmeter.pricing.whatif import surface_e

__all__ = ["Predictor", "drafting_share", "predictor"]

Predictor = Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]


def drafting_share(summary: Mapping[str, Any]) -> float:
    """f = S / target forwards in decode: the share of steps at which the method proposed (1 without
    the counts)."""
    steps, forwards = summary.get("steps"), summary.get("target_forwards")
    if isinstance(steps, int) and isinstance(forwards, int) and forwards > 0:
        return min(1.0, max(0.0, steps / forwards))
    return 1.0


def _tau(summary: Mapping[str, Any], k: int) -> float | None:
    cumulative = [p.get("cumulative") for p in summary.get("per_position") or [] if isinstance(p, Mapping)]
    return tau_by_k(cumulative, k).get(k)


def predictor(path: Path) -> Predictor:
    """The predictor of ``path``'s cost source (module docstring); :class:`CostsError` when it has none."""
    data = read_json(path)
    book = book_from(data, path)
    if book is not None:
        return _book_predictor(book)
    sweep = _sweep_cells(data)
    if sweep:
        return _sweep_predictor(path, sweep, machine_warning(result_verdict(data), "the sweep"))
    whatif = _whatif_section(data)
    if whatif is None:
        raise CostsError(
            f"--costs: {path} holds no cost surface (tune --batch, bench --batch), what-if cells (whatif) "
            "nor closed-loop sweep cells (sweep --concurrency)"
        )
    return _whatif_predictor(path, data, whatif)


def _book_predictor(book: CostBook) -> Predictor:
    batches = book.batches
    if not batches:
        raise CostsError(f"--costs: {book.path}: no batch size with a plain step (k = 0) in every surface")
    timed = ", ".join(book.surfaces)
    source = f"{book.path} ({book.kind}, cost surfaces of {timed})"

    def predict(candidates: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        rows = []
        notes = list(book.trust_lines())
        for c in candidates:
            label, summary = str(c["draft"]), c.get("summary") or {}
            lookup = c.get("lookup_s")
            replay_lookup = float(lookup) if isinstance(lookup, int | float) else None
            cost, by_batch = price_summary(book, label, summary, batches, replay_lookup_s=replay_lookup)
            priced = {str(b): p for b, p in by_batch.items()}
            any_priced = next(iter(priced.values()))
            rows.append({
                "draft": c["draft"], "k": int(c["k"]),
                "e": {b: p.e for b, p in priced.items()},
                "cost_basis": any_priced.basis, "cost": cost.describe(),
                "borrowed_from": any_priced.borrowed_from,
                "refused": {b: p.refused for b, p in priced.items() if p.refused},
            })  # fmt: skip
        borrowed = sorted({f"{r['draft']} (from {r['borrowed_from']})" for r in rows if r["borrowed_from"]})
        if borrowed:
            notes.append(
                "borrowed proposing costs, estimates: "
                + ", ".join(borrowed)
                + " — give tune --batch these candidates as --draft to time their own"
            )
        return {
            "source": source, "batches": [str(b) for b in batches], "rows": rows, "notes": notes,
            "verdict": book.verdict, "model": "book",
        }  # fmt: skip

    return predict


def _whatif_section(data: Any) -> Mapping[str, Any] | None:
    for node in walk_nodes(data):
        cells = node.get("cells")
        if isinstance(cells, list) and cells:
            first = cells[0]
            if isinstance(first, Mapping) and {"alpha", "k", "batch", "e"} <= set(first):
                return node
    return None


def _whatif_predictor(path: Path, data: Any, whatif: Mapping[str, Any]) -> Predictor:
    kind = str(data.get("kind", "result")) if isinstance(data, Mapping) else "result"
    batches: list[int] = []
    for c in whatif["cells"]:
        b = c.get("batch") if isinstance(c, Mapping) else None
        if isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= 4096:
            batches.append(b)
    batches = sorted(set(batches))
    source = f"{path} ({kind}, what-if cells)"
    notes = [
        "what-if cells were measured at full drafts with a draft model's cost: a method's own proposing cost "
        "is not in them"
    ]
    machine = machine_warning(result_verdict(data), "the what-if surface")
    if machine is not None:
        notes.append(machine)

    def predict(candidates: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        rows = []
        for c in candidates:
            s = c.get("summary") or {}
            k = int(c["k"])
            raw = s.get("acceptance_rate")
            alpha = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
            e: dict[str, float | None] = {}
            for b in batches:
                found = surface_e(whatif, alpha, k, b) if alpha is not None else None
                e[str(b)] = None
                if found is not None and alpha is not None:
                    e[str(b)] = with_plain_steps(found[0], 1.0 + k * alpha, drafting_share(s))
            rows.append({"draft": c["draft"], "k": k, "e": e, "cost_basis": "what-if", "borrowed_from": None,
                         "refused": {}})  # fmt: skip
        return {"source": source, "batches": [str(b) for b in batches], "rows": rows, "notes": notes,
                "model": "whatif"}  # fmt: skip

    return predict


def _sweep_cells(data: Any) -> list[Mapping[str, Any]]:
    """A sweep result's complete closed-loop cells with a decode speedup and a τ; [] when it is none."""
    sweep = data.get("sweep") if isinstance(data, Mapping) else None
    cells = sweep.get("cells") if isinstance(sweep, Mapping) else None
    if not isinstance(cells, list):
        return []
    out = []
    for c in cells:
        if not isinstance(c, Mapping):
            continue
        values = [c.get(key) for key in ("concurrency", "k", "e_decode", "tau")]
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in values):
            continue
        conc, k, e, tau = (float(x) for x in values if x is not None)
        finite = all(math.isfinite(x) for x in (conc, k, e, tau))
        if finite and 1 <= conc <= 4096 and 1 <= k <= 256 and e > 0 and tau >= 1 and conc == int(conc):
            out.append(c)
    return out


def _sweep_predictor(path: Path, cells: Sequence[Mapping[str, Any]], machine: str | None = None) -> Predictor:
    by_cell = {(int(c["concurrency"]), int(c["k"])): c for c in cells}
    batches = sorted({b for b, _ in by_cell})
    swept = sorted({k for _, k in by_cell})
    source = f"{path} (sweep: decode speedup per concurrency, rescaled to the replayed τ)"
    note = (
        "E(c, k) = the sweep's decode speedup at (c, k) × τ_replay(k) / τ_sweep(c, k): the step costs what "
        f"it cost in the sweep; only k ∈ {{{', '.join(map(str, swept))}}} were swept. For a model-free "
        "method the swept drafter's forwards stay in the step: a lower bound."
    )

    def predict(candidates: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        rows = []
        for c in candidates:
            s = c.get("summary") or {}
            k = int(c["k"])
            tau = _tau(s, k)
            e: dict[str, float | None] = {}
            for b in batches:
                cell = by_cell.get((b, k))
                e_k = None
                if cell is not None and tau is not None:
                    e_k = float(cell["e_decode"]) * tau / float(cell["tau"])
                e[str(b)] = with_plain_steps(e_k, tau, drafting_share(s))
            rows.append({"draft": c["draft"], "k": k, "e": e, "cost_basis": "sweep", "borrowed_from": None,
                         "refused": {}})  # fmt: skip
        notes = [note] if machine is None else [note, machine]
        return {"source": source, "batches": [str(b) for b in batches], "rows": rows, "note": note,
                "notes": notes, "model": "sweep"}  # fmt: skip

    return predict
