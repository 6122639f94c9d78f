"""``--costs``: a predicted speedup per batch size from a measured cost surface and the replayed acceptance.

Three sources:

- a **cost surface** t_step(B, k), from a ``tune --batch`` result (its ``batch.surface``) or a
  ``bench --batch`` result (``batch.surfaces``: the first draft's): E(B, k) = τ(k) · t_step(B, 0) /
  t_step(B, k) (``metrics.batch_surface.predict_speedup_batched``, docs/metrics.md "speedup at batch size
  B"), with τ(k) = 1 + Σ_{i<k} P_i from the replayed per-position acceptance
  (``metrics.batch_surface.tau_by_k``). For a model-free method the surface's draft forwards are taken
  out of the step (t_step − draft time): its proposing costs host time the surface did not time;
- a **what-if** result (``whatif``'s section with ``cells``): E at the replayed α for (k, B), linear
  between the measured α (``selection.whatif_surface.surface_e``);
- a **sweep** of a real server (``sweep``'s ``cells``, closed-loop levels c = concurrency): its measured
  decode speedup at (c, k), rescaled from the swept drafter's τ to the replayed one: E(c, k) =
  E_decode(c, k) · τ_replay(k) / τ_sweep(c, k). A step at (c, k) costs what it cost in the sweep whatever
  it accepts (the verify forward covers k + 1 positions either way), so only tokens per step change
  (docs/metrics.md, "Replay"). The step includes the swept drafter's proposing: for a model-free method,
  which proposes on the host, the figure is a lower bound. Rate levels have no batch size: left out.

All three assume that every step drafts k. A method that proposes at only a share f = S / (target forwards
in decode) of the steps (an n-gram lookup that finds no match, suffix decoding on text it has not seen) runs
the rest as plain target forwards, which yield one token at t_step(B, 0). With E_k the speedup above and τ
its tokens per drafting step (τ(k); 1 + k·α on a what-if surface), so that a drafting step costs τ / E_k
plain steps, the speedup over the whole decode is

    E = (f · τ + 1 − f) / (f · τ / E_k + 1 − f),

which is E_k at f = 1 (a draft model drafts at every step but a request's last) and 1 at f = 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from specmeter import jsonsafe
from specmeter.metrics.batch_surface import CostSurface, SurfacePoint, predict_speedup_batched, tau_by_k
from specmeter.selection.whatif_surface import surface_e

__all__ = ["CostsError", "drafting_share", "predictor", "with_plain_steps"]

MS = 1000.0
_MODEL_FREE = ("ngram", "ngram-simple", "ngram-map-k", "suffix")


class CostsError(ValueError):
    """``--costs`` names a file without a cost surface or what-if cells; one line naming the file."""


def _walk(obj: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(obj, Mapping):
        yield obj
        for v in obj.values():
            yield from _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v)


def _surface(section: Mapping[str, Any]) -> CostSurface | None:
    points = []
    for p in section.get("points") or []:
        try:
            points.append(
                SurfacePoint(
                    int(p["batch"]),
                    int(p["k"]),
                    float(p["step_ms"]) / MS,
                    float(p.get("draft_ms") or 0) / MS,
                    float(p.get("verify_ms") or 0) / MS,
                    float(p.get("step_spread_ms") or 0) / MS,
                    int(p.get("steps") or 0),
                )
            )
        except (KeyError, TypeError, ValueError):
            return None
    return CostSurface(tuple(points)) if points else None


def _read(path: Path) -> Any:
    try:
        return jsonsafe.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CostsError(f"--costs: {path}: cannot read a JSON result ({e})") from None


def _model_free(label: str) -> bool:
    return label.split(":", 1)[0] in _MODEL_FREE


def predictor(path: Path) -> Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]:
    """From candidates (replay's entries) to ``{"source", "batches", "rows": [{draft, k, e: {B: E}}]}``."""
    data = _read(path)
    surface: CostSurface | None = None
    whatif: Mapping[str, Any] | None = None
    sweep = _sweep_cells(data)
    if sweep:
        return _sweep_predictor(path, sweep)
    for node in _walk(data):
        if surface is None and isinstance(node.get("points"), list) and node["points"]:
            first = node["points"][0]
            if isinstance(first, Mapping) and {"batch", "k", "step_ms"} <= set(first):
                surface = _surface(node)
        if whatif is None and isinstance(node.get("cells"), list) and node["cells"]:
            first = node["cells"][0]
            if isinstance(first, Mapping) and {"alpha", "k", "batch", "e"} <= set(first):
                whatif = node
    if surface is None and whatif is None:
        raise CostsError(
            f"--costs: {path} holds no cost surface (tune --batch, bench --batch), what-if cells (whatif) "
            "nor closed-loop sweep cells (sweep --concurrency)"
        )
    kind = str(data.get("kind", "result")) if isinstance(data, Mapping) else "result"
    source = f"{path} ({kind}, {'cost surface' if surface is not None else 'what-if cells'})"

    def predict(candidates: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        rows = []
        if surface is not None:
            batches = surface.batches
        else:
            assert whatif is not None
            batches = sorted({int(c["batch"]) for c in whatif["cells"] if c.get("batch") is not None})
        for c in candidates:
            s = c.get("summary") or {}
            k = int(c["k"])
            e: dict[str, float | None] = {}
            for b in batches:
                e[str(b)] = _e(surface, whatif, s, str(c["draft"]), k, b)
            rows.append({"draft": c["draft"], "k": k, "e": e})
        return {"source": source, "batches": [str(b) for b in batches], "rows": rows}

    return predict


def drafting_share(summary: Mapping[str, Any]) -> float:
    """f = S / target forwards in decode: the share of steps at which the method proposed (1 without
    the counts)."""
    steps, forwards = summary.get("steps"), summary.get("target_forwards")
    if isinstance(steps, int) and isinstance(forwards, int) and forwards > 0:
        return min(1.0, steps / forwards)
    return 1.0


def with_plain_steps(e_k: float | None, tau: float | None, f: float) -> float | None:
    """E over the whole decode when a share f of the steps draft (speedup E_k, τ tokens each) and the rest
    are plain forwards (see the module docstring)."""
    if e_k is None or tau is None or e_k <= 0:
        return None
    return (f * tau + 1.0 - f) / (f * tau / e_k + 1.0 - f)


def _e(
    surface: CostSurface | None,
    whatif: Mapping[str, Any] | None,
    summary: Mapping[str, Any],
    label: str,
    k: int,
    batch: int,
) -> float | None:
    f = drafting_share(summary)
    if surface is not None:
        cumulative = [p.get("cumulative") for p in summary.get("per_position") or []]
        tau = tau_by_k(cumulative, k).get(k)
        s = surface
        if _model_free(label):
            s = CostSurface(
                tuple(replace(p, step_s=p.step_s - p.draft_s, draft_s=0.0) for p in surface.points)
            )
        return with_plain_steps(predict_speedup_batched(s, batch, k, tau), tau, f)
    assert whatif is not None
    alpha = summary.get("acceptance_rate")
    if not isinstance(alpha, (int, float)):
        return None
    found = surface_e(whatif, float(alpha), k, batch)
    return None if found is None else with_plain_steps(found[0], 1.0 + k * float(alpha), f)


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
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
            continue
        conc, k, e, tau = (float(x) for x in values if x is not None)
        if math.isfinite(e) and math.isfinite(tau) and conc >= 1 and k >= 1 and e > 0 and tau >= 1:
            out.append(c)
    return out


def _sweep_predictor(
    path: Path, cells: Sequence[Mapping[str, Any]]
) -> Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]:
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
            cumulative = [p.get("cumulative") for p in s.get("per_position") or []]
            tau = tau_by_k(cumulative, k).get(k)
            e: dict[str, float | None] = {}
            for b in batches:
                cell = by_cell.get((b, k))
                ok = cell is not None and isinstance(tau, (int, float))
                e_k = float(cell["e_decode"]) * float(tau) / float(cell["tau"]) if ok else None  # type: ignore[index,arg-type]
                e[str(b)] = with_plain_steps(e_k, tau, drafting_share(s))
            rows.append({"draft": c["draft"], "k": k, "e": e})
        return {"source": source, "batches": [str(b) for b in batches], "rows": rows, "note": note}

    return predict
