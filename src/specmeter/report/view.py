"""Console rendering of a whole result (the JSON structure of docs/results.md) with rich.

The reader is an inference engineer deciding whether a draft pays off, so the layout follows that question:
what was run, what each candidate measured (acceptance, speedups side by side, latency shape, memory),
how it breaks down per category, which runs are in the danger zone and why, and a one-line verdict.
Works from the plain result dict only, so a JSON file read back from disk renders the same as a live run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from specmeter.methods import method_of_entry
from specmeter.metrics.latency import BURST_GAP_S, STALL_FACTOR
from specmeter.metrics.stats import MIN_CI_REQUESTS
from specmeter.metrics.summary import ACCEPTANCE_DANGER, SPEEDUP_DANGER
from specmeter.report.fmt import (
    DASH,
    as_float,
    dig,
    fmt_bytes,
    fmt_ci,
    fmt_dist,
    fmt_int,
    fmt_ms,
    fmt_num,
    fmt_pct,
    fmt_positions,
    fmt_rate,
    fmt_speedup,
    with_ci,
)

__all__ = [
    "danger_note",
    "danger_tags",
    "fmt_bytes",
    "fmt_ci",
    "fmt_dist",
    "fmt_int",
    "fmt_ms",
    "fmt_num",
    "fmt_pct",
    "fmt_positions",
    "fmt_rate",
    "fmt_speedup",
    "framed_by_hygiene",
    "hygiene_line",
    "machine_row",
    "print_hygiene",
    "render_result",
    "render_result_body",
    "stability_lines",
    "verdict",
]

DANGER_STYLE = "bold red"
_MODEL_SPEEDUPS = ("speedup_seed", "speedup_leviathan", "speedup_calibrated")
# docs/metrics.md "stalls": longer than 3× the request's median rhythm gap, the gaps of at least 1 ms.
_STALLS_LABEL = f"stalls (> {STALL_FACTOR:g}× median of gaps ≥ {BURST_GAP_S * 1000:g} ms)"


def _label(candidate: Mapping[str, Any]) -> str:
    return f"{candidate.get('draft', DASH)} @ k={candidate.get('k', DASH)}"


def _reasons(summary: Any) -> str:
    reasons = dig(summary, "danger_reasons")
    if isinstance(reasons, Sequence) and not isinstance(reasons, str) and reasons:
        # Reasons from specmeter.metrics carry no full stop, so they need "; " between them or they run
        # together; a reason that already ends a sentence only needs a space.
        texts = [str(r).strip() for r in reasons]
        joined = texts[0]
        for prev, text in pairwise(texts):
            joined += (" " if prev.endswith((".", "!", "?")) else "; ") + text
        return joined
    return "no reason given"


def _header(result: Mapping[str, Any]) -> RenderableType:
    config = dig(result, "run", "config") or {}
    env = dig(result, "run", "environment") or {}
    ks = config.get("k")
    k_text = ", ".join(str(k) for k in ks) if isinstance(ks, list) else str(ks if ks is not None else DASH)
    requests = dig(result, "baseline", "summary", "requests")
    if requests is None:
        requests = next((dig(c, "summary", "requests") for c in result.get("candidates") or []), None)
    drafts = config.get("drafts")
    rows: list[tuple[str, str]] = [
        ("target", str(config.get("target", DASH))),
        ("drafts", ", ".join(map(str, drafts)) if isinstance(drafts, list) else DASH),
        ("prompts", str(config.get("prompts", DASH))),
        ("k", k_text),
        ("temperature", f"{fmt_num(config.get('temperature'))} (top_p {fmt_num(config.get('top_p'))})"),
        ("max tokens", fmt_int(config.get("max_tokens"))),
        ("requests", fmt_int(requests)),
        ("started", str(dig(result, "run", "started_at") or DASH)),
        *([("machine", m)] if (m := machine_row(result)) else []),
        (
            "environment",
            " · ".join(f"{k} {env[k]}" for k in ("specmeter", "torch", "device", "threads") if k in env)
            or DASH,
        ),
    ]
    vllm = result.get("vllm")
    if isinstance(vllm, Mapping):
        settings = vllm.get("settings") or {}
        rows.append(
            (
                "backend",
                f"vLLM {vllm.get('version', DASH)} · {settings.get('method', DASH)} · "
                f"tp {settings.get('tensor_parallel_size', DASH)} · dtype {settings.get('dtype', DASH)} · "
                "one engine per run, runs one after another",
            )
        )
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    for key, value in rows:
        grid.add_row(key, Text(value))
    parts: list[RenderableType] = [grid]
    if result.get("complete") is False:
        parts.append(Text("Interrupted: partial results, everything measured so far.", style="bold yellow"))
    return Panel(Group(*parts), title=f"specmeter {result.get('kind', '')}".strip(), expand=False)


def _summary_rows(s: Any, base: Any) -> list[tuple[str, str, str]]:
    """(metric, candidate, baseline) rows; the baseline column only where the baseline has the figure."""
    accepted, drafted = dig(s, "accepted_tokens"), dig(s, "drafted_tokens")
    rejections = as_float(dig(s, "rejections"))
    beta_den = None if rejections is None or as_float(accepted) is None else accepted + rejections
    curve = dig(s, "cost_curve")
    target_ms = dig(curve, "target_ms")
    t1 = target_ms[0] if isinstance(target_ms, list) and target_ms else None
    cost = fmt_num(dig(s, "cost_ratio"), 3)
    if cost != DASH and (t1 is not None or dig(curve, "draft_ms") is not None):
        cost += f" (t_D(1) {fmt_ms(dig(curve, 'draft_ms'))} / t_T(1) {fmt_ms(t1)})"
    tau = fmt_num(dig(s, "acceptance_length"))
    if tau != DASH and dig(s, "steps") is not None:
        tau += f" ({fmt_int(dig(s, 'steps'))} steps)"
    models = " / ".join(fmt_speedup(dig(s, key)) for key in _MODEL_SPEEDUPS)
    base_traffic = dig(s, "baseline_weight_traffic_per_token")
    if base_traffic is None:
        base_traffic = dig(base, "weight_traffic_per_token")
    traffic = fmt_bytes(dig(s, "weight_traffic_per_token"))
    ratio = _ratio(dig(s, "weight_traffic_per_token"), base_traffic)
    if ratio is not None:
        traffic += f" ({ratio - 1:+.0%} vs baseline)"
    efficiency = fmt_bytes(dig(s, "bandwidth_efficiency"))
    if efficiency != DASH:
        efficiency += "/token per extra GiB"

    alpha = with_ci(fmt_rate(dig(s, "acceptance_rate"), accepted, drafted), dig(s, "acceptance_rate_ci"))
    beta = with_ci(fmt_rate(dig(s, "beta"), accepted, beta_den), dig(s, "beta_ci"))
    e2e = with_ci(fmt_speedup(dig(s, "speedup_measured")), dig(s, "speedup_measured_ci"))
    decode = with_ci(fmt_speedup(dig(s, "speedup_measured_decode")), dig(s, "speedup_measured_decode_ci"))
    weights = f"{fmt_bytes(dig(s, 'weight_bytes', 'target'))} / {fmt_bytes(dig(s, 'weight_bytes', 'draft'))}"

    # The baseline is the reference of E_meas, so 1.00× by definition, when there is one.
    reference = "1.00×" if isinstance(base, Mapping) else DASH

    def both(key: str, fmt: Callable[[Any], str] = fmt_dist) -> tuple[str, str]:
        return fmt(dig(s, key)), fmt(dig(base, key))

    def per_second(value: Any) -> str:
        return fmt_num(value, 1)

    rows: list[tuple[str, str, str]] = [
        ("acceptance α", alpha, DASH),
        ("β per-token (MLE)", beta, DASH),
        ("τ tokens/step", with_ci(tau, dig(s, "acceptance_length_ci")), DASH),
        ("per position cum/cond", fmt_positions(dig(s, "per_position")), DASH),
        ("cost ratio c", cost, DASH),
        ("E_meas end-to-end", e2e, reference),
        ("E_meas decode-only", decode, reference),
        ("E_seed / E_lev / E_cal", models, DASH),
        ("latency p50 / p99", *both("latency_ms")),
        ("TTFT p50 / p99", *both("ttft_ms")),
        ("TPOT p50 / p99", *both("tpot_ms")),
        ("gap/chunk p50 / p99", *both("gap_ms")),
        ("gap/token p50 / p99", *both("gap_per_token_ms")),
        ("jitter (gap p99/p50)", _jitter(s), _jitter(base)),
        (_STALLS_LABEL, _stalls(s), _stalls(base)),
        ("tokens/s end-to-end", *both("tokens_per_s", per_second)),
        ("tokens/s decode", *both("decode_tokens_per_s", per_second)),
        ("weights W_T / W_D", weights, fmt_bytes(dig(base, "weight_bytes", "target"))),
        ("extra memory", fmt_bytes(dig(s, "extra_memory_bytes")), DASH),
        ("weight traffic/token", traffic, fmt_bytes(base_traffic)),
        ("bandwidth efficiency", efficiency, DASH),
        ("weight bandwidth (of copy)", bandwidth(s), bandwidth(base)),
    ]
    return rows


def bandwidth(s: Any) -> str:
    """Achieved weight bandwidth and its share of the measured copy bandwidth: ``1.20 GiB/s (34% of 3.50
    GiB/s copy)``; a dash where nothing was measured."""
    achieved = fmt_bytes(dig(s, "achieved_bytes_per_s"))
    if achieved == DASH:
        return DASH
    copy = fmt_bytes(dig(s, "copy_bytes_per_s"))
    fraction = fmt_pct(dig(s, "bandwidth_fraction"), 0)
    return f"{achieved}/s" + ("" if copy == DASH else f" ({fraction} of {copy}/s copy)")


def _ratio(num: Any, den: Any) -> float | None:
    n, d = as_float(num), as_float(den)
    return None if n is None or d is None or d == 0 else n / d


def _jitter(s: Any) -> str:
    text = fmt_num(dig(s, "jitter"))
    ratio = as_float(dig(s, "gap_p99_over_p50"))
    return text if text == DASH or ratio is None else f"{text} ({ratio:.1f}×)"


def _stalls(s: Any) -> str:
    text = fmt_int(dig(s, "stalls"))
    rate = dig(s, "stall_rate")
    return text if text == DASH or as_float(rate) is None else f"{text} ({fmt_pct(rate)})"


def _danger_cell(summary: Any) -> Text:
    flag = dig(summary, "danger_zone")
    if flag is True:
        return Text("DANGER", style=DANGER_STYLE)
    return Text("ok", style="green") if flag is False else Text(DASH)


def method_text(candidate: Mapping[str, Any]) -> str:
    """The candidate's method (docs/methods.md) and what kind it is: ``ngram:min=2,max=4 (model-free)``."""
    name = method_of_entry(dict(candidate))
    if not name:
        return DASH
    method = candidate.get("method")
    kinds = []
    if isinstance(method, Mapping):
        if method.get("model_free") is True:
            kinds.append("model-free")
        if method.get("deterministic") is True:
            kinds.append("deterministic")
    return name + (f" ({', '.join(kinds)})" if kinds else "")


