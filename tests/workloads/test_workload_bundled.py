"""The golden sets shipped with the package."""

from __future__ import annotations

from collections import Counter

import pytest

from specmeter.workloads import bundled_prompt_names, bundled_prompts, load_workload

SMOKE_CATEGORIES = ("general/narration", "general/instructions", "legal/definitions", "legal/obligations")


def test_smoke_set_loads_cleanly() -> None:
    workload = load_workload(bundled_prompts())
    assert bundled_prompts("smoke") == bundled_prompts()
    assert len(workload) == 24
    assert workload.categories == SMOKE_CATEGORIES
    assert Counter(p.category for p in workload) == dict.fromkeys(SMOKE_CATEGORIES, 6)
    assert all(p.text is not None and p.messages is None for p in workload)
    assert len({p.text for p in workload}) == 24  # no copy-pasted duplicates


def test_names() -> None:
    assert "smoke" in bundled_prompt_names()


@pytest.mark.parametrize("name", ["nope", "../prompts/smoke", "smoke.jsonl", ""])
def test_unknown_name(name: str) -> None:
    with pytest.raises(ValueError, match=r"no bundled prompt set named .*available: .*smoke"):
        bundled_prompts(name)


def test_bundled_golden_sets_are_listed_and_load() -> None:
    from specmeter.workloads import bundled_prompt_names, bundled_prompts, load_workload

    assert {"general", "legal", "smoke"} <= set(bundled_prompt_names())
    legal = load_workload(bundled_prompts("legal"))
    assert len(legal.prompts) == 180 and all(c.startswith("legal/") for c in legal.categories)
    # The categories whose answers copy their prompts.
    assert {"legal/redline", "legal/review"} <= set(legal.categories)
    assert "general/extract" in load_workload(bundled_prompts("general")).categories
