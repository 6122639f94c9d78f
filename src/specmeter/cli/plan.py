"""``specmeter plan``: will target + draft fit, in which weight format, on which GPU, with how much KV room?

Reads only the models' config.json files (directly, without transformers: fast, nothing loaded):

    specmeter plan --target models/llama-70b --draft models/llama-1b --context 8192 --batch 8

For a mixture-of-experts target it prints the active parameters beside the total and, with a draft (or for
any MoE target), the weight traffic per forward: what a decode step, a verification of k + 1 tokens and a
draft forward read, and the tokens per step above which speculation reads fewer weight bytes per token.
"""

from __future__ import annotations

from pathlib import Path

import typer

from specmeter.cli.common import check_outputs, console, err_console, fail

_FORMATS_HELP = "Weight formats to plan, from fp32, bf16, fp8, nvfp4, int4 (comma-separated)."


def plan(
    target: Path = typer.Option(..., "--target", help="Target model directory (or its config.json)."),
    draft_name: str | None = typer.Option(
        None,
        "--draft",
        help="Draft model directory (or its config.json), or a model-free method spec (ngram, suffix: no "
        "extra memory).",
    ),
    formats: str = typer.Option("fp32,bf16,fp8,nvfp4,int4", "--dtype", help=_FORMATS_HELP),
    kv_dtype: str | None = typer.Option(
        None, "--kv-dtype", help="KV cache format: fp32, bf16, fp16, fp8 (default: follows the weights)."
    ),
    context: int = typer.Option(4096, "--context", help="Tokens per sequence (prompt + output)."),
    batch: int = typer.Option(1, "--batch", help="Sequences held at once."),
    tp: int = typer.Option(1, "--tp", help="GPUs per instance (tensor parallel); memory is pooled."),
    utilization: float = typer.Option(
        0.90, "--utilization", help="Fraction of GPU memory usable (vLLM's 0.9)."
    ),
    gpus: Path | None = typer.Option(
        None, "--gpus", help="Your own GPU catalogue (JSON like assets/gpus.json)."
    ),
    k: int = typer.Option(4, "--k", help="Draft length for the weight-traffic table."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the plan as JSON."),
) -> None:
    """Memory fit per weight format: weights, KV cache, the smallest GPU that holds it and the KV headroom."""
    from specmeter.economics import (
        KV_FORMATS,
        WEIGHT_FORMATS,
        arch_from_config,
        load_catalogue,
        traffic,
    )
    from specmeter.economics import plan as make_plan
    from specmeter.economics.plan import plan_dict
    from specmeter.methods import MethodSpec, MethodSpecError, parse_candidate
    from specmeter.modeldir import ModelDirError
    from specmeter.report.files import write_json_atomic
    from specmeter.report.view_plan import render_plan

    draft: Path | None = None
    if draft_name is not None:
        try:
            parsed = parse_candidate(draft_name)
        except MethodSpecError as e:
            fail(f"--draft: {e}")
        if isinstance(parsed, MethodSpec):
            if not parsed.model_free:
                fail(f"--draft {parsed.label}: plan sizes model directories and model-free methods only")
            err_console.print(
                f"{parsed.label}: a model-free method adds no accelerator memory; planning the target alone"
            )
        else:
            draft = Path(draft_name)
    check_outputs({"--json": json_out}, {"--target": target, "--draft": draft, "--gpus": gpus})
    try:
        t = arch_from_config(target)
        d = arch_from_config(draft) if draft is not None else None
        catalogue = load_catalogue(gpus)
    except (ModelDirError, ValueError) as e:
        fail(str(e))
    names = [f.strip() for f in formats.split(",") if f.strip()]
    for name in names or [formats]:
        if name not in WEIGHT_FORMATS:
            fail(f"--dtype: {name!r} is not one of {', '.join(WEIGHT_FORMATS)}")
    if kv_dtype is not None and kv_dtype not in KV_FORMATS:
        fail(f"--kv-dtype: {kv_dtype!r} is not one of {', '.join(KV_FORMATS)}")
    for option, value in (("--context", context), ("--batch", batch), ("--tp", tp), ("--k", k)):
        if value < 1:
            fail(f"{option} must be >= 1")
    if not 0 < utilization <= 1:
        fail("--utilization must be in (0, 1]")
    rows = make_plan(t, d, catalogue.gpus, formats=names, context=context, batch=batch, kv_format=kv_dtype,
                     utilization=utilization, count=tp)  # fmt: skip

    flows = [traffic(t, d, row.footprint.weight_format, k) for row in rows] if t.is_moe or d else []
    render_plan(t, d, rows, flows, context=context, batch=batch, utilization=utilization, console=console)
    if json_out is not None:
        data = plan_dict(t, d, rows, flows, context=context, batch=batch, tp=tp, utilization=utilization)
        write_json_atomic(json_out, data, marker="plan")
