"""The console view of ``specmeter plan`` (``economics.plan``): the models' facts, the memory fit per weight
format and, for a draft or a mixture-of-experts target, the weight traffic per forward (docs/economics.md).

It lives in ``report`` beside the formatters it uses (``report.fmt``), which ``economics`` sits below."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from specmeter.economics.modelcfg import ArchFacts
from specmeter.economics.plan import PlanRow
from specmeter.report.fmt import fmt_bytes

__all__ = ["render_plan"]


def render_plan(
    t: ArchFacts, d: ArchFacts | None, rows: Sequence[PlanRow], flows: Sequence[Any], *, context: int,
    batch: int, utilization: float, console: Console,
) -> None:  # fmt: skip
    """The plan of target ``t`` (with draft ``d``): ``rows`` per weight format, ``flows`` the weight
    traffic per forward (empty when there is nothing to say)."""
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
    if flows:
        _print_traffic(t, d, flows, console)


def _fit_text(fit: Any, context: int) -> tuple[str, str]:
    """(card, KV headroom) cells of one fit, or 'none fits'."""
    if fit is None:
        return "none fits", "—"
    card = f"{fit.count}× {fit.gpu.name}" if fit.count > 1 else fit.gpu.name
    card += f" ({fit.gpu.memory_gib:g} GB)"
    seqs = fit.kv_headroom_tokens // context
    room = f"{fit.kv_headroom_tokens:,} tokens = {seqs:,} × {context:,} ({fmt_bytes(fit.kv_headroom_bytes)})"
    return card, room


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


def _print_traffic(t: Any, d: Any, flows: Sequence[Any], console: Console) -> None:
    """Weight bytes per forward per format, and what they mean for a draft (docs/economics.md)."""
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
