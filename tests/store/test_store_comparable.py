"""What makes two runs comparable: the demo's benches are benches; batch sizes and combined golden sets."""

from __future__ import annotations

from typing import Any

from specmeter.store.compare import mismatches
from specmeter.store.sources import RunSource


def _source(kind: str, **config: Any) -> RunSource:
    base = {"target": "/m/target", "prompts": "golden/legal.jsonl", "temperature": 0.0}
    return RunSource(name=kind, result={"kind": kind, "run": {"config": base | config}})


def test_a_demo_bench_compares_with_a_bench() -> None:
    # Runs the demo stored before it stored its benches as "bench" carry kind "demo".
    assert mismatches(_source("demo", domain="legal"), _source("bench")) == []
    assert mismatches(_source("bench"), _source("bench")) == []
    assert mismatches(_source("demo"), _source("tune")) == ["different kinds of run: A is demo, B is tune"]


def test_different_batch_sizes_do_not_measure_the_same_thing() -> None:
    assert mismatches(_source("bench", batch=[4]), _source("bench", batch=[16])) == [
        "different batch sizes: A waves of 4, B waves of 16"
    ]
    assert mismatches(_source("bench"), _source("bench", batch=[4])) == [
        "different batch sizes: A one request at a time, B waves of 4"
    ]
    assert mismatches(_source("bench", batch=[4]), _source("demo", batch=[4])) == []


def test_combined_golden_sets_compare_by_their_file_names() -> None:
    both = ["a/legal.jsonl", "a/general.jsonl"]
    assert (
        mismatches(
            _source("bench", prompts=both), _source("bench", prompts=["b/legal.jsonl", "b/general.jsonl"])
        )
        == []
    )
    assert mismatches(_source("bench", prompts=both), _source("bench", prompts="a/legal.jsonl")) == [
        "different prompt sets: A a/legal.jsonl + a/general.jsonl, B a/legal.jsonl"
    ]
