"""``specmeter sweep``: real servers over k × load level — E_meas per cell, best k per level, the schedule.

    specmeter sweep --launch 'specmeter serve --target T --draft D --k {k} --port {port}' --k 0,2,4 \\
        --concurrency 1,4,16 --prompts golden.jsonl --limit 32 --max-tokens 64 --json sweep.json

Each configuration is started from the template (its own process group, a health wait, a warm-up), runs
every level, and is stopped (SIGTERM, then SIGKILL); the baseline runs first and again last.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
from pathlib import Path
from typing import Any, cast

import typer
from rich.markup import escape

from specmeter.cli import load_options as lo
from specmeter.cli.common import (
    EXIT_INTERRUPTED,
    check_outputs,
    console,
    err_console,
    fail,
    resolve_store,
)
from specmeter.cli.options import RECORD, shared
from specmeter.exitcodes import EXIT_FAILED
from specmeter.load.config import LoadConfig, LoadConfigError
from specmeter.metrics.acceptance import K_MAX_LIMIT
from specmeter.sweep.config import APIS, SWEEP_K, SearchSettings, SweepConfig


def _ks(value: str) -> list[int]:
    out = []
    for part in value.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) > K_MAX_LIMIT:
            fail(f"--k: {part!r} is not a draft length from 0 to {K_MAX_LIMIT} (0 = the baseline, "
                 "no speculation)")  # fmt: skip
        out.append(int(part))
    return sorted(set(out))


def _endpoints(values: list[str]) -> dict[int, str]:
    out: dict[int, str] = {}
    for value in values:
        k_text, sep, url = value.partition("=")
        if not sep or not k_text.strip().isdigit() or not url.startswith(("http://", "https://")):
            fail(f"--endpoint: {value!r} is not K=URL (e.g. 0=http://127.0.0.1:8001 for the baseline)")
        k = int(k_text)
        if k in out:
            fail(f"--endpoint: two endpoints for k={k}")
        out[k] = url
    return out


def _search(
    slo: str | None, search: str | None, search_range: str | None, target: float, max_steps: int, phases: Any
) -> SearchSettings | None:
    """The capacity search from the options (``SweepConfig`` checks its target and steps); one-line errors
    naming them."""
    if slo is None:
        if search is not None or search_range is not None:
            fail("--search needs --slo: capacity is the highest load whose requests meet it")
        return None
    if search is None:
        if search_range is not None:
            fail("--search-range goes with --search")
        return None
    if search not in ("concurrency", "rate"):
        fail(f"--search: {search!r} is not one of concurrency, rate")
    loads = [p.concurrency if p.concurrency is not None else p.rate for p in phases]
    if search_range is None:
        low, high = min(loads), max(loads)
        if low == high:
            fail("--search: give --search-range LOW:HIGH (the levels span a single load)")
    else:
        lo_text, sep, hi_text = search_range.partition(":")
        try:
            low, high = float(lo_text), float(hi_text)
        except ValueError:
            fail(f"--search-range: {search_range!r} is not LOW:HIGH, e.g. 1:64")
        if not sep or not 0 < low < high or not math.isfinite(high):
            fail(f"--search-range: {search_range!r} needs 0 < LOW < HIGH")
    if search == "concurrency" and (low != int(low) or high != int(high)):
        fail(f"--search-range: concurrency bounds are whole numbers, got {search_range}")
    from specmeter.load.config import LoadConfigError

    try:  # the machine's bounds (load.limits) are SearchSettings' own check
        return SearchSettings(cast(Any, search), float(low), float(high), target, max_steps)
    except LoadConfigError as e:
        fail(str(e))


@shared(head=lo.HEAD, tail=(*lo.TAIL, *RECORD))
def sweep(
    *,
    launch: str | None = typer.Option(
        None, "--launch", help="Server command with {port} and {k} (also {draft}, {spec}, {schedule})."
    ),
    baseline_launch: str | None = typer.Option(
        None, "--baseline-launch", help="The baseline's command (default: --launch with k = 0)."
    ),
    ks: str = typer.Option(
        ",".join(map(str, SWEEP_K)), "--k", help="Draft lengths to launch; 0 = the baseline."
    ),
    endpoint: list[str] = typer.Option(
        [],
        "--endpoint",
        help="An already-running server per configuration: K=URL (repeat; 0=… the baseline).",
    ),
    draft: str | None = typer.Option(None, "--draft", help="The draft model, for {draft} and {spec}."),
    method: str = typer.Option(SweepConfig.method, "--method", help="{spec}'s speculative method (vLLM)."),
    concurrency: str | None = typer.Option(None, "--concurrency", help="Levels: concurrencies, e.g. 1,4,16."),
    rate: str | None = typer.Option(None, "--rate", help="Levels: request rates (req/s), e.g. 0.5,1,2."),
    temperature: float = typer.Option(LoadConfig.temperature, help="Sampling temperature of every request."),
    seed: int = typer.Option(LoadConfig.seed, help="Seeds Poisson arrivals (--rate)."),
    api: str = typer.Option(LoadConfig.api, help=f"{', '.join(APIS)}."),
    startup_timeout: float = typer.Option(
        SweepConfig.startup_timeout, "--startup-timeout", help="Seconds a server may take to answer /health."
    ),
    stop_timeout: float = typer.Option(
        SweepConfig.stop_grace, "--stop-timeout", help="Seconds between SIGTERM and SIGKILL."
    ),
    logs_dir: Path | None = typer.Option(
        None,
        "--logs",
        help="Output of the servers --launch starts (default: beside --json, else a temp dir).",
    ),
    no_rerun: bool = typer.Option(
        False, "--no-rerun-baseline", help="Do not run the baseline again at the end (drift unmeasured)."
    ),
    validate: bool = typer.Option(
        SweepConfig.validate,
        "--validate",
        help="Launch the resulting schedule ({schedule}/{spec}) and ramp across it.",
    ),
    validate_launch: str | None = typer.Option(
        None, "--validate-launch", help="The schedule's command (default: --launch)."
    ),
    search: str | None = typer.Option(
        None, "--search", help="With --slo: search each configuration's capacity over concurrency or rate."
    ),
    search_range: str | None = typer.Option(
        None,
        "--search-range",
        help="LOW:HIGH bounds of --search (default: the levels' smallest and largest).",
    ),
    target: float = typer.Option(
        SweepConfig.slo_target, "--target", help="Attainment that capacity must keep (0 to 1]."
    ),
    max_steps: int = typer.Option(
        SearchSettings.max_steps, "--max-steps", help="--search: levels run at most per configuration."
    ),
    schedule_out: Path | None = typer.Option(
        None, "--schedule-out", help="Write the schedule as vLLM --speculative-config JSON."
    ),
    options: dict[str, Any],
) -> None:
    """Sweep real servers over k × load level: E_meas with drift, α/τ from the server, best k, schedule."""
    import dataclasses

    from specmeter.sweep.config import ServerConfig
    from specmeter.sweep.launch import LaunchError, check_template
    from specmeter.workloads import WorkloadError, load_workloads

    prompts: list[Path] = list(options["prompts"])
    json_out, csv_out, log_out = options["json_out"], options["csv_out"], options["log_out"]
    if (launch is None) == (not endpoint):
        fail("give --launch (specmeter starts each configuration) or --endpoint K=URL per running server")
    if concurrency is not None and rate is not None:
        fail("--concurrency and --rate are different modes; give one of them")
    configs: list[ServerConfig] = []
    try:
        if launch is not None:
            check_template(launch, "--launch")
            k_list = _ks(ks)
            if baseline_launch is not None:
                check_template(baseline_launch, "--baseline-launch")
                configs.append(ServerConfig(0, template=baseline_launch, option="--baseline-launch"))
            elif 0 in k_list:
                if "{spec}" in launch:
                    fail("--launch uses {spec}, which has no k = 0 form (vLLM takes no speculative config "
                         "without speculation); give --baseline-launch")  # fmt: skip
                configs.append(ServerConfig(0, template=launch))
            else:
                fail("--k has no 0 and there is no --baseline-launch: the sweep needs a baseline")
            configs += [ServerConfig(k, template=launch) for k in k_list if k > 0]
            if validate_launch is not None:
                check_template(validate_launch, "--validate-launch")
        else:
            urls = _endpoints(endpoint)
            if 0 not in urls:
                fail("--endpoint: give the baseline as 0=URL")
            if validate:
                fail("--validate launches the schedule: it needs --launch (or --validate-launch)")
            configs = [ServerConfig(k, url=url, option="--endpoint") for k, url in sorted(urls.items())]
    except LaunchError as e:
        fail(str(e))
    if len(configs) < 2:
        fail("--k: give at least one draft length > 0 beside the baseline")
    phases = lo.levels(concurrency, rate)
    if validate and rate is not None:
        fail("--validate ramps across batch sizes: use --concurrency levels")
    search_settings = _search(options["slo"], search, search_range, target, max_steps, phases)
    # Every setting checked by LoadConfig and SweepConfig before any file is read; the prompts come after.
    load = lo.load_config(options, endpoint="", prompts=(), phases=phases, temperature=temperature, seed=seed,
                          api=api, baseline_model=options["model"])  # fmt: skip
    try:
        cfg = SweepConfig(
            load=load, configs=configs, draft=draft, method=method, startup_timeout=startup_timeout,
            stop_grace=stop_timeout, rerun_baseline=not no_rerun, validate=validate,
            validate_template=validate_launch, slo=load.slo, slo_target=target, search=search_settings,
        )  # fmt: skip
    except LoadConfigError as e:
        fail(str(e))
    stored = resolve_store(options["store"], options["no_store"])
    outputs = {"--json": json_out, "--csv": csv_out, "--log": log_out, "--schedule-out": schedule_out,
               "--store": stored}  # fmt: skip
    # --draft is a name a launch template fills in; when it names a local model directory it is an input too.
    inputs = {"--prompts": prompts, "--draft": Path(draft) if draft and Path(draft).exists() else None}
    check_outputs(outputs, inputs, directories={"--logs": logs_dir})
    if not cfg.launches:
        pass  # --endpoint: specmeter starts no server, so there is no server output to keep (or name)
    elif logs_dir is None and json_out is not None:
        # The default beside --json, checked once --json itself passed (a bad --json is one error, not two).
        logs_dir = json_out.with_name(json_out.stem + "-logs")
        check_outputs(outputs, inputs, directories={"--logs (default, beside --json)": logs_dir})
    elif logs_dir is None:
        logs_dir = Path(tempfile.mkdtemp(prefix="specmeter-sweep-"))  # only once every output passed
    try:
        workload = load_workloads(prompts)
    except WorkloadError as e:
        fail(str(e))
    cfg = dataclasses.replace(
        cfg, load=dataclasses.replace(load, prompts=workload.prompts), logs_dir=logs_dir or cfg.logs_dir
    )
    max_error_rate = options["max_error_rate"]
    config = cfg.echo(prompts=", ".join(map(str, prompts)), endpoints=endpoint, max_error_rate=max_error_rate)
    code = _run(
        cfg, config, json_out, csv_out, log_out, schedule_out, options["quiet"], stored, max_error_rate
    )
    if code:
        raise typer.Exit(code)


def _run(
    cfg: Any, config: dict[str, Any], json_out: Path | None, csv_out: Path | None, log_out: Path | None,
    schedule_out: Path | None, quiet: bool, store: Path | None, max_error_rate: float | None = None,
) -> int:  # fmt: skip
    from specmeter.report.files import write_json_atomic
    from specmeter.store import StoreError
    from specmeter.sweep.launch import sigterm_as_interrupt
    from specmeter.sweep.run import SweepAborted, execute_sweep
    from specmeter.sweep.view import render_sweep

    def say(line: str) -> None:
        if not quiet:
            err_console.print(escape(line), soft_wrap=True)

    if cfg.launches:
        say(f"server logs: {cfg.logs_dir}")
    try:
        with sigterm_as_interrupt():
            result, _ = asyncio.run(
                execute_sweep(
                    cfg, config=config, json_out=json_out, csv_out=csv_out, log_out=log_out, say=say,
                    store=store,
                )
            )  # fmt: skip
    except SweepAborted as e:
        fail(str(e), code=EXIT_FAILED)
    except StoreError as e:
        fail(str(e))
    except KeyboardInterrupt:
        err_console.print(
            "[yellow]Interrupted; the server in flight is stopped, every finished level is in the result"
            + (f" ({json_out})" if json_out else "")
            + ".[/]",
            soft_wrap=True,
        )
        return EXIT_INTERRUPTED
    section = result.get("sweep") or {}
    if not quiet:
        render_sweep(result, console)
    schedule = section.get("schedule")
    if schedule_out is not None and schedule:
        write_json_atomic(schedule_out, schedule["speculative_config"], schedule=True)
    elif schedule_out is not None:
        err_console.print(
            f"[yellow]--schedule-out: {escape(str(schedule_out))} not written: no schedule (it needs "
            "concurrency levels at which a best k was measured)[/]",
            soft_wrap=True,
        )
    failures = section.get("failures") or []
    for line in failures:
        err_console.print(f"[bold red]error:[/] {escape(line)}", soft_wrap=True)
    requests = section.get("requests") or {}
    lo.check_failures(
        int(requests.get("sent") or 0), int(requests.get("failed") or 0), requests.get("errors") or {},
        max_error_rate,
    )  # fmt: skip
    return EXIT_FAILED if failures else 0
