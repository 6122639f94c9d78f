"""``select``: every draft at every k, ranked by traffic-weighted measured speedup for a traffic mix."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specmeter.measuring.errors import MeasureError
from specmeter.measuring.run import Outcome, close, run_candidates

if TYPE_CHECKING:
    from specmeter.measuring.config import MeasureConfig
    from specmeter.measuring.progress import Reporter

__all__ = ["check_mix", "run_select"]


def check_mix(mix: str | None, prompts: Path | Sequence[Path], limit: int | None) -> dict[str, float] | None:
    """Parse ``--mix`` and match it against the categories of the golden set(s), before any model is
    loaded."""
    if mix is None:
        return None
    from specmeter.selection.mix import MixError, assign_domains, parse_mix
    from specmeter.workloads import WorkloadError, load_workloads

    files = [prompts] if isinstance(prompts, Path) else list(prompts)
    try:
        weights = parse_mix(mix)
        workload = load_workloads(files, limit if limit is not None and limit >= 1 else None)
        assign_domains(workload.categories, weights)
    except (MixError, WorkloadError) as e:
        raise MeasureError(str(e)) from None
    return weights


def run_select(
    cfg: MeasureConfig,
    reporter: Reporter,
    mix: dict[str, float] | None,
    *,
    render: Callable[[dict[str, Any]], None] | None = None,
) -> Outcome:
    """Measure every candidate, rank them (``selection.select_analysis``) into the ``select`` section,
    close."""
    from specmeter.selection.select_analysis import analyse_select

    m = run_candidates(cfg, reporter)
    runs = [m.state.candidate_run(i) for i in range(len(m.state.candidates))]
    # Intervals use the fixed bootstrap seed 0 (docs/metrics.md, "Statistics"); --seed is for sampling.
    return close(m, analyse_select(m.state.baseline_run(), runs, mix), render=render)
