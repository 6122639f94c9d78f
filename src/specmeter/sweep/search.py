"""A sweep's SLO capacity per server configuration, and the headline "speculation moves SLO capacity from N
to M".

With ``--slo`` every level a configuration ran is judged (``metrics.slo``: attainment with its Wilson
interval, goodput). Capacity is the highest load whose attainment stays at or above the target
(docs/metrics.md):

- with ``--search concurrency|rate`` the search of ``sweep.capacity.search_capacity`` (bisection within
  bounds, a bounded number of levels) runs on each configuration's own server before it is stopped; levels
  the grid already ran are reused, not rerun;
- without it, the grid's levels are the probes: capacity is the highest level below the first failing one.

The capacity's goodput (requests/s meeting the SLO at that level, with its interval) is what one instance
serves: ``roi --from-sweep`` sizes a fleet with it. Without an SLO the capacity falls back to each
configuration's peak completed requests/s, and says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx

from specmeter.load.client import RequestOutcome
from specmeter.load.config import Endpoint, Phase, Role
from specmeter.load.level import LevelRunner, RoleResult
from specmeter.metrics.slo import SLO, Attainment, attainment, evaluate
from specmeter.sweep.capacity import CapacityResult, Probe, search_capacity
from specmeter.sweep.config import BASELINE_NAME, SweepConfig
from specmeter.sweep.launch import ServerProcess
from specmeter.sweep.state import END, ConfigRun, SweepRun

__all__ = ["capacity_section", "level_slo", "make_search"]

THROUGHPUT_ASSUMPTION = (
    "no --slo: capacity is the highest completed requests/s measured at any level, whatever the latency; "
    "requests like the golden set, on the machine the sweep ran on"
)


def _records(role: RoleResult) -> list[Any]:
    return [o.record for o in role.outcomes]


def level_slo(slo: SLO, role: RoleResult) -> dict[str, Any]:
    """One level judged against the SLO: attainment with its interval, goodput, violations per limit."""
    return evaluate(slo, _records(role), role.wall_s).to_dict()


def _phase(kind: str, load: float) -> Phase:
    return Phase(concurrency=int(load)) if kind == "concurrency" else Phase(rate=load)


def make_search(
    cfg: SweepConfig, runner: LevelRunner, http: httpx.AsyncClient, sink: Any, say: Callable[[str], None]
) -> Callable[[ConfigRun, Endpoint, ServerProcess | None], Any] | None:
    """The capacity search ``sweep.run.run_config`` runs on each configuration's server (None: no search)."""
    settings, slo = cfg.search, cfg.slo
    if settings is None or slo is None:
        return None

    async def search(run: ConfigRun, ep: Endpoint, server: ServerProcess | None) -> CapacityResult:
        loop = asyncio.get_running_loop()

        async def level(phase: Phase) -> RoleResult:
            def record(p: Phase, r: Role, outcome: RequestOutcome) -> None:
                sink.write(f"{run.run}@{p.label}", ep.model if r == "speculative" else None, run.config.k,
                           outcome.record)  # fmt: skip

            say(f"{run.run}: search level {phase.label}")
            return await runner.run_level(phase, ep, record)

        def run_level(load: float) -> Attainment:
            phase = _phase(settings.kind, load)
            role = run.levels.get(phase.label) or run.search_levels.get(phase.label)
            if role is None:
                if server is not None and not server.alive():
                    raise server.died(f"before search level {phase.label}")
                role = asyncio.run_coroutine_threadsafe(level(phase), loop).result()
                run.search_levels[phase.label] = role
            return attainment(slo, _records(role))

        def on_probe(p: Probe) -> None:
            share = "—" if p.share is None else f"{p.share:.0%}"
            verdict = "pass" if p.passed else "fail"
            say(f"{run.run}: {settings.kind} {p.load:g}: attainment {share} ({verdict})")

        return await asyncio.to_thread(
            search_capacity, run_level, kind=settings.kind, low=settings.low, high=settings.high,
            target=settings.target, max_steps=settings.max_steps, on_probe=on_probe,
        )  # fmt: skip

    return search


def _grid_capacity(slo: SLO, target: float, run: ConfigRun) -> dict[str, Any]:
    """Capacity from the grid's levels: the highest one below the first that fails."""
    probes = []
    capacity = first_failing = None
    for phase in sorted(run.phases, key=_load):
        share = attainment(slo, _records(run.levels[phase.label]))
        probes.append((phase, share))
        if first_failing is None:
            if share.passes(target):
                capacity = phase
            else:
                first_failing = phase
    sure_pass = max((_load(p) for p, a in probes if a.surely_passes(target)), default=None)
    sure_fail = min((_load(p) for p, a in probes if a.surely_fails(target)), default=None)
    return {
        "source": "levels",
        "capacity": None if capacity is None else _load(capacity),
        "level": None if capacity is None else capacity.label,
        "first_failing": None if first_failing is None else _load(first_failing),
        "interval": [sure_pass, sure_fail],
        "probes": [
            {"load": _load(p), "passed": a.passes(target), "attainment": a.to_dict()} for p, a in probes
        ],
        "stopped": "the grid's levels",
    }


