"""One whole ``sweep``: for each server configuration start it, wait for health, warm up, run every level,
stop it; the baseline first and again last (A … A); results written after every level.

Per configuration (``ServerConfig``) the server is launched from its template on a free port
(``sweep.launch``) or taken at its URL; ``load.readings.resolve`` names its model and kind;
``LevelRunner.warmup`` sends the unrecorded warm-up; ``LevelRunner.run_level`` warms each level at its own
load and runs it in one block with the server's /metrics read around it; then the server is stopped
(SIGTERM, then SIGKILL, its whole process group). With ``--search`` the capacity search runs on the same
server before it is stopped.

Failures keep what was measured. A configuration that cannot start, never becomes healthy, dies during
a level, or whose requests all failed at every level (e.g. every one answered HTTP 500) is recorded with
one line (``ConfigRun.error``), its finished levels stay in the result, and the sweep goes on with the next
configuration — except the first baseline, without which nothing can be compared (:class:`SweepAborted`).
Ctrl-C (and SIGTERM, ``launch.sigterm_as_interrupt``) stops the server in flight, summarises what finished
and saves the JSON with ``complete: false``; the run in the store stays partial, or is deleted when no
request had completed (nothing measured, as ``bench`` does).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from specmeter.engine.schedule import KSchedule
from specmeter.hygiene.section import MachineWatch
from specmeter.load.client import RequestOutcome
from specmeter.load.config import Endpoint, LoadError, Phase, Role
from specmeter.load.level import LevelRunner, RoleResult
from specmeter.load.readings import resolve
from specmeter.monitoring.promtext import metrics_url
from specmeter.report.files import RequestSink, ResultFile
from specmeter.sweep.config import ServerConfig, SweepConfig
from specmeter.sweep.launch import LaunchError, LaunchValues, ServerProcess, free_port, render_template
from specmeter.sweep.result import SweepView, build_view, schedule_from_section
from specmeter.sweep.search import make_search
from specmeter.sweep.state import END, ConfigRun, SweepAborted, SweepRun, none_completed

__all__ = ["ConfigRun", "SweepAborted", "SweepRun", "add_view", "execute_sweep"]

LOCALHOST = "127.0.0.1"
CELL_KEY = ("draft", "k", "concurrency", "rate")  # a cell's candidate entry in the result file


def _launch(cfg: SweepConfig, sc: ServerConfig, run: ConfigRun, index: int) -> ServerProcess:
    """The configuration's server, started (not yet healthy): the caller owns its stop from here on."""
    assert sc.template is not None
    port = free_port()
    argv = render_template(
        sc.template, LaunchValues(port, sc.k, cfg.draft, sc.schedule, cfg.method), option=sc.option
    )
    slug = run.run.replace("=", "").replace(" ", "-").replace("(", "").replace(")", "")
    server = ServerProcess(
        run.run, argv, f"http://{LOCALHOST}:{port}", cfg.logs_dir / f"{index:02d}-{slug}.log"
    )
    run.argv, run.log = argv, str(server.log)
    return server


