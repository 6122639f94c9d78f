"""``specmeter plan``: will target + draft fit, in which weight format, on which GPU, with how much KV room?

Reads only the models' config.json files (directly, without transformers: fast, nothing loaded):

    specmeter plan --target models/llama-70b --draft models/llama-1b --context 8192 --batch 8

For a mixture-of-experts target it prints the active parameters beside the total and, with a draft (or for
any MoE target), the weight traffic per forward: what a decode step, a verification of k + 1 tokens and a
draft forward read, and the tokens per step above which speculation reads fewer weight bytes per token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from specmeter.cli.common import check_outputs, console, fail

_FORMATS_HELP = "Weight formats to plan, from fp32, bf16, fp8, nvfp4, int4 (comma-separated)."


def _fit_text(fit: Any, context: int) -> tuple[str, str]:
    """(card, KV headroom) cells of one fit, or 'none fits'."""
    from specmeter.report.fmt import fmt_bytes

    if fit is None:
        return "none fits", "—"
    card = f"{fit.count}× {fit.gpu.name}" if fit.count > 1 else fit.gpu.name
    card += f" ({fit.gpu.memory_gib:g} GB)"
    seqs = fit.kv_headroom_tokens // context
    room = f"{fit.kv_headroom_tokens:,} tokens = {seqs:,} × {context:,} ({fmt_bytes(fit.kv_headroom_bytes)})"
    return card, room


def plan(
    target: Path = typer.Option(..., "--target", help="Target model directory (or its config.json)."),
    draft: Path | None = typer.Option(None, "--draft", help="Draft model directory (or its config.json)."),
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
    import dataclasses

    from rich.table import Table

    from specmeter.economics import (
        KV_FORMATS,
        WEIGHT_FORMATS,
        arch_from_config,
        load_catalogue,
        traffic,
    )
    from specmeter.economics import plan as make_plan
    from specmeter.modeldir import ModelDirError
    from specmeter.report.files import write_json_atomic
    from specmeter.report.fmt import fmt_bytes

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

    console.print(f"[bold]target[/] {t.name}: {_describe(t)}", soft_wrap=True)
    if d is not None:
        console.print(f"[bold]draft[/]  {d.name}: {_describe(d)}", soft_wrap=True)
    for a in (t, d) if d is not None else (t,):
        for note in a.notes:
            console.print(f"[dim]{a.name}: {note}[/]", soft_wrap=True)
    tokens = context * batch
    console.print(
        f"KV cache for {batch} × {context:,} tokens; {utilization:.0%} of each GPU usable", soft_wrap=True
    )
    table = Table(title="memory fit per weight format", title_justify="left")
    for column in ("weights", "KV", "W_T", "W_D", "KV/token", "target alone", "with draft", "smallest GPU",
                   "KV headroom there"):  # fmt: skip
        table.add_column(column)
    pushes = []
    for row in rows:
        fp = row.footprint
        fit = row.spec_fit if d is not None else row.baseline_fit
        card, room = _fit_text(fit, context)
        kv_token = fp.target_kv_per_token + fp.draft_kv_per_token
        table.add_row(
            fp.weight_format,
            fp.kv_format,
            fmt_bytes(fp.target_weights),
            fmt_bytes(fp.draft_weights) if d is not None else "—",
            fmt_bytes(kv_token),
            fmt_bytes(fp.baseline_bytes),
            fmt_bytes(fp.spec_bytes) if d is not None else "—",
            card,
            room,
        )
        base, spec = row.baseline_fit, row.spec_fit
        if d is not None and base is not None and (spec is None or spec.gpu != base.gpu):
            pushes.append(f"{fp.weight_format}: the draft pushes you from {_fit_text(base, context)[0]} to "
                          f"{_fit_text(spec, context)[0]}")  # fmt: skip
    console.print(table)
    for line in pushes:
        console.print(f"[yellow]{line}[/] (a price delta for `specmeter roi --spec-price`)", soft_wrap=True)
    if d is not None:
        console.print(
            f"'with draft' = target alone + W_D + the draft's KV cache for {tokens:,} tokens; KV/token "
            "counts both models. Formats and scale overheads: docs/economics.md.",
            soft_wrap=True,
        )
    flows = [traffic(t, d, row.footprint.weight_format, k) for row in rows] if t.is_moe or d else []
    if flows:
        _print_traffic(t, d, flows)
    if json_out is not None:
        data = {
            "target": dataclasses.asdict(t),
            "draft": dataclasses.asdict(d) if d is not None else None,
            "context": context, "batch": batch, "tp": tp, "utilization": utilization,
            "rows": [
                {
                    **dataclasses.asdict(r.footprint),
                    "baseline_bytes": r.footprint.baseline_bytes, "extra_bytes": r.footprint.extra_bytes,
                    "spec_bytes": r.footprint.spec_bytes,
                    "baseline_fit": _fit_dict(r.baseline_fit), "spec_fit": _fit_dict(r.spec_fit),
                }
                for r in rows
            ],
            "traffic": [{**dataclasses.asdict(f), "spec_step": f.spec_step,
                         "break_even_tau": f.break_even_tau} for f in flows],
        }  # fmt: skip
        write_json_atomic(json_out, data)


def _fit_dict(fit: Any) -> dict[str, Any] | None:
    if fit is None:
        return None
    return {
        "gpu": fit.gpu.name,
        "memory_gib": fit.gpu.memory_gib,
        "count": fit.count,
        "usable_bytes": fit.usable_bytes,
        "kv_headroom_bytes": fit.kv_headroom_bytes,
        "kv_headroom_tokens": fit.kv_headroom_tokens,
    }


def _count(n: float) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n:,.0f}"


def _describe(a: Any) -> str:
    """One line of model facts; a MoE model's active parameters beside its total."""
    text = f"{_count(a.params)} params"
    if a.is_moe:
        shared = " + shared" if a.shared_expert_params else ""
        text += (
            f", {_count(a.active_params)} active per token ({a.active_params / a.params:.1%}: "
            f"{a.experts_per_token} of {a.experts} experts{shared} on {a.moe_layers}/{a.layers} MoE layers)"
        )
    if a.vision_params:
        text += f" (vision tower {_count(a.vision_params)})"
    return text + f", {a.layers} layers, {a.attention}"


