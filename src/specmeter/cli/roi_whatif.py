"""``roi --from-whatif whatif.json --alpha A``: the field report's ROI of a draft that would reach α, priced
with the speedup the what-if surface measured at that α (``selection.whatif``), and with ``--payback N``
the α a draft must reach to pay back within N months (``economics.roi.speedup_for_payback``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from specmeter.cli.common import console, fail, read_json_option
from specmeter.cli.roi_table import money, outcome_rows, print_roi_table

__all__ = ["roi_from_whatif"]


def _read(path: Path) -> dict[str, Any]:
    result = read_json_option(path, "--from-whatif")
    if (
        not isinstance(result, dict)
        or result.get("kind") != "whatif"
        or not (result.get("whatif") or {}).get("cells")
    ):
        kind = result.get("kind") if isinstance(result, dict) else None
        fail(
            f"--from-whatif: {path} is not a whatif result with measured cells (kind {kind!r}); "
            "run specmeter whatif --json"
        )
    return result


def _batch(section: dict[str, Any], batch: int | None, path: Path) -> int:
    measured = sorted({int(c["batch"]) for c in section["cells"]})
    if batch is None:
        if len(measured) > 1:
            fail(f"--batch: {path} was measured at B = {', '.join(map(str, measured))}; say which batch size "
                 "your instances run at")  # fmt: skip
        return measured[0]
    if batch not in measured:
        fail(f"--batch {batch}: {path} was measured at B = {', '.join(map(str, measured))} only")
    return batch


def roi_from_whatif(
    path: Path,
    inputs: Any,
    *,
    alpha: float | None,
    k: int | None,
    batch: int | None,
    payback_months: float | None,
    json_out: Path | None,
) -> None:
    """Print (and write) the ROI at ``alpha`` and/or the α needed to pay back within ``payback_months``."""
    from specmeter.economics import compute_roi
    from specmeter.economics.roi import speedup_for_payback
    from specmeter.report.files import write_json_atomic
    from specmeter.selection.whatif import alpha_for_speedup, speedup_at

    section = _read(path)["whatif"]
    b = _batch(section, batch, path)
    if k is not None and k not in {int(c["k"]) for c in section["cells"]}:
        fail(f"--k {k}: {path} has no cells at k = {k}")
    out: dict[str, Any] = {"source": str(path), "batch": b, "inputs": dataclasses.asdict(inputs)}
    if alpha is not None:
        got = speedup_at(section, alpha, b, k)
        if got is None:
            fail(
                f"--alpha {alpha:g}: {path} has fewer than two measured α at B = {b}; "
                "the surface cannot be read"
            )
        e, k_used, extrapolated = got
        if e <= 0:
            fail(f"--alpha {alpha:g}: the surface gives no positive speedup there")
        r = compute_roi(dataclasses.replace(inputs, speedup=e))
        how = "extrapolated beyond the α measured" if extrapolated else "interpolated on the measured surface"
        _table(r, f"ROI at α {alpha:.2f} → E {e:.2f}× (k={k_used}, B={b}; {how})")
        out["at_alpha"] = {"alpha": alpha, "k": k_used, "speedup": e, "extrapolated": extrapolated,
                           **dataclasses.asdict(r)}  # fmt: skip
    if payback_months is not None:
        needed = speedup_for_payback(inputs, payback_months)
        found = None if needed is None else alpha_for_speedup(section, needed, b, k)
        cost = f"{inputs.engineering_cost:,.0f}"
        if needed is None:
            console.print(f"No speedup pays {cost} back within {payback_months:g} months: the whole baseline "
                          "bill is smaller than that.", style="bold red")  # fmt: skip
        elif found is None:
            console.print(f"Paying {cost} back within {payback_months:g} months needs E ≥ {needed:.2f}×, "
                          f"which no α reaches on this surface at B={b}.", style="bold red")  # fmt: skip
        else:
            a, k_used, extrapolated = found
            note = " (extrapolated beyond the α measured)" if extrapolated else ""
            console.print(f"To pay {cost} back within {payback_months:g} months a draft must reach "
                          f"α ≥ {a:.2f} (k={k_used}, B={b}: E ≥ {needed:.2f}×){note}.",
                          style="bold")  # fmt: skip
        out["payback"] = {"months": payback_months, "speedup_needed": needed,
                          "alpha_needed": None if found is None else found[0],
                          "k": None if found is None else found[1],
                          "extrapolated": None if found is None else found[2]}  # fmt: skip
    if json_out is not None:
        write_json_atomic(json_out, out)


def _table(r: Any, title: str) -> None:
    rows = [
        ("instance-hours / month without → with", f"{r.hours_before:,.1f} → {r.hours_after:,.1f}"),
        ("monthly cost without speculation", money(r.cost_before)),
        ("monthly cost with it", money(r.cost_after)),
        *outcome_rows(r, r.inputs.horizon_months),
    ]
    print_roi_table(title, rows, r, "At this α speculation costs more than it saves at these prices.")
