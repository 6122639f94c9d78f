"""The console view of a replay result: what the log held, one row per method × k, the same per category.

The rows carry ``bench``'s acceptance cells (α with its count and interval, τ with its interval, the
per-position cumulative / conditional rates, steps) and the by-category table ``bench`` and
``monitor --requests`` print. Computes nothing; reads the result dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from specmeter.report.fmt import DASH, dig, fmt_int, fmt_num, fmt_positions, fmt_rate, fmt_speedup, with_ci

__all__ = ["render_replay"]


def _alpha(s: Any) -> str:
    rate = fmt_rate(dig(s, "acceptance_rate"), dig(s, "accepted_tokens"), dig(s, "drafted_tokens"))
    return with_ci(rate, dig(s, "acceptance_rate_ci"))


def _tau(s: Any) -> str:
    return with_ci(fmt_num(dig(s, "acceptance_length")), dig(s, "acceptance_length_ci"))


def _header(result: Mapping[str, Any]) -> Panel:
    config = dig(result, "run", "config") or {}
    log = dig(result, "replay", "log") or {}
    aside = log.get("set_aside") or {}
    temps = log.get("temperature") or {}
    rows = [
        ("log", ", ".join(map(str, config.get("from") or [])) or DASH),
        ("target", f"{config.get('target', DASH)} (model {config.get('model', DASH)})"),
        ("methods", ", ".join(map(str, config.get("drafts") or [])) or DASH),
        ("k", ", ".join(map(str, config.get("k") or [])) or DASH),
        (
            "requests",
            f"{fmt_int(log.get('measured'))} replayed of {fmt_int(log.get('records'))} logged"
            f" · {fmt_int(log.get('warm'))} warm-up · {fmt_int(log.get('bad_lines'))} bad lines"
            f" · {fmt_int(sum(aside.values()))} set aside"
            + (f" ({', '.join(f'{k} {v}' for k, v in sorted(aside.items()))})" if aside else ""),
        ),
        (
            "sampling",
            f"{fmt_int(temps.get('greedy'))} greedy · {fmt_int(temps.get('sampled'))} sampled"
            f" · {fmt_int(temps.get('unknown'))} unknown temperature",
        ),
    ]
    if config.get("shard"):
        rows.append(("shard", f"{config['shard']}: every request of this shard, the others feed the caches"))
    if config.get("merged"):
        rows.append(("merged", f"{config['merged']} shards"))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    for key, value in rows:
        grid.add_row(key, Text(value))
    return Panel(grid, title="specmeter replay", expand=False)


def _runs_table(result: Mapping[str, Any]) -> Table:
    table = Table(title="acceptance on the logged responses", title_justify="left", title_style="bold")
    for column in ("method", "k", "α (count) [CI]", "τ [CI]", "per position cum/cond", "steps", "requests"):
        table.add_column(column)
    for c in result.get("candidates") or []:
        s = c.get("summary")
        table.add_row(
            Text(str(c.get("draft"))), Text(str(c.get("k"))), Text(_alpha(s)), Text(_tau(s)),
            Text(fmt_positions(dig(s, "per_position"))), Text(fmt_int(dig(s, "steps"))),
            Text(fmt_int(dig(s, "requests"))),
        )  # fmt: skip
    return table


def _category_table(result: Mapping[str, Any]) -> Table | None:
    candidates = [c for c in result.get("candidates") or [] if c.get("by_category")]
    categories = sorted({str(cat) for c in candidates for cat in c["by_category"]})
    if len(categories) < 2:
        return None
    table = Table(title="by category", title_justify="left", title_style="bold")
    for column in ("category", "candidate", "α (count) [CI]", "τ [CI]", "requests"):
        table.add_column(column)
    for category in categories:
        for c in candidates:
            s = c["by_category"].get(category)
            if s is None:
                continue
            table.add_row(
                Text(category), Text(f"{c.get('draft')} @ k={c.get('k')}"), Text(_alpha(s)), Text(_tau(s)),
                Text(fmt_int(dig(s, "requests"))),
            )  # fmt: skip
    return table


_BASIS = {
    "measured": "its own cost",
    "lookup": "lookup time",
    "what-if": "what-if cells",
    "sweep": "the sweep",
}


def _priced_with(row: Mapping[str, Any]) -> str:
    if row.get("borrowed_from"):
        return f"borrowed: {row['borrowed_from']}'s cost (estimate)"
    return _BASIS.get(str(row.get("cost_basis")), str(row.get("cost_basis") or DASH))


def _costs_table(costs: Mapping[str, Any]) -> Table:
    batches = [str(b) for b in costs.get("batches") or []]
    table = Table(
        title=f"predicted speedup E(B) from {costs.get('source', DASH)}",
        title_justify="left",
        title_style="bold",
    )
    table.add_column("method @ k")
    for b in batches:
        table.add_column(f"B={b}")
    table.add_column("priced with")
    for row in costs.get("rows") or []:
        refused = row.get("refused") or {}
        cells = [
            Text("refused", style="yellow")
            if b in refused
            else Text(fmt_speedup((row.get("e") or {}).get(b)))
            for b in batches
        ]
        table.add_row(Text(f"{row.get('draft')} @ k={row.get('k')}"), *cells, Text(_priced_with(row)))
    return table


def cost_notes(costs: Mapping[str, Any]) -> list[str]:
    """The notes of a priced section (trust, borrowed costs) and each distinct refusal with its rows."""
    lines = [str(n) for n in costs.get("notes") or []]
    if costs.get("note") and str(costs["note"]) not in lines:
        lines.append(str(costs["note"]))
    reasons: dict[str, list[str]] = {}
    for row in costs.get("rows") or []:
        for b, why in (row.get("refused") or {}).items():
            reasons.setdefault(str(why), []).append(f"{row.get('draft')}@k={row.get('k')} B={b}")
    for why, where in reasons.items():
        shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
        lines.append(f"refused ({shown}): {why}")
    return lines


def _engine_table(log: Mapping[str, Any]) -> Table | None:
    """The engine's own per-request speculative figures beside replay's (SGLang's ``spec_*`` fields)."""
    listed = log.get("engine_listed") or []
    if not listed:
        return None
    labels = list((listed[0].get("replayed") or {}).keys())
    shown = len(listed)
    table = Table(
        title=f"The engine's own figures beside replay's, per request ({shown} of "
        f"{fmt_int(log.get('engine_figures'))})",
        title_justify="left",
    )
    table.add_column("request")
    table.add_column("engine (logged)")
    for label in labels:
        table.add_column(f"{label}: accepted/drafted, τ", justify="right")
    for item in listed:
        engine = ", ".join(
            f"{k.removeprefix('spec_')} {fmt_num(v) if isinstance(v, float) else v}"
            for k, v in (item.get("engine") or {}).items()
            if isinstance(v, (int, float))
        )
        cells = []
        for label in labels:
            r = (item.get("replayed") or {}).get(label) or {}
            steps = r.get("steps") or 0
            tau = fmt_num((r.get("accepted", 0) + steps) / steps) if steps else DASH
            cells.append(f"{fmt_int(r.get('accepted'))}/{fmt_int(r.get('drafted'))}, {tau}")
        table.add_row(Text(str(item.get("id"))), Text(engine or DASH), *cells)
    return table


def render_replay(result: Mapping[str, Any], console: Console) -> None:
    """Print a replay result (``specmeter replay``, and ``--merge``)."""
    console.print(_header(result))
    console.print(_runs_table(result))
    by_category = _category_table(result)
    if by_category is not None:
        console.print(by_category)
    section = result.get("replay") or {}
    log = section.get("log") or {}
    for line in log.get("problems") or []:
        console.print(Text(f"{line}: skipped", style="yellow"), soft_wrap=True)
    for item in log.get("set_aside_listed") or []:
        console.print(
            Text(
                f"{item.get('source')}: set aside ({item.get('flag')}): {item.get('reason')}", style="yellow"
            ),
            soft_wrap=True,
        )
    missing, field = log.get("category_missing"), (dig(result, "run", "config") or {}).get("category_field")
    if missing:
        console.print(
            Text(
                f"warning: --category-field {field} matched no value in {fmt_int(missing)} of "
                f"{fmt_int(log.get('records'))} requests (counted as uncategorised)",
                style="yellow",
            ),
            soft_wrap=True,
        )
    if log.get("retokenized"):
        console.print(
            Text(
                f"{fmt_int(log['retokenized'])} responses were logged as text only: re-tokenized with the "
                "target's tokenizer (prompts rendered with its chat template), and checked to decode back.",
                style="dim",
            ),
            soft_wrap=True,
        )
    engine = _engine_table(log)
    if engine is not None:
        console.print(engine)
    if log.get("not_canonical"):
        console.print(
            Text(
                f"{fmt_int(log['not_canonical'])} responses are not the tokenizer's own encoding of their "
                "text: replayed on the logged ids (a text-only log would shift them).",
                style="yellow",
            ),
            soft_wrap=True,
        )
    past = {k: v for k, v in (section.get("past_end") or {}).items() if v}
    if past:
        listed = ", ".join(f"{k} {v}" for k, v in past.items())
        console.print(
            Text(
                f"Drafts that matched through the response's end ({listed} steps): acceptance there is a "
                "lower bound (docs/replay.md).",
                style="yellow",
            ),
            soft_wrap=True,
        )
    if section.get("exact"):
        note = (
            "Every replayed request was greedy: these are the live figures exactly (deterministic methods)."
        )
    else:
        note = (
            "Sampled (or unknown-temperature) requests: replayed α estimates the live α in distribution "
            "(docs/metrics.md, Replay)."
        )
    console.print(Text(note))
    costs = section.get("costs")
    if isinstance(costs, Mapping) and costs.get("rows"):
        console.print(_costs_table(costs))
        for line in cost_notes(costs):
            console.print(Text(line, style="yellow"), soft_wrap=True)
    else:
        console.print(
            Text(
                "Acceptance only: no speedup without a cost surface (--costs with a tune --batch, sweep or "
                "whatif result).",
                style="bold",
            )
        )