def _candidate_table(candidate: Mapping[str, Any], baseline: Any) -> Table:
    summary = candidate.get("summary")
    table = Table(title=_label(candidate), title_justify="left", title_style="bold")
    table.add_column("metric", style="bold")
    table.add_column("candidate")
    table.add_column("baseline", style="dim")
    table.add_row("method", Text(method_text(candidate)), Text(DASH))
    for metric, value, base in _summary_rows(summary, baseline):
        table.add_row(metric, Text(value), Text(base))
    table.add_row("danger zone", _danger_cell(summary), Text(DASH))
    return table


def _category_table(candidates: Sequence[Mapping[str, Any]]) -> Table:
    """One row per category × candidate; the danger notes are printed once per candidate elsewhere."""
    table = Table(title="by category", title_justify="left", title_style="bold")
    for column in ("category", "candidate", "α (count) [CI]", "τ", "E_meas [CI]", "jitter", "danger"):
        table.add_column(column)
    categories = sorted({str(c) for cand in candidates for c in (cand.get("by_category") or {})})
    for category in categories:
        for cand in candidates:
            s = dig(cand, "by_category", category)
            if s is None:
                continue
            alpha = fmt_rate(dig(s, "acceptance_rate"), dig(s, "accepted_tokens"), dig(s, "drafted_tokens"))
            table.add_row(
                Text(category),
                Text(_label(cand)),
                Text(with_ci(alpha, dig(s, "acceptance_rate_ci"))),
                Text(fmt_num(dig(s, "acceptance_length"))),
                Text(with_ci(fmt_speedup(dig(s, "speedup_measured")), dig(s, "speedup_measured_ci"))),
                Text(fmt_num(dig(s, "jitter"))),
                _danger_cell(s),
            )
    return table


