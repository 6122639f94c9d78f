"""sweep.run: a sweep stopped before anything was measured leaves no run in the store; one stopped
after a level keeps its partial run."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from specmeter.load.config import LoadConfig, Phase
from specmeter.store import RunStore
from specmeter.sweep.config import ServerConfig, SweepConfig
from specmeter.sweep.run import execute_sweep
from specmeter.workloads import load_workload
from specmeter.workloads.bundled import bundled_prompts

STUB = Path(__file__).with_name("sweep_stub.py")


def _sweep(tmp_path: Path) -> SweepConfig:
    lines = bundled_prompts("legal").read_text(encoding="utf-8").splitlines()[:2]
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    load = LoadConfig(
        endpoint="", prompts=load_workload(path).prompts, phases=[Phase(concurrency=1), Phase(concurrency=2)],
        limit=2, warmup=0, max_tokens=4,
    )  # fmt: skip
    template = f"{sys.executable} {STUB} --port {{port}} --k {{k}} --pids {tmp_path}"
    configs = [ServerConfig(0, template=template), ServerConfig(4, template=template)]
    return SweepConfig(load=load, configs=configs, stop_grace=2.0, logs_dir=tmp_path / "logs")


def _interrupt_at(line: str) -> Callable[[str], None]:
    def say(said: str) -> None:
        if said == line:
            raise KeyboardInterrupt

    return say


@pytest.mark.parametrize(
    ("at", "runs"),
    [
        ("k=0: starting", []),  # Ctrl-C while the baseline starts: nothing measured, no run kept
        ("k=0: level c=2", ["partial"]),  # after a level: the partial run stays
    ],
)
def test_an_interrupted_sweep_keeps_a_partial_run_only_when_something_was_measured(
    tmp_path: Path, at: str, runs: list[str]
) -> None:
    store = tmp_path / "runs.sqlite"
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(
            execute_sweep(
                _sweep(tmp_path), config={}, say=_interrupt_at(at),
                hygiene=False, store=store,
            )
        )  # fmt: skip
    db = RunStore(store)
    try:
        assert [r.status for r in db.list_runs()] == runs
    finally:
        db.close()