def _print_traffic(t: Any, d: Any, flows: list[Any]) -> None:
    """Weight bytes per forward per format, and what they mean for a draft (docs/economics.md)."""
    from rich.table import Table

    from specmeter.report.fmt import fmt_bytes

    k = flows[0].k
    table = Table(title=f"weight traffic per forward (k = {k})", title_justify="left")
    for column in ("weights", "target decode step", f"verify {k + 1} tokens", "draft forward",
                   f"spec step (verify + {k} drafts)", "break-even τ"):  # fmt: skip
        table.add_column(column)
    for f in flows:
        table.add_row(
            f.weight_format,
            fmt_bytes(f.target_step),
            fmt_bytes(f.target_verify),
            fmt_bytes(f.draft_forward) if d is not None else "—",
            fmt_bytes(f.spec_step),
            f"{f.break_even_tau:.2f}",
        )
    console.print(table)
    first = next((f for f in flows if f.weight_format == "bf16"), flows[0])
    if t.is_moe:
        from specmeter.economics.families import expected_distinct_experts

        union = expected_distinct_experts(t.experts, t.experts_per_token, k + 1)
        console.print(
            f"MoE target: a decoded token reads the {_count(t.active_params)} active parameters, not all "
            f"{_count(t.params)}; verifying {k + 1} tokens reads the experts all of them picked "
            f"(≈ {union:.1f} of {t.experts} per MoE layer under uniform routing, vs {t.experts_per_token} "
            f"for one token), {first.target_verify / first.target_step:.2f}× a decode step.",
            soft_wrap=True,
        )
        if d is not None:
            console.print(
                f"The draft's forward costs {first.draft_forward / first.target_step:.1%} of a target "
                f"decode step ({first.weight_format}), not the {d.active_params / t.params:.2%} its size "
                "next to the total suggests: judge the draft against the active parameters.",
                soft_wrap=True,
            )
    console.print(
        "Speculation reads fewer weight bytes per emitted token than plain decoding only when the tokens per "
        "step τ (docs/metrics.md) exceed the break-even: (verify + k · draft forward) / decode step.",
        soft_wrap=True,
    )
