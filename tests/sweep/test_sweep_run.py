"""sweep.run: a sweep stopped before anything was measured leaves no run in the store; one stopped
after a level keeps its partial run; every level of every configuration is warmed at its own load."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from serving_fakes import Behaviour, fake_openai
from specmeter.load.config import LoadConfig, Phase
from specmeter.server.hosting import ServerThread
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


def test_every_cell_is_warmed_at_its_concurrency_and_never_counted(tmp_path: Path) -> None:
    """Issue 31: before each level of each configuration (the last baseline run's too) the server gets its
    warm-up at that level's concurrency; the cells say how many (``warmup_requests``) and for how long, and
    no warm-up request is in the rows, the store, the cells' counts or ``sweep.requests``."""
    spec_b, base_b = Behaviour(delay=0.03), Behaviour(delay=0.03)
    with ServerThread(fake_openai(spec_b)) as spec, ServerThread(fake_openai(base_b)) as base:
        load = LoadConfig(
            endpoint="", prompts=_sweep(tmp_path).load.prompts, limit=3, warmup=0, max_tokens=4,
            phases=[Phase(concurrency=1), Phase(concurrency=3)], scrape_metrics=False,
        )  # fmt: skip
        configs = [ServerConfig(0, url=base.url), ServerConfig(4, url=spec.url)]
        store = tmp_path / "runs.sqlite"
        result, _ = asyncio.run(
            execute_sweep(
                SweepConfig(load=load, configs=configs, logs_dir=tmp_path / "logs"), config={},
                csv_out=tmp_path / "r.csv", hygiene=False, store=store,
            )
        )  # fmt: skip
    # Per level: its warm-up (1, then 3 at once), then its 3 requests; the baseline ran twice (A … A).
    assert spec_b.requests == len(spec_b.arrivals) == 1 + 3 + 3 + 3
    assert base_b.requests == 2 * spec_b.requests
    for arrivals in (spec_b.arrivals, base_b.arrivals[:10], base_b.arrivals[10:]):
        assert arrivals[0] == 1 and max(arrivals[4:7]) == 3
    cells = result["sweep"]["cells"]
    assert {(c["run"], c["level"]) for c in cells} == {
        (r, lv) for r in ("k=0", "k=4") for lv in ("c=1", "c=3")
    }
    for c in cells:
        assert c["warmup_requests"] == (1 if c["level"] == "c=1" else 3) and c["warmup_s"] > 0
        assert c["requests"] == 3 and c["failed"] == 0
    assert result["sweep"]["requests"]["sent"] == 3 * 2 * 3  # three runs × two levels × three requests
    with open(tmp_path / "r.csv", newline="") as fh:
        assert len(fh.read().splitlines()) == 1 + 18
    with RunStore(store) as db:
        assert db.list_runs()[0].requests == 18
