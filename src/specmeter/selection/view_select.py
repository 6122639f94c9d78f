"""Console view of a select result: the mix, the ranking with intervals and separation, per-domain α and E
with danger flags, memory per draft, the recommendation. Works from the result dict alone.

A ranking from a result file (``select --from``, ``selection.replay_analysis``: the section has ``basis``)
shows the predicted E at every batch size of the cost surface, or tokens per step alone, and the share of
decode steps at which each method proposed; it has no intervals, no separation and no memory table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from specmeter.report.fmt import DASH, fmt_bytes, fmt_ci, fmt_int, fmt_num, fmt_pct, fmt_speedup, with_ci
from specmeter.report.view import framed_by_hygiene

_DANGER = "bold red"


def _danger(flag: Any) -> Text:
    return (
        Text("DANGER", style=_DANGER)
        if flag is True
        else Text("ok", style="green")
        if flag is False
        else Text(DASH)
    )


@framed_by_hygiene
def render_select(result: Mapping[str, Any], console: Console) -> None:
    """The result (framed by the machine's warning when it was busy: ``report.view.framed_by_hygiene``)."""
    s = result.get("select") or {}
    if result.get("complete") is False:
        console.print(Text("Interrupted: partial results, everything measured so far.", style="bold yellow"))
    source = {"option": "--mix", "result": "the result's own proportions"}.get(
        str(s.get("mix_source")), "the golden set's own proportions"
    )
    domains = s.get("domains") or {}
    console.print(
        Text(f"Traffic mix ({source}): ", style="bold")
        + Text(
            ", ".join(f"{n} {fmt_pct(d['weight'], 0)} ({d['requests']} requests)" for n, d in domains.items())
        )
    )
    if s.get("unweighted_categories"):
        console.print(f"Not in the mix (weight 0): {', '.join(s['unweighted_categories'])}")

    if s.get("basis") is not None:
        _ranking_from_result(s, console)
    else:
        ranking = Table(
            title="ranking by traffic-weighted E_meas",
            title_justify="left",
            title_style="bold",
            box=box.SIMPLE_HEAD,
        )
        for column in ("#", "draft", "k", "E weighted [95% CI]", "α", "danger"):
            ranking.add_column(column)
        for r in s.get("ranking") or []:
            ranking.add_row(
                str(r["rank"]),
                r["draft"],
                str(r["k"]),
                with_ci(fmt_speedup(r["speedup_weighted"]), r["speedup_weighted_ci"]),
                fmt_num(r["acceptance_rate"], 3),
                _danger(r["danger_zone"]),
            )
        console.print(ranking)
    sep = s.get("separation")
    if sep is not None:
        p = sep["probability_first_better"]
        verdict = "separated" if sep["separated"] else "NOT separated (a statistical tie)"
        console.print(
            f"{sep['first']} − {sep['second']}: {sep['difference']:+.2f}× "
            f"{fmt_ci(sep['difference_ci'])} (paired bootstrap); "
            f"{sep['first']} ahead in {fmt_pct(p, 0)} of resamples — {verdict}"
        )

    if s.get("basis") is not None:
        _per_domain_from_result(s, console)
    else:
        per = Table(title="per domain", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
        for column in ("domain", "draft", "k", "α [CI]", "τ", "E_meas [CI]", "danger"):
            per.add_column(column)
        for name, rows in (s.get("by_domain") or {}).items():
            for i, r in enumerate(rows):
                per.add_row(
                    name if i == 0 else "",
                    r["draft"],
                    str(r["k"]),
                    with_ci(fmt_num(r["acceptance_rate"], 3), r["acceptance_rate_ci"]),
                    fmt_num(r["acceptance_length"]),
                    with_ci(fmt_speedup(r["speedup_measured"]), r["speedup_measured_ci"]),
                    _danger(r["danger_zone"]),
                )
        console.print(per)
    if s.get("basis") is None or s.get("memory"):
        _memory(s.get("memory") or {}, console)

    rec = s.get("recommendation") or {}
    single = rec.get("single")
    good = (
        single is not None
        and (single.get("speedup_weighted") is not None or s.get("basis") == "acceptance")
        and (single.get("speedup_weighted") or 1.0) >= 1.0
    )
    console.print(Text("Recommendation", style="bold green" if good else _DANGER))
    for line in rec.get("lines") or []:
        console.print(f"  {line}")


def _memory(memory: Mapping[str, Any], console: Console) -> None:
    mem = Table(title="memory per draft", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    for column in ("draft", "method", "parameters", "weights", "KV/token", "extra memory (longest request)"):
        mem.add_column(column)
    for name, m in memory.items():
        mem.add_row(
            name,
            str(m.get("method") or ""),
            fmt_int(m["params"]),
            fmt_bytes(m["weight_bytes"]),
            fmt_bytes(m["kv_bytes_per_token"]),
            fmt_bytes(m["extra_memory_bytes"]),
        )
    console.print(mem)


def _bound(text: str, row: Mapping[str, Any]) -> str:
    """A figure resting on a position no step reached (taken as 0): a lower bound, shown as ≥."""
    return f"≥{text}" if row.get("lower_bound") and text != DASH else text


def _source_line(s: Mapping[str, Any]) -> Text:
    source = s.get("source") or {}
    costs = s.get("costs")
    text = f"From {source.get('path')} ({source.get('kind')} result): "
    if costs is None:
        text += "acceptance only — no cost surface, so no speedup is ranked (give --costs)"
    else:
        text += f"E predicted from the cost surface {costs.get('source')}, ranked at B={costs.get('batch')}"
    return Text(text, style="bold")


def _ranking_from_result(s: Mapping[str, Any], console: Console) -> None:
    """``select --from``'s ranking: by predicted E at one B (E at every B beside it), or by tokens per
    step alone."""
    console.print(_source_line(s))
    costs = s.get("costs")
    batches = [str(b) for b in (costs or {}).get("batches") or []]
    title = (
        f"ranking by traffic-weighted E predicted at B={costs['batch']}"
        if costs is not None
        else "ranking by traffic-weighted tokens per step (acceptance only, no speedup)"
    )
    table = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    columns = ["#", "draft", "k", *(f"E B={b}" for b in batches), "tokens/step", "α", "drafted on", "danger"]
    for column in columns:
        table.add_column(column)
    for r in s.get("ranking") or []:
        by_batch = r.get("speedup_by_batch") or {}
        table.add_row(
            str(r["rank"]),
            r["draft"],
            str(r["k"]),
            *(_bound(fmt_speedup(by_batch.get(b)), r) for b in batches),
            _bound(fmt_num(r["tokens_per_step_weighted"]), r),
            fmt_num(r["acceptance_rate"], 3),
            fmt_pct(r.get("drafting_share"), 0),
            _danger(r["danger_zone"]),
        )
    console.print(table)


def _per_domain_from_result(s: Mapping[str, Any], console: Console) -> None:
    costs = s.get("costs")
    batches = [str(b) for b in (costs or {}).get("batches") or []]
    per = Table(title="per domain", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    for column in ("domain", "draft", "k", "α [CI]", "τ(k)", "tokens/step", *(f"E B={b}" for b in batches),
                   "drafted on", "danger"):  # fmt: skip
        per.add_column(column)
    for name, rows in (s.get("by_domain") or {}).items():
        for i, r in enumerate(rows):
            by_batch = r.get("speedup_by_batch") or {}
            by_ci = r.get("speedup_by_batch_ci") or {}
            per.add_row(
                name if i == 0 else "",
                r["draft"],
                str(r["k"]),
                with_ci(fmt_num(r["acceptance_rate"], 3), r["acceptance_rate_ci"]),
                _bound(fmt_num(r["acceptance_length_k"]), r),
                _bound(fmt_num(r["tokens_per_step"]), r),
                *(_bound(with_ci(fmt_speedup(by_batch.get(b)), by_ci.get(b)), r) for b in batches),
                fmt_pct(r.get("drafting_share"), 0),
                _danger(r["danger_zone"]),
            )
    console.print(per)
