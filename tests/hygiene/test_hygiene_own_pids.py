"""Processes started before the window but named as the measurement's own (``extra_pids``) are not "other":
``load --client-processes N`` starts its workers before the window opens and names them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psutil
import pytest
from hygiene_helpers import cpu_hog

from specmeter.hygiene.section import MachineWatch
from specmeter.load import run as loadrun
from specmeter.load.config import LoadConfig, Phase
from specmeter.workloads.loader import Prompt


def _cpu_s(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def test_a_busy_child_older_than_the_window_named_as_own_is_the_measurement() -> None:
    with cpu_hog() as pid:  # our child, burning a core before the window opens
        watch = MachineWatch.start(extra_pids=(pid,), interval_s=0.1, gpu=False)
        before = _cpu_s(pid)
        time.sleep(1.0)
        used = _cpu_s(pid) - before
        section = watch.finish()
    assert section is not None
    f = section["figures"]
    assert pid not in {p["pid"] for p in f["top_processes"]}
    # Its CPU is the measurement's: own cores hold it (the test process itself only sleeps).
    assert used > 0.2
    assert f["own_cores"] * f["duration_s"] == pytest.approx(used, abs=0.15)


class _Opened(Exception):
    pass


def test_load_names_its_client_worker_processes_as_own(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def start(**kwargs: Any) -> MachineWatch:
        workers = [c.pid for c in psutil.Process().children() if "spawn_main" in " ".join(c.cmdline())]
        seen.update(kwargs, workers=workers)
        raise _Opened  # the window is where this test ends: nothing is sent

    monkeypatch.setattr(loadrun.MachineWatch, "start", staticmethod(start))
    prompts = (Prompt("p0", "general", "hello", None, None, 4),)
    cfg = LoadConfig(endpoint="http://127.0.0.1:9", model="m", prompts=prompts, phases=[Phase(concurrency=1)],
                     limit=1, warmup=0, scrape_metrics=False, client_processes=2)  # fmt: skip
    with pytest.raises(_Opened):
        asyncio.run(loadrun.execute_load(cfg, config={}))
    assert len(seen["workers"]) == 2
    assert set(seen["workers"]) <= set(seen["extra_pids"])