async def run_config(
    cfg: SweepConfig,
    sc: ServerConfig,
    run: ConfigRun,
    phases: Sequence[Phase],
    runner: LevelRunner,
    http: httpx.AsyncClient,
    sink: Any,
    publish: Callable[[], None],
    index: int,
    say: Callable[[str], None],
    search: Callable[[ConfigRun, Endpoint, ServerProcess | None], Any] | None = None,
) -> None:
    """Start, warm up, every level, (search), stop. Errors end in ``run.error``; Ctrl-C propagates."""
    server: ServerProcess | None = None
    run.status = "running"
    began = time.monotonic()
    role: Role = "baseline" if sc.baseline else "speculative"
    try:
        say(f"{run.run}: starting" + (f" ({sc.url})" if sc.url else ""))
        if sc.url is not None:
            url = Endpoint.base(sc.url)
        else:
            server = _launch(cfg, sc, run, index)
            server.start()
            run.pid, url = server.pid, server.url
            run.startup_s = await server.wait_healthy(cfg.startup_timeout, cfg.load.headers)
        run.url = url
        ep = Endpoint(role, url, metrics_url(url) if cfg.load.scrape_metrics else None)
        await resolve(http, ep, cfg.load)
        await runner.warmup(ep)
        if server is not None and not server.alive():
            raise server.died("during the warm-up")
        for phase in phases:
            say(f"{run.run}: level {phase.label}")
            partial = RoleResult(ep)
            run.phases.append(phase)
            run.levels[phase.label] = partial

            def record(p: Phase, r: Role, outcome: RequestOutcome, into: RoleResult = partial) -> None:
                into.outcomes.append(outcome)
                sink.write(
                    f"{run.run}@{p.label}", ep.model if r == "speculative" else None, sc.k, outcome.record
                )

            done = await runner.run_level(phase, ep, record)
            run.levels[phase.label] = done
            publish()
            if server is not None and not server.alive():
                ok = sum(1 for o in done.outcomes if o.ok)
                raise server.died(
                    f"during level {phase.label} ({ok} of {len(done.outcomes)} requests completed)"
                )
        at = f" at level {phases[0].label}" if len(phases) == 1 else " at any level"
        failed_all = none_completed([o for role in run.levels.values() for o in role.outcomes], at)
        if failed_all is not None:  # up, but answering nothing (every request an HTTP 500, …): no search
            raise LoadError(failed_all)
        if search is not None:
            run.capacity = await search(run, ep, server)
            if server is not None and not server.alive():
                raise server.died("during the capacity search")
        run.status = "ok"
    except (LaunchError, LoadError) as e:
        run.status, run.error = "failed", str(e) if str(e).startswith(run.run) else f"{run.run}: {e}"
        say(run.error)
    except (asyncio.CancelledError, KeyboardInterrupt):
        run.status = "interrupted"
        raise
    finally:
        if server is not None:
            await asyncio.get_running_loop().run_in_executor(None, server.stop, cfg.stop_grace)
            run.exit_code = server.exit_code
        run.ended_at = run.started_at + time.monotonic() - began
        publish()


def schedule_levels(schedule: KSchedule, levels: Sequence[int]) -> list[int]:
    """A ramp across a schedule's switch points within the measured levels: the levels, and each range's
    last and the next batch size (where the k changes), between the smallest and the largest level."""
    lo, hi = min(levels), max(levels)
    points = set(levels)
    for _, end, _ in schedule.ranges[:-1]:
        points |= {b for b in (end, end + 1) if lo <= b <= hi}
    return sorted(points)


