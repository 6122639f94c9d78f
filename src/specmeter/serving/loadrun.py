"""One whole ``load`` run: prepare, warm up, every phase, with results written as they arrive.

Per-request rows go to the CSV/JSONL sinks the moment each request ends; the result JSON is rewritten
after every phase. When the run is interrupted (Ctrl-C cancels the task), the phase in progress is
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
from specmeter.serving.loadgen import LoadConfig, LoadRunner, Phase, PhaseResult, Role
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
    runner: LoadRunner | None = None
    try:
        with RequestSink(csv_out, log_out) as sink:
            runner = LoadRunner(cfg, http)
            await runner.prepare()
            spec = runner.endpoints[0]
            label = f"{spec.model} @ {spec.url}"
            k_hint = cfg.k or spec.positions

            def record(phase: Phase, role: Role, outcome: RequestOutcome) -> None:
                run = f"{role}@{phase.label}"
                sink.write(
                    run,
                    label if role == "speculative" else None,
                    k_hint if role == "speculative" else 0,
                    outcome.record,
                )
                if on_request is not None:
                    on_request(phase, role, outcome)

            runner.on_outcome = record
            await runner.warmup()
            for phase in cfg.phases:
                if on_phase is not None:
                    on_phase(phase)
                current = runner.new_phase(phase)
                await runner.run_phase(phase, current)
                current.complete = True
                result.set_level(
                    level_entry(current, label=label, k=cfg.k, temperature=cfg.temperature, top_p=cfg.top_p)
                )
                current = None
        result.finish()
    except (asyncio.CancelledError, KeyboardInterrupt):
        if current is not None and any(r.outcomes for r in current.roles.values()):
            result.set_level(
                level_entry(current, label=label, k=cfg.k, temperature=cfg.temperature, top_p=cfg.top_p)
            )
        result.save()
        raise
    finally:
        if runner is not None:
            await runner.aclose()
        if client is None:
            await http.aclose()
    return result.to_dict()
