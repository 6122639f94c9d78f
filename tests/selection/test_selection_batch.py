"""tune --batch says whether its batch schedule's k at B = 1 is the sweep's best measured k, and why not."""

from __future__ import annotations

from typing import Any

from specmeter.selection.batch_analysis import schedule_agreement


def test_schedule_agreement_says_why_the_two_best_k_differ() -> None:
    measured = [{"k": 3, "speedup_measured_decode": 1.40}, {"k": 4, "speedup_measured_decode": 1.42}]
    tune: dict[str, Any] = {"best_k": {"all": {"measured": {"k": 4}}}, "by_k": {"all": measured}}
    by_k = [{"k": 3, "speedup_predicted": 1.5}, {"k": 4, "speedup_predicted": 1.45}]
    batch: dict[str, Any] = {"best_k": {"1": 3}, "table": [{"batch": 1, "by_k": by_k}]}
    text = schedule_agreement(tune, batch)
    assert text is not None and "not the sweep's best measured k (4)" in text and "a tie" in text
    assert "1.42x at k=4 and 1.40x at k=3" in text and "1.45x and 1.50x" in text
    measured[0]["speedup_measured_decode"] = 1.10
    assert "trust the sweep" in (schedule_agreement(tune, batch) or "")
    batch["best_k"]["1"] = 4
    assert schedule_agreement(tune, batch) == "the schedule's k at B=1 (4) is the sweep's best measured k"
    assert schedule_agreement({}, batch) is None


def test_schedule_agreement_when_the_surface_does_not_speculate_at_batch_one() -> None:
    tune: dict[str, Any] = {"best_k": {"all": {"measured": {"k": 2}}},
                            "by_k": {"all": [{"k": 2, "speedup_measured_decode": 0.80}]}}  # fmt: skip
    batch: dict[str, Any] = {
        "best_k": {"1": 0},
        "table": [{"batch": 1, "by_k": [{"k": 2, "speedup_predicted": 0.87}]}],
    }
    assert "the sweep agrees: its best k (2) measured 0.80x, below 1" in (
        schedule_agreement(tune, batch) or ""
    )
    tune["by_k"]["all"][0]["speedup_measured_decode"] = 1.2
    assert "trust the sweep" in (schedule_agreement(tune, batch) or "")