async def execute_sweep(
    cfg: SweepConfig,
    *,
    config: Mapping[str, Any],
    json_out: Path | None = None,
    csv_out: Path | None = None,
    log_out: Path | None = None,
    say: Callable[[str], None] = lambda line: None,
    hygiene: bool = True,
    store: Path | None = None,
) -> tuple[dict[str, Any], SweepRun]:
    """Run the sweep; after every level ``sweep.result.build_view(cfg, state)`` turns the state into the
    result: its ``section`` (the ``sweep`` section) and its ``entries`` (one candidate entry per cell).

    Returns the result dict (also saved to ``json_out``) and the state. Raises :class:`SweepAborted` when
    the first baseline cannot be measured (the file is saved first).
    """
    from specmeter.store import RunRecorder

    result = ResultFile(json_out, kind="sweep", config=config)
    recorder = RunRecorder.start(store, result.to_dict())  # StoreError: before anything runs
    state = SweepRun()
    http = httpx.AsyncClient()
    # --client-processes auto counts the streams of the levels a concurrency search may reach, too.
    searched = cfg.search
    reach = int(searched.high) if searched is not None and searched.kind == "concurrency" else None
    runner = LevelRunner(cfg.load, http, streams=reach)
    watch: MachineWatch | None = None

    def publish() -> None:
        add_view(result, build_view(cfg, state))
        recorder.save(result.to_dict())

    try:
        with RequestSink(csv_out, log_out) as raw_sink:
            sink = _Recorded(raw_sink, recorder)
            await runner.start()
            if hygiene:
                watch = MachineWatch.start()
            order: list[tuple[ServerConfig, str]] = [(cfg.baseline, cfg.baseline.name)]
            order += [(sc, sc.name) for sc in cfg.speculative]
            for index, (sc, name) in enumerate(order):
                run = ConfigRun(sc, name, started_at=time.monotonic() - state.t0)
                state.runs.append(run)
                search = make_search(cfg, runner, http, sink, say)
                await run_config(
                    cfg, sc, run, cfg.load.phases, runner, http, sink, publish, index, say, search
                )
                if index == 0 and not run.measured():
                    raise SweepAborted(
                        f"the baseline could not be measured, so nothing can be compared: "
                        f"{run.error or f'{run.run}: no request completed'}"
                    )
            end_phases = list(cfg.load.phases)
            if cfg.validate:
                schedule = schedule_from_section(build_view(cfg, state).section)
                template = cfg.validate_template or next(
                    (sc.template for sc in cfg.speculative if sc.template is not None), None
                )
                if schedule is None or template is None:
                    say("validate: no schedule to launch (no concurrency levels, or no launch template)")
                else:
                    sc = ServerConfig(
                        schedule.max_k, template=template, schedule=schedule, option="--validate"
                    )
                    levels = [p.concurrency for p in cfg.load.phases if p.concurrency is not None]
                    ramp = [Phase(concurrency=c) for c in schedule_levels(schedule, levels)]
                    run = ConfigRun(sc, sc.name, started_at=time.monotonic() - state.t0)
                    state.runs.append(run)
                    await run_config(
                        cfg, sc, run, ramp, runner, http, sink, publish, len(state.runs) - 1, say
                    )
                    end_phases = ramp
            if cfg.rerun_baseline:
                sc = cfg.baseline
                run = ConfigRun(sc, sc.name + END, started_at=time.monotonic() - state.t0)
                state.runs.append(run)
                await run_config(
                    cfg, sc, run, end_phases, runner, http, sink, publish, len(state.runs) - 1, say
                )
        _close_watch(result, watch)
        publish()
        result.finish()
        recorder.finish(result.to_dict())
        if recorder.recorded:
            say(f"recorded as run {recorder.run_id} in {recorder.path}")
    except (asyncio.CancelledError, KeyboardInterrupt):
        _close_watch(result, watch)
        try:
            publish()
        except Exception as e:  # the file keeps the last level published; say why this one is missing
            say(f"could not add the interrupted level to the result: {type(e).__name__}: {e}")
        _end_partial(recorder, result, state, say)
        raise
    except SweepAborted:
        _close_watch(result, watch)
        publish()
        _end_partial(recorder, result, state, say)
        raise
    finally:
        _close_watch(None, watch)
        await runner.aclose()
        await http.aclose()
    return result.to_dict(), state


def add_view(result: ResultFile, view: SweepView) -> None:
    """Put a sweep's view into its result file: one candidate entry per cell (replacing earlier ones) and the
    ``sweep`` section."""
    for entry in view.entries:
        fields = dict(entry)
        draft, k, summary, by_category = (fields.pop(f) for f in ("draft", "k", "summary", "by_category"))
        result.add_candidate(draft, k, summary, by_category, key=CELL_KEY, **fields)
    result.set_section("sweep", view.section)


def _end_partial(recorder: Any, result: ResultFile, state: SweepRun, say: Callable[[str], None]) -> None:
    """A sweep that stopped early stays a partial run in the store; with no request completed (Ctrl-C while
    the baseline started, a baseline that answered nothing) there is nothing to keep, and it is deleted."""
    if state.measured():
        recorder.finish(result.to_dict(), complete=False)
        return
    recorded = recorder.recorded
    recorder.discard()
    if recorded:
        say("nothing was measured: no run recorded in the store")


class _Recorded:
    """The per-request sink that also records each request into the run store."""

    def __init__(self, sink: RequestSink, recorder: Any) -> None:
        self.sink, self.recorder = sink, recorder

    def write(self, label: str, draft: str | None, k: int, record: Any) -> None:
        self.sink.write(label, draft, k, record)
        self.recorder.add_request(label, draft, k, record)


def _close_watch(result: ResultFile | None, watch: MachineWatch | None) -> None:
    section = watch.finish() if watch is not None else None
    if result is not None and section is not None:
        result.set_section("hygiene", section)
