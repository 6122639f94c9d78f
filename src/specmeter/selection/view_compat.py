"""Console view of a compat report: the two models side by side, every finding, the verdict."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from specmeter.report.fmt import DASH, fmt_bytes, fmt_int
from specmeter.selection.compat import CompatReport

_STYLE = {"ok": "green", "info": "dim", "caveat": "yellow", "incompatible": "bold red"}
_VERDICT = {
    "compatible": ("COMPATIBLE", "bold green"),
    "usable_with_caveats": ("USABLE WITH CAVEATS", "bold yellow"),
    "incompatible": ("INCOMPATIBLE", "bold red"),
}


def _facts_table(data: dict[str, Any]) -> Table:
    t, d = data["target"], data["draft"]
    table = Table(title="models", title_justify="left", title_style="bold")
    for column in ("", "target", "draft"):
        table.add_column(column, style="bold" if not column else None)

    def row(label: str, key: str, fmt: Any = str) -> None:
        cells = [DASH if m[key] is None else fmt(m[key]) for m in (t, d)]
        table.add_row(label, *cells)

    row("path", "path")
    row("architecture", "architecture")
    row("parameters", "params", fmt_int)
    row("dtype", "dtype")
    row("weights", "weight_bytes", fmt_bytes)
    row("KV bytes/token", "kv_bytes_per_token", fmt_bytes)
    row("layers", "num_layers")
    row("max positions", "max_positions", fmt_int)
    row("vocabulary (tokenizer)", "vocab_size", fmt_int)
    row("embedding rows", "embedding_rows", fmt_int)
    row("tokenizer file", "tokenizer")
    return table


def render_compat(report: CompatReport, console: Console) -> None:
    data = report.to_dict()
    console.print(_facts_table(data))
    table = Table(title="checks", title_justify="left", title_style="bold")
    table.add_column("level")
    table.add_column("check", style="bold")
    table.add_column("finding")
    for f in report.findings:
        table.add_row(Text(f.level, style=_STYLE[f.level]), f.topic, Text(f.message))
    console.print(table)
    label, style = _VERDICT[report.verdict]
    reasons = [f.message for f in report.findings if f.level in ("caveat", "incompatible")]
    line = Text(f"Verdict: {label} (exit {report.exit_code})", style=style)
    if reasons:
        line.append(f" — {len(reasons)} reason(s) above.", style=style)
    console.print(line)