def _load(phase: Phase) -> float:
    return float(phase.concurrency if phase.concurrency is not None else phase.rate or 0.0)


def _with_goodput(slo: SLO, run: ConfigRun, block: dict[str, Any], kind: str) -> dict[str, Any]:
    """Add the goodput at the capacity level (what one instance serves within the SLO)."""
    block.update({"run": run.run, "k": run.config.k, "requests_per_s": None, "requests_per_s_ci": None})
    if block.get("capacity") is None:
        return block
    phase = _phase(kind, block["capacity"])
    block["level"] = phase.label
    role = run.levels.get(phase.label) or run.search_levels.get(phase.label)
    if role is not None:
        judged = evaluate(slo, _records(role), role.wall_s)
        block["requests_per_s"] = judged.goodput.requests_per_s
        block["requests_per_s_ci"] = (
            None if judged.goodput.requests_per_s_ci is None else list(judged.goodput.requests_per_s_ci)
        )
        block["tokens_per_s"] = judged.goodput.tokens_per_s
    return block


def _peak(cells: Sequence[Mapping[str, Any]], run: str) -> dict[str, Any] | None:
    mine = [c for c in cells if c["run"] == run and isinstance(c.get("requests_per_s"), int | float)]
    top = max(mine, key=lambda c: c["requests_per_s"], default=None)
    if top is None:
        return None
    return {"run": run, "k": top["k"], "level": top["level"], "requests_per_s": top["requests_per_s"]}


def _interval(block: Mapping[str, Any]) -> str:
    lo, hi = block.get("interval") or (None, None)
    return f"[{'—' if lo is None else f'{lo:g}'}, {'—' if hi is None else f'{hi:g}'})"


def _headline(base: Mapping[str, Any] | None, spec: Mapping[str, Any] | None, unit: str) -> str | None:
    if base is None or spec is None:
        return None
    if base.get("capacity") is None and spec.get("capacity") is None:
        return "no level meets the SLO, with or without speculation"

    def where(b: Mapping[str, Any]) -> str:
        return "none" if b.get("capacity") is None else f"{b['capacity']:g}"

    def rps(b: Mapping[str, Any]) -> str:
        value, ci = b.get("requests_per_s"), b.get("requests_per_s_ci")
        if value is None:
            return "—"
        return f"{value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")

    return (
        f"speculation ({spec['run']}) moves SLO capacity from {where(base)} to {where(spec)} {unit} "
        f"(intervals {_interval(base)} and {_interval(spec)}); goodput {rps(base)} → {rps(spec)} req/s"
    )


def capacity_section(
    cfg: SweepConfig, state: SweepRun, cells: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """Capacity per configuration and the headline; without an SLO, each one's peak throughput."""
    runs = [r for r in state.runs if r.levels and not r.run.endswith(END) and r.config.schedule is None]
    if not any(r.run == BASELINE_NAME for r in runs):
        return None
    slo = cfg.slo
    if slo is None:
        per_run = {r.run: _peak(cells, r.run) for r in runs}
        base = per_run.get(BASELINE_NAME)
        specs = [v for name, v in per_run.items() if name != BASELINE_NAME and v is not None]
        spec = max(specs, key=lambda v: v["requests_per_s"], default=None)
        headline = None
        if base is not None and spec is not None:
            headline = (
                f"peak throughput (no SLO): {base['requests_per_s']:.2f} req/s without speculation "
                f"({base['level']}), {spec['requests_per_s']:.2f} req/s with {spec['run']} ({spec['level']})"
            )
        return {
            "source": "throughput", "slo": None, "assumption": THROUGHPUT_ASSUMPTION,
            "configurations": per_run, "baseline": base, "speculative": spec, "headline": headline,
        }  # fmt: skip
    search = cfg.search
    target = search.target if search is not None else cfg.slo_target
    kind = (
        search.kind
        if search is not None
        else ("rate" if cfg.load.phases[0].rate is not None else "concurrency")
    )
    blocks: dict[str, dict[str, Any]] = {}
    for run in runs:
        if isinstance(run.capacity, CapacityResult):
            block = {"source": "search", **run.capacity.to_dict()}
            block["interval"] = [run.capacity.sure_pass, run.capacity.sure_fail]
        else:
            block = _grid_capacity(slo, target, run)
        blocks[run.run] = _with_goodput(slo, run, block, kind)
    base = blocks.get(BASELINE_NAME)
    specs = [b for name, b in blocks.items() if name != BASELINE_NAME]
    spec = max(specs, key=lambda b: (b.get("requests_per_s") or 0.0, b.get("capacity") or 0.0), default=None)
    unit = "concurrent requests" if kind == "concurrency" else "req/s offered"
    return {
        "source": "slo",
        "slo": slo.text(),
        "target": target,
        "kind": kind,
        "assumption": f"highest {kind} whose attainment of {slo.text()} stays ≥ {target:.0%} "
        f"({'searched' if search else 'among the grid levels'}); capacity = the goodput there (requests "
        "meeting the SLO per second), on the machine the sweep ran on, with requests like the golden set",
        "configurations": blocks,
        "baseline": base,
        "speculative": spec,
        "headline": _headline(base, spec, unit),
    }
