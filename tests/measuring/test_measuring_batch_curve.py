"""``measuring.batch_curve``: the rows read from ``bench --batch`` results, the best k and the crossover.

The runs themselves are ``bench --batch`` (tests/cli/test_cli_batch.py) and the demo's section
(tests/cli/test_cli_demo.py); here the pure parts, on hand-made results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specmeter.measuring.batch_curve import (
    batch_rows,
    best_k_by_batch,
    crossover,
    outputs_matched,
    predicted_speedups,
)


def test_best_k_prefers_plain_decoding_on_ties_and_skips_unknowns() -> None:
    speedups = {1: {2: 1.4, 4: 1.6}, 4: {2: 1.2, 4: 1.2}, 8: {2: 1.0, 4: None}, 16: {2: 0.9, 4: 0.8}}
    best = best_k_by_batch(speedups)
    assert best == {1: 4, 4: 2, 8: 0, 16: 0}  # a tie goes to the smaller k, 1.0 to plain decoding
    assert crossover(best) == 8
    assert crossover({1: 4, 2: 2}) is None


def test_predicted_speedups_reads_a_tune_batch_table() -> None:
    section = {
        "table": [
            {"batch": 1, "by_k": [{"k": 0, "speedup_predicted": 1.0}, {"k": 2, "speedup_predicted": 1.5}]},
            {"batch": 2, "by_k": [{"k": 0, "speedup_predicted": 1.0}, {"k": 2, "speedup_predicted": 0.9}]},
        ]
    }
    assert predicted_speedups(section) == {1: {0: 1.0, 2: 1.5}, 2: {0: 1.0, 2: 0.9}}
    assert predicted_speedups(section, [0]) == {1: {0: 1.0}, 2: {0: 1.0}}


def test_outputs_matched_counts_per_run_from_the_log(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    lines: list[dict[str, Any]] = [
        {"run": "baseline", "matches_baseline": None},
        {"run": "d@k=4", "matches_baseline": True},
        {"run": "d@k=4", "matches_baseline": False},
        {"run": "d@k=2", "matches_baseline": True},
    ]
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    assert outputs_matched(log) == {"d@k=4": [1, 2], "d@k=2": [1, 1]}
    assert outputs_matched(tmp_path / "missing.jsonl") == {}
    assert outputs_matched(None) == {}


def test_batch_rows_join_the_batch_section_and_the_summaries() -> None:
    result = {
        "kind": "demo",
        "hygiene": {"verdict": "quiet"},
        "candidates": [
            {
                "draft": "d",
                "k": 4,
                "summary": {
                    "requests": 8,
                    "acceptance_rate": 0.7,
                    "speedup_measured": 1.5,
                    "speedup_measured_ci": [1.2, 1.8],
                },
            },
        ],
        "demo": {
            "batch": {
                "batch": 4,
                "candidates": [
                    {
                        "draft": "d",
                        "k": 4,
                        "acceptance_length": 3.1,
                        "speedup_measured_decode": 1.9,
                        "speedup_measured_decode_ci": [1.7, 2.1],
                        "speedup_predicted_waves": 2.0,
                        "speedup_predicted": 2.1,
                        "error": -0.05,
                    },
                ],
            }
        },
    }
    (row,) = batch_rows(result, {"d@k=4": [8, 8]})
    assert row["batch"] == 4 and (row["draft"], row["k"]) == ("d", 4)
    assert row["speedup_measured"] == 1.5 and row["speedup_measured_ci"] == [1.2, 1.8]
    assert row["speedup_measured_decode"] == 1.9 and row["error"] == -0.05
    assert row["outputs_matched"] == [8, 8] and row["machine"] == "quiet"
    assert batch_rows({"kind": "bench"}) == []
