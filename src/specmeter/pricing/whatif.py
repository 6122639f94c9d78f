"""E at any α from ``whatif``'s measured cells: the one reading of the what-if surface that pricing uses.

``surface_e(section, α, k, B)`` is linear in α between the two neighbouring grid points at the same k and B.
Linear is the right shape: with full drafts τ = 1 + k·α whatever the per-position profile
(``metrics.synthetic``), and a speculative step's cost does not depend on what was accepted, so E(α) at
fixed k and B is close to a straight line. Outside the grid it extrapolates from the two nearest points and
says so. Plain JSON in, no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["measured_cells", "surface_e"]


def measured_cells(section: Mapping[str, Any], k: int, batch: int) -> list[tuple[float, float]]:
    """(α, E) of the measured cells at (k, B), by α; cells without an E are left out."""
    out = []
    for c in section.get("cells") or []:
        if c.get("k") == k and c.get("batch") == batch and c.get("e") is not None:
            out.append((float(c["alpha"]), float(c["e"])))
    return sorted(out)


def surface_e(section: Mapping[str, Any], alpha: float, k: int, batch: int) -> tuple[float, bool] | None:
    """(E, extrapolated) at α for (k, B), linear between the neighbouring measured α; None without 2 points.

    At a measured α it is that cell's E. Beyond the grid the line through the two nearest points is
    extended (``extrapolated`` True) and E is kept at 0 or above.
    """
    pts = measured_cells(section, k, batch)
    for a, e in pts:
        if abs(a - alpha) < 1e-9:
            return e, False
    if len(pts) < 2:
        return None
    inside = pts[0][0] <= alpha <= pts[-1][0]
    if alpha < pts[0][0]:
        (a0, e0), (a1, e1) = pts[0], pts[1]
    elif alpha > pts[-1][0]:
        (a0, e0), (a1, e1) = pts[-2], pts[-1]
    else:
        i = next(i for i in range(1, len(pts)) if pts[i][0] >= alpha)
        (a0, e0), (a1, e1) = pts[i - 1], pts[i]
    e = e0 + (e1 - e0) * (alpha - a0) / (a1 - a0)
    return max(0.0, e), not inside
