"""``specmeter load``: load-test any OpenAI-compatible server, optionally against a baseline, level by level.

``--api messages`` speaks Anthropic's Messages API instead (``POST /v1/messages``, as vLLM serves it).

Results go to the same ``--json/--csv/--log`` files as ``bench`` (kind ``"load"``, one candidate entry
per load level). Ctrl-C keeps every finished request on disk and exits 130.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any, cast, get_args

import typer
from rich.markup import escape

from specmeter.cli import load_options as lo
from specmeter.cli.common import (
    EXIT_INTERRUPTED,
    check_outputs,
    check_seed,
    console,
    err_console,
    fail,
    parse_float_list,
    parse_option,
)
from specmeter.cli.options import shared
from specmeter.exitcodes import EXIT_FAILED
from specmeter.load.config import Api, Arrival, ChunkCounts, LoadConfig, Phase
from specmeter.monitoring.adapters import SERVER_CHOICES, kind_from_option


def _choices(kinds: Any) -> str:
    """A Literal's values as help text: ``auto, usage, token_ids``."""
    return ", ".join(get_args(kinds))


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


def _interrupted(levels: list[str], recorded: dict[str, int]) -> str:
    """What Ctrl-C left on disk: nothing, the levels before one interrupted in its warm-up, or every request
    sent."""
    during = f" (during level {levels[-1]}'s warm-up)" if levels else ""
    if not any(recorded.values()):
        return f"Interrupted before any request was measured{during}; nothing was measured."
    if levels and not recorded.get(levels[-1]):
        return (
            f"Interrupted during level {levels[-1]}'s warm-up: nothing of that level was measured; every "
            "request of the levels before it is on disk."
        )
    return "Interrupted; every request sent is on disk (those still in flight as interrupted)."


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


