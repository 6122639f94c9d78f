"""One whole ``load`` run: resolve the endpoints, warm up, every level, with results written as they arrive.

The machine is watched from the first level to the last (``specmeter.hygiene``): other processes' CPU on
the client's machine, a local server's processes and the client's worker processes (``--client-processes``)
counted as part of the measurement; the result gets a ``hygiene`` section with the verdict.

Per-request rows go to the CSV/JSONL sinks the moment each request ends; the result JSON is rewritten
after every level. When the run is interrupted (Ctrl-C cancels the task), the level in progress is
summarised from its finished requests, the JSON is saved with ``complete: false``, and the cancellation
goes on — nothing already measured is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from specmeter.hygiene.section import MachineWatch
from specmeter.load.client import RequestOutcome
from specmeter.load.config import LoadConfig, Phase, Role
from specmeter.load.level import LevelRunner, PhaseResult, new_phase
from specmeter.load.readings import endpoints_for, resolve
from specmeter.load.result import add_level, level_entry
from specmeter.report.files import RequestSink, ResultFile

__all__ = ["execute_load"]


async def execute_load(
    cfg: LoadConfig,
    *,
    config: Mapping[str, Any],
    json_out: Path | None = None,
    csv_out: Path | None = None,
    log_out: Path | None = None,
    client: httpx.AsyncClient | None = None,
    on_phase: Callable[[Phase], None] | None = None,
    on_request: Callable[[Phase, Role, RequestOutcome], None] | None = None,
    hygiene: bool = True,
) -> dict[str, Any]:
    """Run the load test described by ``cfg``; returns the result dict (also saved to ``json_out``)."""
    http = client or httpx.AsyncClient()  # model lookups and scrapes; streams use the runner's shards
    result = ResultFile(json_out, kind="load", config=config)
    current: PhaseResult | None = None
    label = cfg.endpoint
    runner: LevelRunner | None = None
    watch: MachineWatch | None = None

    def entry(level: PhaseResult) -> dict[str, Any]:
        return level_entry(
            level, label=label, k=cfg.k, temperature=cfg.temperature, top_p=cfg.top_p, slo=cfg.slo
        )

    try:
        with RequestSink(csv_out, log_out) as sink:
            endpoints = endpoints_for(cfg)
            for ep in endpoints:
                await resolve(http, ep, cfg)
            spec = endpoints[0]
            label = f"{spec.model} @ {spec.url}"
            k_hint = cfg.k or spec.positions

            def record(phase: Phase, role: Role, outcome: RequestOutcome) -> None:
                speculative = role == "speculative"
                sink.write(
                    f"{role}@{phase.label}",
                    label if speculative else None,
                    k_hint if speculative else 0,
                    outcome.record,
                )
                if on_request is not None:
                    on_request(phase, role, outcome)

            runner = LevelRunner(cfg, http)
            await runner.start()
            for ep in endpoints:
                await runner.warmup(ep)
            if hygiene:
                # The client's worker processes started before the window: the sampler would call them
                # "other processes" (children older than the window are someone else's) unless named here.
                own = runner.streams.pids()
                watch = MachineWatch.start(extra_pids=local_server_pids([ep.url for ep in endpoints]) + own)
            for phase in cfg.phases:
                if on_phase is not None:
                    on_phase(phase)
                current = new_phase(phase, endpoints)
                await runner.run_phase(current, endpoints, record)
                current.complete = True
                add_level(result, entry(current))
                current = None
        _close_watch(result, watch)
        result.finish()
    except (asyncio.CancelledError, KeyboardInterrupt):
        if current is not None and any(r.outcomes for r in current.roles.values()):
            add_level(result, entry(current))
        _close_watch(result, watch)
        result.save()
        raise
    finally:
        _close_watch(None, watch)
        if runner is not None:
            await runner.aclose()
        if client is None:
            await http.aclose()
    return result.to_dict()


def _close_watch(result: ResultFile | None, watch: MachineWatch | None) -> None:
    section = watch.finish() if watch is not None else None  # idempotent: the second call returns the same
    if result is not None and section is not None:
        result.set_section("hygiene", section)


def local_server_pids(urls: Sequence[str]) -> tuple[int, ...]:
    """The processes serving ``urls`` on this machine (loopback hosts): their CPU is the measurement's."""
    from specmeter.hygiene.probes import listening_pids

    pids: set[int] = set()
    for url in urls:
        parts = urlsplit(url)
        if parts.hostname in ("localhost", "127.0.0.1", "::1") and parts.port is not None:
            pids |= listening_pids(parts.port)
    return tuple(sorted(pids))
