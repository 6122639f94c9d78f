"""What ``load`` says and writes: the closing verdict weighs the intervals and danger flags it printed, and
every summary names the definition of its per-position rates."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from specmeter.load.config import LoadConfig, Phase
from specmeter.load.run import execute_load
from specmeter.load.view import conclusion
from specmeter.server.app import create_app
from specmeter.server.hosting import ServerThread
from specmeter.server.local_engine import LocalEngine
from specmeter.workloads.loader import Prompt


def _level(c: int, e: float, ci: list[float] | None, alpha: float) -> dict[str, Any]:
    danger = [f"acceptance rate {alpha:.2f} < 0.5"] if alpha < 0.5 else []
    danger += [f"E_meas {e:.2f} < 1.0"] if e < 1.0 else []
    summary = {"speedup_measured": e, "speedup_measured_ci": ci, "acceptance_rate": alpha,
               "danger_zone": bool(danger), "danger_reasons": danger}  # fmt: skip
    return {"concurrency": c, "summary": summary}


def test_danger_zone_levels_do_not_conclude_that_speculation_pays() -> None:
    # The case: c=1 E_meas 1.01× [0.78, 1.35] with α 0.31, flagged DANGER ZONE above the verdict.
    result = {"candidates": [_level(1, 1.01, [0.78, 1.35], 0.31), _level(4, 1.4, [1.2, 1.6], 0.31)]}
    text, style = conclusion(result) or ("", "")
    assert "pays off at every" not in text and style == "bold yellow"
    assert (
        "not shown to pay off at c=1 (E_meas 1.01× [0.78, 1.35] includes 1.0; danger zone: acceptance" in text
    )
    assert "c=4 (danger zone: acceptance rate 0.31 < 0.5)" in text


def test_clear_levels_still_pay_off_and_losses_still_stop() -> None:
    good = {"candidates": [_level(1, 1.8, [1.6, 2.0], 0.7), _level(4, 1.3, [1.1, 1.5], 0.7)]}
    assert conclusion(good) == ("Speculation pays off at every measured load level.", "bold green")
    stop = {"candidates": [_level(1, 1.8, [1.6, 2.0], 0.7), _level(4, 0.9, [0.8, 1.0], 0.7)]}
    assert conclusion(stop) == (
        "Speculation stops paying at c=4: the first level where E_meas < 1.0.",
        "bold red",
    )
    assert conclusion({"candidates": []}) is None


@pytest.fixture(scope="module")
def served(tiny: Any) -> Iterator[tuple[str, str]]:
    spec = LocalEngine.load(tiny.target, tiny.draft, 4, device="cpu")
    base = LocalEngine.load(tiny.target, None, 0, device="cpu")
    with ServerThread(create_app(spec)) as s, ServerThread(create_app(base)) as b:
        yield s.url, b.url


def test_per_position_definition_is_in_every_load_summary(served: tuple[str, str], tmp_path: Path) -> None:
    spec_url, base_url = served
    prompts = (
        Prompt("a", "general", "The lighthouse keeper had not seen a ship", None, None, 1),
        Prompt("b", "legal", "The parties agree that force majeure", None, None, 2),
    )
    cfg = LoadConfig(endpoint=spec_url, baseline=base_url + "/v1", prompts=prompts, max_tokens=8, warmup=0,
                     phases=[Phase(concurrency=1)])  # fmt: skip
    result = asyncio.run(execute_load(cfg, config={}, json_out=tmp_path / "r.json"))
    (level,) = result["candidates"]
    assert level["server"]["used"] == "per_request_steps"  # serve reports every step: specmeter's own P_i
    assert level["summary"]["per_position_definition"] == "P_i"
    assert all(s["per_position_definition"] == "P_i" for s in level["by_category"].values())
    assert level["baseline"]["summary"]["per_position_definition"] is None  # no draft, no rates
