"""``specmeter load``: load-test any OpenAI-compatible server, optionally against a baseline, level by level.

``--api messages`` speaks Anthropic's Messages API instead (``POST /v1/messages``, as vLLM serves it).

Results go to the same ``--json/--csv/--log`` files as ``bench`` (kind ``"load"``, one candidate entry
per load level). Ctrl-C keeps every finished request on disk and exits 130.
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from pathlib import Path
from typing import Any, cast

import typer
from rich.markup import escape

from specmeter.cli import load_options as lo
from specmeter.cli.common import (
    EXIT_INTERRUPTED,
    check_outputs,
    check_range,
    check_seed,
    console,
    err_console,
    fail,
    parse_float_list,
    parse_option,
)
from specmeter.exitcodes import EXIT_FAILED
from specmeter.measuring.config import K_MAX_LIMIT
from specmeter.monitoring.adapters import SERVER_CHOICES, kind_from_option


def _trace(path: Path, prompts: Any, tokenizer: Path | None) -> Any:
    """The trace, each line matched to a golden-set prompt by length (``load.trace``)."""
    from specmeter.load.trace import TraceError, assign_prompts, estimate_tokens, load_trace
    from specmeter.workloads import render_prompt

    count = estimate_tokens
    if tokenizer is not None:
        from specmeter.engine.loader import load_tokenizer
        from specmeter.modeldir import ModelDirError

        tok = parse_option(load_tokenizer, tokenizer, ModelDirError, "--tokenizer: ")

        def count(prompt: Any) -> int:
            return len(render_prompt(prompt, tok))

    try:
        return assign_prompts(load_trace(path), prompts, count, where=str(path))
    except TraceError as e:
        fail(str(e))


def _check_failures(
    result: dict[str, Any], endpoint: str, max_error_rate: float | None, baseline: str | None = None
) -> None:
    """Exit 1 (one line) when nothing was measured at either endpoint, or more requests failed than
    ``--max-error-rate``."""
    from specmeter.load.result import nothing_measured

    blocks = [
        block
        for level in result.get("candidates") or []
        for block in (level.get("load"), (level.get("baseline") or {}).get("load"))
        if isinstance(block, dict)
    ]
    sent = sum(int(b.get("requests_sent") or 0) for b in blocks)
    failed = sum(int(b.get("failed") or 0) for b in blocks)
    errors: Counter[str] = Counter()
    for b in blocks:
        errors.update(b.get("errors") or {})
    nothing = nothing_measured(result, endpoint, baseline)
    if nothing is not None:
        fail(nothing, code=EXIT_FAILED)
    lo.check_failures(sent, failed, errors, max_error_rate)


def _extra_body(value: str | None) -> dict[str, Any]:
    if value is None:
        return {}
    from specmeter.load.client import parse_json

    try:
        body = parse_json(value)
    except ValueError as e:  # nesting beyond the parser's depth included (load.client.TooDeep)
        fail(f"--extra-body: not valid JSON ({e})")
    if not isinstance(body, dict):
        fail("--extra-body: must be a JSON object, e.g. '{\"ignore_eos\": true}'")
    return body


def load(
    *,
    endpoint: str = typer.Option(
        ..., "--endpoint", help="Base URL of the server to test (http://host:port)."
    ),
    prompts: lo.Prompts,
    baseline: str | None = typer.Option(
        None, "--baseline", help="Base URL of a non-speculative server: same workload, interleaved → E_meas."
    ),
    concurrency: str | None = typer.Option(
        None, "--concurrency", help="Fixed concurrency, or a sweep: 1,4,16."
    ),
    rate: str | None = typer.Option(None, "--rate", help="Fixed request rate (req/s), or a sweep: 0.5,1,2."),
    arrival: str = typer.Option("poisson", help="Arrivals in --rate mode: poisson, constant or gamma."),
    burstiness: float | None = typer.Option(
        None, "--burstiness", help="--arrival gamma: B = 1 is Poisson, B < 1 bursty, B > 1 even (vLLM's)."
    ),
    trace: Path | None = typer.Option(
        None,
        "--trace",
        help="Replay a trace's arrival times and lengths (JSONL: t, input/output_tokens; or Mooncake's).",
    ),
    trace_speed: float = typer.Option(1.0, "--trace-speed", help="--trace: replay this many times faster."),
    tokenizer: Path | None = typer.Option(
        None, "--tokenizer", help="--trace: count golden-set prompt tokens with this model's tokenizer."
    ),
    limit: lo.Limit = None,
    duration: float | None = typer.Option(None, help="Seconds per level and endpoint, instead of --limit."),
    warmup: lo.Warmup = lo.WARMUP,
    max_tokens: lo.MaxTokens = lo.MAX_TOKENS,
    temperature: str = typer.Option(
        "0", help="Sampling temperature sent with every request, or several (0,0.7): request i uses the i-th."
    ),
    top_p: lo.TopP = lo.TOP_P,
    seed: int = typer.Option(0, help="Seeds Poisson arrivals (and request seeds with --request-seeds)."),
    request_seeds: bool = typer.Option(
        False, "--request-seeds", help="Send request i with seed + i (vLLM: a generator per request)."
    ),
    chunk_counts: str = typer.Option(
        "auto",
        "--chunk-counts",
        help="Per-chunk token counts asked of the server: auto (cheapest for its kind), usage, token_ids, "
        "timings or none (final usage only).",
    ),
    api: str = typer.Option(
        "auto",
        help="auto (chat prompts → chat API), completions, chat, or messages (Anthropic /v1/messages).",
    ),
    model: lo.Model = None,
    baseline_model: str | None = typer.Option(
        None, "--baseline-model", help="Model name on the baseline server."
    ),
    api_key: lo.ApiKey = None,
    k: int | None = typer.Option(
        None, "--k", help="The server's draft length, if its metrics do not reveal it."
    ),
    server: str = typer.Option(
        "auto", "--server", help="Server kind for metrics: " + ", ".join(SERVER_CHOICES)
    ),
    metrics_url: str | None = typer.Option(
        None, "--metrics-url", help="Prometheus URL (default: URL/metrics)."
    ),
    baseline_metrics_url: str | None = typer.Option(None, "--baseline-metrics-url", help="The baseline's."),
    no_metrics: bool = typer.Option(False, "--no-metrics", help="Do not scrape server metrics."),
    extra_body: str | None = typer.Option(None, "--extra-body", help="JSON merged into every request body."),
    stall_timeout: lo.StallTimeout = lo.STALL_TIMEOUT,
    request_timeout: lo.RequestTimeout = None,
    client_processes: lo.ClientProcesses = lo.CLIENT_PROCESSES,
    blocks: int | None = typer.Option(
        None, "--blocks", help="Alternation blocks per level (default: automatic)."
    ),
    slo: lo.Slo = None,
    json_out: lo.JsonOut = None,
    csv_out: lo.CsvOut = None,
    log_out: lo.LogOut = None,
    quiet: lo.Quiet = False,
    strict: bool = typer.Option(
        False, "--strict", help="Exit 4 when other processes made this machine busy during the run."
    ),
    max_error_rate: lo.MaxErrorRate = None,
) -> None:
    """Load-test an OpenAI or Anthropic Messages API server: latency, acceptance, E_meas per load level."""
    from specmeter.load.config import LoadConfig, LoadConfigError, LoadError, Phase
    from specmeter.load.requests import CHUNK_COUNTS
    from specmeter.workloads import WorkloadError, load_workload

    if (concurrency is not None) + (rate is not None) + (trace is not None) > 1:
        fail("--concurrency, --rate and --trace are different modes; give one of them")
    if arrival not in ("poisson", "constant", "gamma"):
        fail(f"--arrival: {arrival!r} is not one of poisson, constant, gamma")
    if burstiness is not None and arrival != "gamma":
        fail("--burstiness applies to --arrival gamma")
    check_range("--burstiness", burstiness, low=0, low_open=True)
    if trace is None and (tokenizer is not None or trace_speed != 1.0):
        fail("--tokenizer and --trace-speed apply to --trace")
    check_range("--trace-speed", trace_speed, low=0, low_open=True)
    if trace is not None and duration is not None:
        fail("--trace sets the level's length; --duration does not apply")
    temperatures = parse_float_list(temperature, "--temperature", low=0, high=2)
    if api not in ("auto", "completions", "chat", "messages"):
        fail(f"--api: {api!r} is not one of auto, completions, chat, messages")
    if api == "messages" and any(t > 1.0 for t in temperatures):
        fail(f"--temperature: the Messages API takes 0 to 1, got {max(temperatures):g}")
    if chunk_counts not in CHUNK_COUNTS:
        fail(f"--chunk-counts: {chunk_counts!r} is not one of {', '.join(CHUNK_COUNTS)}")
    if server not in SERVER_CHOICES:
        fail(f"--server: {server!r} is not one of {', '.join(SERVER_CHOICES)}")
    check_range("--k", k, low=1, high=K_MAX_LIMIT)
    check_range("--blocks", blocks, low=1)
    timeouts = {
        "--duration": duration,
        "--stall-timeout": stall_timeout,
        "--request-timeout": request_timeout,
    }
    lo.check_client(limit=limit, warmup=warmup, max_tokens=max_tokens, top_p=top_p, timeouts=timeouts,
                    client_processes=client_processes, max_error_rate=max_error_rate)  # fmt: skip
    if limit is not None and duration is not None:
        fail("--limit and --duration both bound a level; give one of them")
    from specmeter.metrics.slo import SLO, SLOError

    slo_spec = parse_option(functools.partial(SLO.parse, option="--slo"), slo, SLOError)
    check_seed("--seed", seed)
    for name, url in (("--endpoint", endpoint), ("--baseline", baseline)):
        if url is not None and not url.startswith(("http://", "https://")):
            fail(f"{name}: {url!r} is not an http(s) URL")
    check_outputs(
        {"--json": json_out, "--csv": csv_out, "--log": log_out},
        {"--prompts": prompts, "--trace": trace, "--tokenizer": tokenizer},
    )
    try:
        workload = load_workload(prompts)
    except WorkloadError as e:
        fail(str(e))
    entries = None
    if trace is not None:
        entries = _trace(trace, workload.prompts, tokenizer)
        phases = [Phase(trace=True)]
    else:
        phases = lo.levels(concurrency, rate)
    kind = kind_from_option(server)
    try:  # the CLI checked every option already; LoadConfig checks again for library callers
        cfg = LoadConfig(
            endpoint=endpoint,
            prompts=workload.prompts,
            baseline=baseline,
            phases=phases,
            arrival=cast(Any, arrival),
            burstiness=burstiness or 1.0,
            trace=entries,
            trace_speed=trace_speed,
            temperatures=temperatures if len(temperatures) > 1 else (),
            limit=limit,
            duration=duration,
            warmup=warmup,
            max_tokens=max_tokens,
            temperature=temperatures[0],
            top_p=top_p,
            seed=seed,
            request_seeds=request_seeds,
            chunk_counts=cast(Any, chunk_counts),
            api=cast(Any, api),
            model=model,
            baseline_model=baseline_model,
            api_key=api_key,
            k=k,
            server_kind=cast(Any, kind),
            metrics_url=metrics_url,
            baseline_metrics_url=baseline_metrics_url,
            scrape_metrics=not no_metrics,
            extra_body=_extra_body(extra_body),
            stall_timeout=stall_timeout,
            request_timeout=request_timeout,
            blocks=blocks,
            slo=slo_spec,
            client_processes=client_processes,
        )
    except LoadConfigError as e:
        fail(str(e))
    config = {
        "endpoint": endpoint,
        "baseline": baseline,
        "prompts": str(prompts),
        **lo.levels_config(phases),
        "arrival": arrival if rate else None,
        "burstiness": burstiness if rate and arrival == "gamma" else None,
        "trace": str(trace) if trace is not None else None,
        "trace_speed": trace_speed if trace is not None else None,
        "limit": limit,
        "duration": duration,
        "warmup": warmup,
        "max_tokens": max_tokens,
        "temperature": temperatures[0] if len(temperatures) == 1 else temperatures,
        "top_p": top_p,
        "seed": seed,
        "request_seeds": request_seeds,
        "chunk_counts": chunk_counts,
        "api": api,
        "model": model,
        "baseline_model": baseline_model,
        "k": k,
        "server": server,
        "blocks": blocks,
        "slo": slo_spec.text() if slo_spec is not None else None,
        "client_processes": client_processes,
        "extra_body": cfg.extra_body or None,
    }

    from specmeter.load.run import execute_load
    from specmeter.load.view import render_load

    def on_phase(phase: Phase) -> None:
        if not quiet:
            err_console.print(f"[bold]load level {phase.label}[/] …")

    from specmeter.sweep.launch import sigterm_as_interrupt

    try:
        with sigterm_as_interrupt():  # SIGTERM ends the run as Ctrl-C does: in-flight recorded, files saved
            result = asyncio.run(
                execute_load(
                    cfg, config=config, json_out=json_out, csv_out=csv_out, log_out=log_out, on_phase=on_phase
                )
            )
    except LoadError as e:
        fail(str(e))
    except KeyboardInterrupt:
        err_console.print(
            "[yellow]Interrupted; every request sent is on disk (those still in flight as interrupted).[/]",
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if not quiet:
        render_load(result, console)
    hygiene = result.get("hygiene") or {}
    if quiet and hygiene.get("message"):
        err_console.print(f"[bold yellow]{escape(hygiene['message'])}[/]", soft_wrap=True)
    _check_failures(result, endpoint, max_error_rate, baseline)
    if strict and hygiene.get("verdict") in ("busy", "unusable"):
        from specmeter.hygiene.verdict import EXIT_NOISY_MACHINE

        err_console.print(
            f"[yellow]--strict: the machine was {hygiene['verdict']} during the run; exit code "
            f"{EXIT_NOISY_MACHINE} (the results are written)[/]"
        )
        raise typer.Exit(EXIT_NOISY_MACHINE)
