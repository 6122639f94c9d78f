"""HTML pieces the report's sections share: an escaped table and an estimate with its interval."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specmeter.report.fmt import DASH
from specmeter.report.html_svg import esc

__all__ = ["estimate", "table"]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], danger_col: int | None = None) -> str:
    """A ``<table>`` with every cell escaped; in column ``danger_col`` a cell starting DANGER is marked."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = ' class="danger"' if i == danger_col and cell.startswith("DANGER") else ""
            cells.append(f"<td{cls}>{esc(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def estimate(value: Any, ci: Sequence[float] | None = None, unit: str = "") -> str:
    """``1.23`` (with ``unit``, e.g. ``×``) and its interval ``[1.10, 1.35]`` when there is one."""
    if not isinstance(value, int | float):
        return DASH
    return f"{value:.2f}{unit} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{value:.2f}{unit}"
