"""The batch-size → k schedule follows vLLM's num_speculative_tokens_per_batch_size exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specmeter.engine.schedule import KSchedule, ScheduleError, parse_schedule_option


def _vllm_dense(entries: list[list[int]], max_batch: int, k_max: int) -> list[int]:
    """vLLM 0.32's build_dynamic_sd_schedule_lookup, transcribed: the reference for k_for."""
    parsed = sorted((tuple(e) for e in entries), key=lambda e: e[0])
    dense = [0] * (max_batch + 1)
    nxt, last = 1, None
    for lo, hi, k in parsed:
        if lo > nxt and last is not None:
            for b in range(nxt, min(lo, max_batch + 1)):
                dense[b] = min(k_max, last)
        for b in range(max(lo, nxt), min(hi, max_batch) + 1):
            dense[b] = min(k_max, k)
        nxt, last = max(nxt, hi + 1), k
        if nxt > max_batch:
            break
    for b in range(nxt, max_batch + 1):
        dense[b] = min(k_max, last)  # type: ignore[type-var]
    return dense


@pytest.mark.parametrize(
    "entries",
    [
        [[1, 16, 3], [32, 128, 2]],  # vLLM's own example: 17..31 carry 3 forward
        [[1, 1, 5], [2, 3, 4], [4, 7, 2], [8, 8, 0]],
        [[4, 8, 0], [1, 3, 6]],  # unsorted input is sorted
        [[1, 2, 0], [5, 5, 7], [9, 12, 1]],
    ],
)
def test_k_for_matches_vllms_dense_lookup(entries: list[list[int]]) -> None:
    schedule = KSchedule.parse(entries)
    for k_max in (4, 10):
        dense = _vllm_dense(entries, 150, k_max)
        assert [schedule.k_for(b, k_max) for b in range(1, 151)] == dense[1:]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], "non-empty list"),
        ({"a": 1}, "non-empty list"),
        ([[1, 2]], r"entry 1: expected \[lo, hi, k\]"),
        ([[1, 2, 1.5]], "must be integers"),
        ([[0, 2, 1]], "must be positive"),
        ([[1, 4, 2], [3, 1, 1]], r"entry 2: range start 3 is above its end 1"),
        ([[1, 2, -1]], "k must be >= 0"),
        ([[1, 4, 2], [4, 8, 1]], "overlap"),
        ([[2, 4, 2]], "must start at batch size 1"),
    ],
)
def test_invalid_schedules_are_refused_like_vllm(value: object, message: str) -> None:
    with pytest.raises(ScheduleError, match=message):
        KSchedule.parse(value)


def test_from_best_switches_at_geometric_midpoints_and_merges() -> None:
    s = KSchedule.from_best({1: 4, 2: 4, 4: 3, 8: 0, 16: 0})
    # 1, 2 -> k 4 up to ⌊√8⌋ = 2; 4 -> 3 up to ⌊√32⌋ = 5; 8, 16 -> 0 from 6 on.
    assert s.to_json() == [[1, 2, 4], [3, 5, 3], [6, 16, 0]]
    assert s.k_for(100) == 0 and s.k_for(3) == 3 and s.max_k == 4
    assert KSchedule.from_best({4: 2}).to_json() == [[1, 4, 2]]


def test_vllm_config_and_round_trip() -> None:
    s = KSchedule.parse([[1, 3, 4], [4, 64, 0]])
    cfg = s.vllm_config(model="/models/draft")
    assert cfg == {
        "method": "draft_model",
        "model": "/models/draft",
        "num_speculative_tokens": 4,
        "num_speculative_tokens_per_batch_size": [[1, 3, 4], [4, 64, 0]],
    }
    assert KSchedule.parse(json.loads(json.dumps(s.to_json()))) == s
    assert KSchedule.constant(0).k_for(7) == 0 and KSchedule.constant(3).k_for(1, k_max=2) == 2


def test_parse_option_json_file_and_pasted_config(tmp_path: Path) -> None:
    assert parse_schedule_option("[[1, 4, 3], [5, 8, 0]]").k_for(6) == 0
    f = tmp_path / "schedule.json"
    f.write_text(json.dumps({"num_speculative_tokens_per_batch_size": [[1, 2, 5], [3, 9, 1]]}))
    assert parse_schedule_option(str(f)).k_for(2) == 5
    with pytest.raises(ScheduleError, match="neither a JSON list nor a file"):
        parse_schedule_option("nope.json")
    with pytest.raises(ScheduleError, match=r"--k-schedule: not JSON"):
        parse_schedule_option("[[1, 2, 3]")
    f.write_text("[[2, 3, 1]]")
    with pytest.raises(ScheduleError, match=r"schedule.json: the first range must start"):
        parse_schedule_option(str(f))


def _tune_result(schedule: list[list[int]]) -> dict[str, object]:
    """What ``tune --batch --json`` writes: the schedule under tune.batch, again in its speculative_config."""
    config = KSchedule.parse(schedule).vllm_config(model="/models/draft")
    return {
        "schema_version": 1, "kind": "tune", "complete": True,
        "baseline": {"summary": {}}, "candidates": [{"draft": "d", "k": 4, "summary": {}}],
        "tune": {
            "cost_curve": {"target_s": [0.01, 0.011]}, "source_k": 4,
            "batch": {
                "batches": [1, 4, 16], "best_k": {"1": 4, "4": 3, "16": 0}, "crossover_batch": 16,
                "num_speculative_tokens_per_batch_size": schedule, "speculative_config": config,
                "serve_k_schedule": json.dumps(schedule, separators=(",", ":")),
                "schedule_description": KSchedule.parse(schedule).describe(),
            },
        },
    }  # fmt: skip


def test_parse_option_takes_a_tune_or_sweep_result_file(tmp_path: Path) -> None:
    schedule = [[1, 2, 4], [3, 8, 3], [9, 16, 0]]
    tune = tmp_path / "tune.json"
    tune.write_text(json.dumps(_tune_result(schedule)))
    assert parse_schedule_option(str(tune)).to_json() == schedule  # the same list twice counts once
    sweep = tmp_path / "sweep.json"
    section = {
        "configurations": [{"run": "k=4", "schedule": None}],
        "schedule": {"num_speculative_tokens_per_batch_size": [[1, 4, 2], [5, 8, 0]], "validated": None},
    }
    sweep.write_text(json.dumps({"kind": "sweep", "sweep": section}))  # fmt: skip
    assert parse_schedule_option(str(sweep)).k_for(6) == 0
    # A tune result without --batch holds no schedule: said, with where one would be.
    plain = _tune_result(schedule)
    del plain["tune"]["batch"]  # type: ignore[attr-defined]
    tune.write_text(json.dumps(plain))
    with pytest.raises(
        ScheduleError, match=r"tune.json: no num_speculative_tokens_per_batch_size .*a tune result"
    ):
        parse_schedule_option(str(tune))
    # Two different schedules in one file: ambiguous, each named by its path.
    both = _tune_result(schedule)
    both["sweep"] = {"schedule": {"num_speculative_tokens_per_batch_size": [[1, 4, 2]]}}
    tune.write_text(json.dumps(both))
    with pytest.raises(
        ScheduleError, match=r"2 different schedules .*tune\.batch\.num_spec.*sweep\.schedule"
    ):
        parse_schedule_option(str(tune))
    # JSON text of an object works as a file does.
    assert (
        parse_schedule_option(json.dumps({"num_speculative_tokens_per_batch_size": [[1, 9, 2]]})).max_k == 2
    )