def danger_tags(summary: Any) -> list[str]:
    """The figures that put a summary in the danger zone, short: ``["α 0.21", "E_meas 0.84×"]``."""
    tags = []
    alpha, e_meas = as_float(dig(summary, "acceptance_rate")), as_float(dig(summary, "speedup_measured"))
    if alpha is not None and alpha < ACCEPTANCE_DANGER:
        tags.append(f"α {fmt_num(alpha)}")
    if e_meas is not None and e_meas < SPEEDUP_DANGER:
        tags.append(f"E_meas {fmt_speedup(e_meas)}")
    if not tags and dig(summary, "danger_zone") is True:
        tags.append(_reasons(summary))  # a reason without a figure we know how to shorten
    return tags


def danger_note(candidate: Mapping[str, Any], *, label: bool = True) -> str | None:
    """One sentence per candidate: its own danger reasons in full, then its categories in the danger zone
    listed compactly with the figures that put them there (docs/metrics.md, "Danger zone"). None when
    neither the candidate nor any of its categories is in the danger zone. ``label=False`` leaves out the
    "⚠ DANGER ZONE — <candidate>" head, for a table row that already names the candidate."""
    summary = candidate.get("summary")
    by_category = candidate.get("by_category") or {}
    risky = [(str(c), s) for c, s in sorted(by_category.items()) if dig(s, "danger_zone") is True]
    overall = dig(summary, "danger_zone") is True
    if not overall and not risky:
        return None
    parts = []
    if overall:
        reasons = _reasons(summary)
        parts.append(reasons if reasons.endswith((".", "!", "?")) else reasons + ".")
    if risky:
        listed = ", ".join(f"{c} ({'; '.join(danger_tags(s))})" for c, s in risky)
        parts.append(
            f"{'In' if overall or not label else 'in'} {len(risky)} of {len(by_category)} categories "
            f"(α < {ACCEPTANCE_DANGER:.2f} or E_meas < {SPEEDUP_DANGER:.2f}×): {listed}."
        )
    body = " ".join(parts)
    if not label:
        return body
    head = f"⚠ DANGER ZONE — {_label(candidate)}"
    return f"{head}: {body}" if overall else f"{head} {body}"


