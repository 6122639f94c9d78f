"""One whole ``load`` run: resolve the endpoints, warm up, every level, with results written as they arrive.

Per-request rows go to the CSV/JSONL sinks the moment each request ends; the result JSON is rewritten
after every level. When the run is interrupted (Ctrl-C cancels the task), the level in progress is
summarised from its finished requests, the JSON is saved with ``complete: false``, and the cancellation
goes on — nothing already measured is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from specmeter.report.files import RequestSink
from specmeter.serving.client import RequestOutcome
from specmeter.serving.loadconfig import LoadConfig, Phase, Role
from specmeter.serving.loadlevel import LevelRunner, PhaseResult, new_phase
from specmeter.serving.loadreadings import endpoints_for, resolve
from specmeter.serving.loadresult import LoadResultFile, level_entry

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
) -> dict[str, Any]:
    """Run the load test described by ``cfg``; returns the result dict (also saved to ``json_out``)."""
    http = client or httpx.AsyncClient()  # model lookups and scrapes; streams use the runner's shards
    result = LoadResultFile(json_out, kind="load", config=config)
    current: PhaseResult | None = None
    label = cfg.endpoint
    runner: LevelRunner | None = None

    def entry(level: PhaseResult) -> dict[str, Any]:
        return level_entry(level, label=label, k=cfg.k, temperature=cfg.temperature, top_p=cfg.top_p)

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
            for ep in endpoints:
                await runner.warmup(ep)
            for phase in cfg.phases:
                if on_phase is not None:
                    on_phase(phase)
                current = new_phase(phase, endpoints)
                await runner.run_phase(current, endpoints, record)
                current.complete = True
                result.set_level(entry(current))
                current = None
        result.finish()
    except (asyncio.CancelledError, KeyboardInterrupt):
        if current is not None and any(r.outcomes for r in current.roles.values()):
            result.set_level(entry(current))
        result.save()
        raise
    finally:
        if runner is not None:
            await runner.aclose()
        if client is None:
            await http.aclose()
    return result.to_dict()
