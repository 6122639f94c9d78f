"""Several golden sets as one workload (``--prompts a --prompts b``): file after file, categories together,
``--limit`` per file, and an id or a file that appears twice told as ``file:line`` problems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specmeter.workloads import WorkloadError, bundled_prompts, load_workload, load_workloads


def write(path: Path, *rows: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_two_bundled_sets_combine_file_after_file_with_both_domains() -> None:
    legal, general = bundled_prompts("legal"), bundled_prompts("general")
    both = load_workloads([legal, general])
    one, other = load_workload(legal), load_workload(general)
    assert both.prompts == one.prompts + other.prompts
    assert {c.split("/")[0] for c in both.categories} == {"legal", "general"}
    # Each prompt still says where it came from.
    assert both.where(0) == f"{legal}:1"
    assert both.where(len(one)) == f"{general}:1"
    # --limit N: the first N of each file, so a mix keeps every domain.
    limited = load_workloads([legal, general], limit=3)
    assert [p.id for p in limited.prompts] == [p.id for p in one.prompts[:3] + other.prompts[:3]]
    assert limited.where(4) == f"{general}:2"


def test_one_file_is_load_workload() -> None:
    path = bundled_prompts("smoke")
    assert load_workloads([path]).prompts == load_workload(path).prompts


def test_an_id_in_two_files_and_a_file_given_twice_are_problems(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", {"id": "q1", "prompt": "x"}, {"id": "q2", "prompt": "y"})
    b = write(tmp_path / "b.jsonl", {"id": "q3", "prompt": "z"}, {"id": "q1", "prompt": "w"})
    with pytest.raises(WorkloadError) as info:
        load_workloads([a, b, tmp_path / "." / "a.jsonl"])
    assert info.value.problems == (
        f"{b}:2: field 'id': id 'q1' is also in {a}:1; ids must be unique across the --prompts files",
        f"{tmp_path / '.' / 'a.jsonl'}: given twice (also as {a})",
    )


def test_every_files_problems_are_reported_at_once(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    a.write_text("{not json}\n", encoding="utf-8")
    with pytest.raises(WorkloadError) as info:
        load_workloads([a, tmp_path / "missing.jsonl"])
    assert [p.split(":")[0] for p in info.value.problems] == [str(a), str(tmp_path / "missing.jsonl")]


def test_a_top_up_adds_the_next_prompts_of_its_categories_in_file_order(tmp_path: Path) -> None:
    cats = ["a", "r", "b", "r", "c", "r", "r", "b"]
    rows = ({"id": f"q{i}", "prompt": "x", "category": c} for i, c in enumerate(cats))
    path = write(tmp_path / "g.jsonl", *rows)
    # The first 3 [a r b], then r at 3 and 5 until r holds 3; b is not topped up, r at 6 is not needed.
    topped = load_workloads([path], limit=3, top_up={"r": 3})
    assert [p.id for p in topped.prompts] == ["q0", "q1", "q2", "q3", "q5"]
    assert topped.where(4) == f"{path}:6"
    # A category already held often enough, or one the file lacks, adds nothing; the file's end stops it.
    four = load_workloads([path], limit=4).prompts
    assert load_workloads([path], limit=4, top_up={"r": 2, "z": 5}).prompts == four
    assert [p.id for p in load_workloads([path], limit=1, top_up={"b": 9}).prompts] == ["q0", "q2", "q7"]


def test_the_demo_legal_bench_tops_up_its_split_categories_to_an_interval() -> None:
    from specmeter.bundled.demo import BENCH_PROMPTS, SPLIT_CATEGORIES, split_top_up
    from specmeter.metrics.stats import MIN_CI_REQUESTS

    legal = load_workloads([bundled_prompts("legal")], limit=BENCH_PROMPTS, top_up=split_top_up("legal"))
    held = {c: len(p) for c, p in legal.by_category().items()}
    for category in SPLIT_CATEGORIES:
        assert held[category] == MIN_CI_REQUESTS
    assert sum(1 for p in legal.prompts[:BENCH_PROMPTS]) == BENCH_PROMPTS
    assert split_top_up("general") == {}