def _danger_note(candidate: Mapping[str, Any]) -> Text | None:
    note = danger_note(candidate)
    return None if note is None else Text(note, style=DANGER_STYLE)


def verdict(result: Mapping[str, Any]) -> Text:
    """The closing line: the best candidate by measured speedup, or plainly that none pays off."""
    measured = [
        (x, c)
        for c in result.get("candidates") or []
        if (x := as_float(dig(c, "summary", "speedup_measured"))) is not None
    ]
    if not measured:
        return Text(
            "Verdict: no measured speedup (no baseline or no candidate finished).", style="bold yellow"
        )
    best_x, best = max(measured, key=lambda pair: pair[0])
    if best_x < 1.0:
        return Text(
            f"Verdict: no candidate pays off — the best, {_label(best)}, is at E_meas {fmt_speedup(best_x)}; "
            "speculative decoding is slower than the baseline here.",
            style=DANGER_STYLE,
        )
    s = best.get("summary")
    e_meas = with_ci(fmt_speedup(best_x), dig(s, "speedup_measured_ci"))
    line = Text(
        f"Verdict: best candidate {_label(best)} — E_meas {e_meas}, "
        f"α {fmt_num(dig(s, 'acceptance_rate'), 3)}.",
        style="bold green",
    )
    # A good overall figure can hide a domain where the draft fails (the seed's legal-text lesson).
    risky = sorted(
        str(cat) for cat, cs in (best.get("by_category") or {}).items() if dig(cs, "danger_zone") is True
    )
    if dig(s, "danger_zone") is True:
        line.append(f" But it is in the danger zone: {_reasons(s)}", style=DANGER_STYLE)
    elif risky:
        line.append(f" But it is in the danger zone on: {', '.join(risky)}.", style=DANGER_STYLE)
    return line


def machine_row(result: Mapping[str, Any]) -> str | None:
    """The header's one-line account of the machine during the run (``hygiene`` section), if sampled."""
    h = result.get("hygiene")
    if not isinstance(h, Mapping):
        return None
    f = h.get("figures") or {}
    parts = [str(h.get("verdict", DASH))]
    other = as_float(f.get("other_cores"))
    if other is not None:
        parts.append(f"other processes {other:.2f} of {fmt_int(f.get('cores'))} cores")
    steal = as_float(f.get("steal_share"))
    if steal is not None and steal >= 0.005:
        parts.append(f"steal {fmt_pct(steal)}")
    cost = as_float(dig(f, "sampler", "share_of_core"))
    if cost is not None:
        parts.append(f"sampler {fmt_pct(cost, 2)} of a core")
    return " · ".join(parts)


