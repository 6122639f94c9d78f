"""bench reports the achieved weight bandwidth and its fraction of the device's measured copy bandwidth
(the field report's third headline metric; docs/metrics.md "achieved bandwidth")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from specmeter.measuring import MeasureConfig, Silent
from specmeter.measuring.bench_run import run_bench


def test_bench_outputs_achieved_bandwidth_and_its_fraction(tiny: Any, tmp_path: Path) -> None:
    prompts = tmp_path / "golden.jsonl"
    prompts.write_text(json.dumps({"id": "a", "category": "c", "prompt": "The Supplier shall"}) + "\n")
    cfg = MeasureConfig(target=tiny.target, drafts=[tiny.draft], prompts=prompts, k=[2], max_tokens=6,
                        cost_repeats=1, store=None)  # fmt: skip
    result = run_bench(cfg, Silent()).result
    for s in (result["baseline"]["summary"], result["candidates"][0]["summary"]):
        copy, achieved = s["copy_bytes_per_s"], s["achieved_bytes_per_s"]
        assert copy is not None and copy > 0
        assert achieved == pytest.approx(s["weight_traffic_per_token"] * s["decode_tokens_per_s"])
        assert s["bandwidth_fraction"] == pytest.approx(achieved / copy)
