"""``specmeter serve``: the local engine behind an OpenAI-compatible API with vLLM-named Prometheus metrics.

Without ``--draft`` it serves plain target decoding — a baseline server to point ``load --baseline`` at.
It binds loopback unless told otherwise; binding another address without ``--api-key`` gets a warning.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

import typer

from specmeter.cli.common import check_outputs, err_console, fail


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    target: Path = typer.Option(..., "--target", help="Target model directory (Hugging Face format)."),
    draft_name: str | None = typer.Option(
        None,
        "--draft",
        help="Draft model directory or method spec (ngram:min=2,max=4, suffix, layers:n=2; "
        "docs/methods.md); omit for a baseline server.",
    ),
    k: int | None = typer.Option(
        None,
        "--k",
        help="Draft length (tokens proposed per step; default 4). 0 serves without speculation even with "
        "--draft. With --k-schedule: the cap on the schedule's k (vLLM's num_speculative_tokens).",
    ),
    k_schedule: str | None = typer.Option(
        None,
        "--k-schedule",
        help="Batch-size → k schedule as vLLM's num_speculative_tokens_per_batch_size: JSON such as "
        "'[[1,4,4],[5,16,0]]', or a JSON file: that list, a --speculative-config, or the --json result of "
        "tune --batch or sweep (its one schedule is found inside).",
    ),
    max_batch: int | None = typer.Option(
        None,
        "--max-batch",
        help="Sequences decoded together (continuous batching); 1 = one request at a time, FIFO. "
        "Default: 16 on CPU, 64 on a GPU.",
    ),
    host: str = typer.Option("127.0.0.1", help="Address to bind (loopback by default)."),
    port: int = typer.Option(8000, help="Port to bind (0 picks a free one)."),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="SPECMETER_API_KEY", help="Require 'Authorization: Bearer KEY' on /v1."
    ),
    served_model_name: str | None = typer.Option(
        None, "--served-model-name", help="Model name clients pass (default: the target directory's name)."
    ),
    log: Path | None = typer.Option(None, "--log", help="Per-request JSONL log (tokens, latency, accepted)."),
    log_prompts: bool = typer.Option(
        False, "--log-prompts", help="Also log each request's prompt or messages (for `specmeter golden`)."
    ),
    log_output: bool = typer.Option(
        False,
        "--log-output",
        help="Also log each request's output (ids and text), prompt ids, finish reason, max_tokens and model "
        "(for `specmeter replay`).",
    ),
    default_max_tokens: int = typer.Option(
        256, "--default-max-tokens", help="max_tokens for requests that give none (capped by the context)."
    ),
    max_waiting: int = typer.Option(1024, "--max-waiting", help="Queued requests beyond this get HTTP 429."),
    max_body_bytes: int | None = typer.Option(
        None,
        "--max-body-bytes",
        help="Request bodies beyond this many bytes get HTTP 413. Default: 1 MiB or 32 bytes per context "
        "position, whichever is larger.",
    ),
    per_request_metrics: bool = typer.Option(
        True,
        "--per-request-metrics/--no-per-request-metrics",
        help="Add vLLM-style metrics.speculative_decoding to responses.",
    ),
    dtype: str = typer.Option("auto", help="auto, float32, bfloat16 or float16."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:N."),
    implementation: str = typer.Option("auto", help="auto, native (Llama family) or transformers."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Allow custom model code."),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn log level."),
) -> None:
    """Serve target (+ draft) with an OpenAI-compatible API, SSE streaming and Prometheus /metrics."""
    from specmeter.methods import MethodSpec, MethodSpecError, parse_candidate

    draft: Path | MethodSpec | None = None
    if draft_name is not None:
        try:
            parsed = parse_candidate(draft_name)
        except MethodSpecError as e:
            fail(f"--draft: {e}")
        draft = parsed if isinstance(parsed, MethodSpec) else Path(draft_name)
    if log_prompts and log is None:
        fail("--log-prompts needs --log FILE")
    if log_output and log is None:
        fail("--log-output needs --log FILE")
    if k is not None and k < 0:
        fail(f"--k must be >= 0, got {k}")
    if max_batch is not None and max_batch < 1:
        fail(f"--max-batch must be >= 1, got {max_batch}")
    schedule = None
    if k_schedule is not None:
        from specmeter.engine.schedule import ScheduleError, parse_schedule_option

        if draft is None:
            fail("--k-schedule needs --draft (a server without a draft never speculates)")
        try:
            schedule = parse_schedule_option(k_schedule)
        except ScheduleError as e:
            fail(str(e))
    k_cap = k if k is not None else (schedule.max_k if schedule is not None else 4)
    if not 0 <= port <= 65535:
        fail(f"--port must be between 0 and 65535, got {port}")
    if default_max_tokens < 1:
        fail(f"--default-max-tokens must be >= 1, got {default_max_tokens}")
    if max_waiting < 1:
        fail(f"--max-waiting must be >= 1, got {max_waiting}")
    if max_body_bytes is not None:
        from specmeter.server.app import ServeConfig

        try:
            ServeConfig(max_body_bytes=max_body_bytes)  # the config checks its own values
        except ValueError as e:
            fail(f"--max-body-bytes: {e}")
    if implementation not in ("auto", "native", "transformers"):
        fail(f"--implementation: {implementation!r} is not one of auto, native, transformers")
    from specmeter.engine.schedule import schedule_file

    given = schedule_file(k_schedule) if k_schedule and k_schedule.strip() else None  # a file, not JSON
    draft_dir = draft if isinstance(draft, Path) else None
    check_outputs({"--log": log}, {"--target": target, "--draft": draft_dir, "--k-schedule": given})
    if not _is_loopback(host) and api_key is None:
        err_console.print(
            f"[yellow]warning:[/] binding {host} exposes the server beyond this machine without --api-key"
        )

    from specmeter.modeldir import ModelDirError
    from specmeter.server.app import ServeConfig, create_app
    from specmeter.server.hosting import run_foreground
    from specmeter.server.local_engine import LocalEngine, default_max_batch

    try:
        engine = LocalEngine.load(
            target,
            draft,
            k_cap,
            schedule=schedule,
            model_name=served_model_name,
            dtype=dtype,
            device=device,
            implementation=implementation,
            trust_remote_code=trust_remote_code,
        )
    except ModelDirError as e:
        fail(str(e))
    context = engine.context_length
    if engine.k and context is not None and engine.k + 2 > context:
        need = engine.k + 1
        fail(f"--k {engine.k}: a step needs k + 1 = {need} positions beyond the prompt, and the target holds "
             f"{context} positions in all")  # fmt: skip
    config = ServeConfig(
        api_key=api_key,
        log_path=log,
        log_prompts=log_prompts,
        log_output=log_output,
        default_max_tokens=default_max_tokens,
        max_waiting=max_waiting,
        per_request_metrics=per_request_metrics,
        max_batch=max_batch if max_batch is not None else default_max_batch(engine),
        max_body_bytes=max_body_bytes,
    )
    if engine.k and schedule is not None:
        mode = f"draft {engine.draft_name}, k by batch size: {engine.schedule.describe()}"
    elif engine.k:
        mode = f"draft {engine.draft_name}, k={engine.k}"
    else:
        mode = "no speculation (k=0, draft not loaded)" if draft is not None else "no draft (baseline)"
    batching = "one request at a time" if config.max_batch == 1 else f"batches of up to {config.max_batch}"
    err_console.print(
        f"serving {engine.model_name} ({mode}; {batching}) on http://{host}:{port}/v1 · metrics on /metrics"
    )
    run_foreground(create_app(engine, config), host, port, log_level=log_level)