@shared(head=lo.HEAD, tail=lo.TAIL)
def load(
    *,
    endpoint: str = typer.Option(
        ..., "--endpoint", help="Base URL of the server to test (http://host:port)."
    ),
    baseline: str | None = typer.Option(
        None, "--baseline", help="Base URL of a non-speculative server: same workload, interleaved → E_meas."
    ),
    concurrency: str | None = typer.Option(
        None, "--concurrency", help="Fixed concurrency, or a sweep: 1,4,16."
    ),
    rate: str | None = typer.Option(None, "--rate", help="Fixed request rate (req/s), or a sweep: 0.5,1,2."),
    arrival: str = typer.Option(LoadConfig.arrival, help=f"Arrivals in --rate mode: {_choices(Arrival)}."),
    burstiness: float | None = typer.Option(
        None, "--burstiness", help="--arrival gamma: B = 1 is Poisson, B < 1 bursty, B > 1 even (vLLM's)."
    ),
    trace: Path | None = typer.Option(
        None,
        "--trace",
        help="Replay a trace's arrival times and lengths (JSONL: t, input/output_tokens; or Mooncake's).",
    ),
    trace_speed: float = typer.Option(
        LoadConfig.trace_speed, "--trace-speed", help="--trace: replay this many times faster."
    ),
    tokenizer: Path | None = typer.Option(
        None, "--tokenizer", help="--trace: count golden-set prompt tokens with this model's tokenizer."
    ),
    duration: float | None = typer.Option(
        LoadConfig.duration, help="Seconds per level and endpoint, instead of --limit."
    ),
    temperature: str = typer.Option(
        f"{LoadConfig.temperature:g}",
        help="Sampling temperature sent with every request, or several (0,0.7): request i uses the i-th.",
    ),
    seed: int = typer.Option(
        LoadConfig.seed, help="Seeds Poisson arrivals (and request seeds with --request-seeds)."
    ),
    request_seeds: bool = typer.Option(
        LoadConfig.request_seeds,
        "--request-seeds",
        help="Send request i with seed + i (vLLM: a generator per request).",
    ),
    chunk_counts: str = typer.Option(
        LoadConfig.chunk_counts,
        "--chunk-counts",
        help=f"Per-chunk token counts asked of the server: {_choices(ChunkCounts)} (auto: the cheapest for "
        "its kind; none: final usage only).",
    ),
    domain_metadata: bool = typer.Option(
        LoadConfig.domain_metadata,
        "--domain-metadata/--no-domain-metadata",
        help="Send each prompt's category as the request's metadata.domain (chat and completions APIs; "
        "serve --log records it as the request's domain).",
    ),
    api: str = typer.Option(
        LoadConfig.api,
        help=f"{_choices(Api)} (auto: chat prompts → chat API; messages: Anthropic /v1/messages).",
    ),
    baseline_model: str | None = typer.Option(
        LoadConfig.baseline_model, "--baseline-model", help="Model name on the baseline server."
    ),
    k: int | None = typer.Option(
        LoadConfig.k, "--k", help="The server's draft length, if its metrics do not reveal it."
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
    blocks: int | None = typer.Option(
        LoadConfig.blocks, "--blocks", help="Alternation blocks per level (default: automatic)."
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 4 when other processes made this machine busy during the run."
    ),
    options: dict[str, Any],
) -> None:
    """Load-test an OpenAI or Anthropic Messages API server: latency, acceptance, E_meas per load level."""
    import dataclasses

    from specmeter.load.config import LoadError
    from specmeter.workloads import WorkloadError, load_workloads

    prompts: list[Path] = list(options["prompts"])
    json_out, csv_out, log_out = options["json_out"], options["csv_out"], options["log_out"]
    quiet, max_error_rate = options["quiet"], options["max_error_rate"]
    if (concurrency is not None) + (rate is not None) + (trace is not None) > 1:
        fail("--concurrency, --rate and --trace are different modes; give one of them")
    if burstiness is not None and arrival != "gamma":
        fail("--burstiness applies to --arrival gamma")
    if trace is None and (tokenizer is not None or trace_speed != LoadConfig.trace_speed):
        fail("--tokenizer and --trace-speed apply to --trace")
    if trace is not None and duration is not None:
        fail("--trace sets the level's length; --duration does not apply")
    temperatures = parse_float_list(temperature, "--temperature")
    if server not in SERVER_CHOICES:
        fail(f"--server: {server!r} is not one of {', '.join(SERVER_CHOICES)}")
    phases = [Phase(trace=True)] if trace is not None else lo.levels(concurrency, rate)
    # Every setting checked by LoadConfig before any file is read; the prompts and the trace come after.
    cfg = lo.load_config(
        options,
        endpoint=endpoint,
        prompts=(),
        baseline=baseline,
        phases=phases,
        arrival=arrival,
        burstiness=LoadConfig.burstiness if burstiness is None else burstiness,
        trace_speed=trace_speed,
        temperatures=temperatures if len(temperatures) > 1 else (),
        duration=duration,
        temperature=temperatures[0],
        seed=seed,
        request_seeds=request_seeds,
        chunk_counts=chunk_counts,
        domain_metadata=domain_metadata,
        api=api,
        baseline_model=baseline_model,
        k=k,
        server_kind=cast(Any, kind_from_option(server)),
        metrics_url=metrics_url,
        baseline_metrics_url=baseline_metrics_url,
        scrape_metrics=not no_metrics,
        extra_body=_extra_body(extra_body),
        blocks=blocks,
    )
    check_seed("--seed", seed)
    for name, url in (("--endpoint", endpoint), ("--baseline", baseline)):
        if url is not None and not url.startswith(("http://", "https://")):
            fail(f"{name}: {url!r} is not an http(s) URL")
    check_outputs(
        {"--json": json_out, "--csv": csv_out, "--log": log_out},
        {"--prompts": prompts, "--trace": trace, "--tokenizer": tokenizer},
    )
    try:
        workload = load_workloads(prompts)
    except WorkloadError as e:
        fail(str(e))
    entries = None if trace is None else _trace(trace, workload.prompts, tokenizer)
    cfg = dataclasses.replace(cfg, prompts=workload.prompts, trace=entries)
    config = cfg.echo(
        prompts=", ".join(map(str, prompts)), trace=None if trace is None else str(trace), server=server
    )

    from specmeter.load.run import execute_load
    from specmeter.load.view import render_load

    # What was measured when Ctrl-C came: a level's warm-up records nothing (its requests are never rows).
    levels: list[str] = []
    recorded: dict[str, int] = {}

    def on_phase(phase: Phase) -> None:
        levels.append(phase.label)
        if not quiet:
            err_console.print(f"[bold]load level {phase.label}[/] …")

    def on_request(phase: Phase, role: Any, outcome: Any) -> None:
        recorded[phase.label] = recorded.get(phase.label, 0) + 1

    from specmeter.sweep.launch import sigterm_as_interrupt

    try:
        with sigterm_as_interrupt():  # SIGTERM ends the run as Ctrl-C does: in-flight recorded, files saved
            result = asyncio.run(
                execute_load(
                    cfg,
                    config=config,
                    json_out=json_out,
                    csv_out=csv_out,
                    log_out=log_out,
                    on_phase=on_phase,
                    on_request=on_request,
                )
            )
    except LoadError as e:
        fail(str(e))
    except KeyboardInterrupt:
        err_console.print(f"[yellow]{escape(_interrupted(levels, recorded))}[/]", soft_wrap=True)
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
