"""``bench``: baseline and every (draft, k) with every metric; the result file is the whole answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from specmeter.measuring.run import Outcome, close, run_candidates

if TYPE_CHECKING:
    from specmeter.measuring.config import MeasureConfig
    from specmeter.measuring.progress import Reporter

__all__ = ["run_bench"]


def run_bench(
    cfg: MeasureConfig, reporter: Reporter, *, render: Callable[[dict[str, Any]], None] | None = None
) -> Outcome:
    """Measure and close; the result is also in ``cfg.json_out`` and the run store when set.

    With ``cfg.batch`` (one batch size B) the golden set runs in waves of B concurrent sequences
    (``measuring.batch_run``)."""
    if cfg.batch:
        from specmeter.measuring.batch_run import run_bench_batched

        return run_bench_batched(cfg, reporter, render=render)
    return close(run_candidates(cfg, reporter), render=render)
