"""A sweep's state built by hand (no server): configurations whose latencies give known E figures, for the
tests of what a sweep's result says (tests/sweep) and of what reads it back (`runs list`, `roi RUN`)."""

from __future__ import annotations

from pathlib import Path

from specmeter.load.client import RequestOutcome
from specmeter.load.config import Endpoint, LoadConfig, Phase, Role
from specmeter.load.level import RoleResult
from specmeter.metrics.records import RequestRecord
from specmeter.report.files import ResultFile
from specmeter.store import RunStore
from specmeter.sweep.config import ServerConfig, SweepConfig
from specmeter.sweep.result import build_view
from specmeter.sweep.run import add_view
from specmeter.sweep.state import ConfigRun, SweepRun
from specmeter.workloads import load_workload
from specmeter.workloads.bundled import bundled_prompts

BASE = [1.0 + 0.1 * (i % 5) for i in range(16)]  # the baseline's latencies, s (TTFT: a quarter of each)


def role(latencies: list[float], kind: Role = "speculative") -> RoleResult:
    """One level's requests p0, p1, … with these latencies (8 tokens each, TTFT a quarter of the latency)."""
    outcomes = [
        RequestOutcome(RequestRecord(f"p{i}", "c", 5, 8, s, s / 4, 0.0), started_at=0.0, ended_at=s)
        for i, s in enumerate(latencies)
    ]
    return RoleResult(Endpoint(kind, "http://127.0.0.1:1", None, model="m"), outcomes, wall_s=max(latencies))


def drifted_sweep() -> tuple[SweepConfig, SweepRun]:
    """k=4 at c=1 runs 2× faster than the first baseline run; the last baseline run is 19% faster than the
    first (the machine drifted), so E against it is 1.62 and the sweep's E √(2 × 1.62) = 1.8 — decode-only
    too (decode time is three quarters of each latency)."""
    base_sc, spec_sc = ServerConfig(0, template="t {port}"), ServerConfig(4, template="t {port}")
    prompts = load_workload(bundled_prompts("legal")).prompts
    load = LoadConfig(endpoint="", prompts=prompts, phases=[Phase(concurrency=1)])
    cfg = SweepConfig(load=load, configs=[base_sc, spec_sc])
    base, end = ConfigRun(base_sc, "k=0", status="ok"), ConfigRun(base_sc, "k=0 (end)", status="ok")
    for run, factor in ((base, 1.0), (end, 0.81)):
        run.phases.append(Phase(concurrency=1))
        run.levels["c=1"] = role([b * factor for b in BASE], "baseline")
    spec = ConfigRun(spec_sc, "k=4", status="ok", phases=[Phase(concurrency=1)])
    spec.levels["c=1"] = role([b / 2 for b in BASE])
    return cfg, SweepRun([base, spec, end])


def stored_sweep(store: Path) -> Path:
    """:func:`drifted_sweep`'s result recorded as run 1 of the run store ``store`` (complete), as
    ``sweep.run.execute_sweep`` records it."""
    cfg, state = drifted_sweep()
    result = ResultFile(None, kind="sweep", config={})
    add_view(result, build_view(cfg, state))
    with RunStore(store) as db:
        run = db.begin_run(result.to_dict())
        db.save_result(run, result.to_dict(), complete=True)
    return store