def hygiene_line(result: Mapping[str, Any]) -> Text | None:
    """The prominent line of a busy or unusable run (printed above and below the result), else None."""
    h = result.get("hygiene")
    if not isinstance(h, Mapping) or not h.get("message"):
        return None
    message = h["message"]
    return Text(f"⚠ {message}", style=DANGER_STYLE if h.get("verdict") == "unusable" else "bold yellow")


def stability_lines(result: Mapping[str, Any]) -> list[Text]:
    """One line per candidate whose timings drifted during the run (the data's own instability test)."""
    h = result.get("hygiene")
    notes = h.get("unstable") if isinstance(h, Mapping) else None
    return [Text(f"⚠ {n}", style="bold yellow") for n in notes or []]


def print_hygiene(result: Mapping[str, Any], console: Console, *, where: str) -> None:
    """``where="top"``: the busy line; ``"bottom"``: drift notes, then the busy line again. Every renderer of
    a measuring command calls both, so the warning frames the result whatever its layout."""
    line = hygiene_line(result)
    if where == "bottom":
        for note in stability_lines(result):
            console.print(note, soft_wrap=True)
    if line is not None:
        console.print(line, soft_wrap=True)


Renderer = Callable[[Mapping[str, Any], Console], None]


def framed_by_hygiene(render: Renderer) -> Renderer:
    """``render`` between the two halves of ``print_hygiene``: how every measuring command's view starts and
    ends, so the machine's warning frames the result whatever its layout."""

    @functools.wraps(render)
    def framed(result: Mapping[str, Any], console: Console) -> None:
        print_hygiene(result, console, where="top")
        render(result, console)
        print_hygiene(result, console, where="bottom")

    return framed


def render_result_body(result: Mapping[str, Any], console: Console) -> None:
    """``render_result`` without the machine's frame, for a view that prints more inside it (``bench
    --batch``'s batch table): frame the whole view with ``framed_by_hygiene`` instead."""
    console.print(_header(result))
    baseline = dig(result, "baseline", "summary")
    candidates = [c for c in result.get("candidates") or [] if isinstance(c, Mapping)]
    if not candidates:
        console.print(Text("No candidate measured.", style="bold yellow"))
    for cand in candidates:
        console.print(_candidate_table(cand, baseline))
    if any(cand.get("by_category") for cand in candidates):
        console.print(_category_table(candidates))
    # One danger sentence per candidate, its categories listed compactly (not one sentence per category).
    for cand in candidates:
        note = _danger_note(cand)
        if note is not None:
            console.print(note)
    requests = as_float(dig(candidates[0], "summary", "requests")) if candidates else None
    if requests is not None and requests < MIN_CI_REQUESTS:
        console.print(
            Text(
                f"No 95% intervals: {fmt_int(requests)} requests, fewer than the {MIN_CI_REQUESTS} an "
                "interval needs (docs/metrics.md, Statistics).",
                style="yellow",
            )
        )
    for line in vllm_check_lines(result):
        console.print(line)
    console.print(verdict(result))


@framed_by_hygiene
def render_result(result: Mapping[str, Any], console: Console) -> None:
    """Print a whole result: header, one table per candidate, the per-category table, the verdict."""
    render_result_body(result, console)


def vllm_check_lines(result: Mapping[str, Any]) -> list[Text]:
    """One line per vLLM run: its own counters against the totals of specmeter's records."""
    runs = dig(result, "vllm", "runs")
    if not isinstance(runs, Mapping):
        return []
    lines = []
    for label, run in runs.items():
        counters = run.get("vllm_counters") or {}
        ok = run.get("counts_match") and run.get("tokens_match")
        text = (
            f"vLLM's counters for {label}: {fmt_int(counters.get('num_drafts'))} drafts, "
            f"{fmt_int(counters.get('num_draft_tokens'))} drafted, "
            f"{fmt_int(counters.get('num_accepted_tokens'))} accepted, "
            f"{fmt_int(counters.get('generation_tokens'))} generated — "
        )
        if ok:
            lines.append(Text(text + "equal to specmeter's records", style="green"))
        else:
            lines.append(
                Text(text + "DIFFERENT from specmeter's records (see the vllm section)", style="bold red")
            )
    return lines
