"""The console view of ``specmeter drift`` (``monitoring.drift``): the two windows, then one sentence per
domain and metric, a drop in red and a rise in green."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from specmeter.monitoring.drift import DriftRow

__all__ = ["render_drift", "sentence", "when"]


def render_drift(
    rows: Sequence[DriftRow], *, start: float | None, end: float | None, current: int, reference_name: str,
    reference: int, only: Sequence[str], console: Console,
) -> None:  # fmt: skip
    """The current window (``start`` → ``end``, ``current`` requests), the reference, each row's sentence,
    and the domains ``only`` one window has."""
    since_text = f"since {when(start)}" if start is not None else f"vs {reference_name}"
    console.print(f"current:   {when(start)} → {when(end)} ({current:,} requests)", markup=False)
    console.print(f"reference: {reference_name} ({reference:,} requests)", markup=False)
    for row in rows:
        style = "bold red" if row.direction == "drop" else "green" if row.direction == "rise" else ""
        text = sentence(row, since_text)
        console.print(
            f"[{style}]{text}[/]" if style else text, markup=bool(style), highlight=False, soft_wrap=True
        )
    if only:
        console.print(f"only in one window (not compared): {', '.join(only)}", markup=False, soft_wrap=True)


def when(t: float | None) -> str:
    from datetime import datetime, timezone

    if t is None:
        return "?"
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%d %H:%M")


def _p(p: float | None) -> str:
    if p is None:
        return "—"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def sentence(row: DriftRow, since: str) -> str:
    """``legal α 0.80 → 0.62 since 2026-11-30 12:00, significant (p < 0.001)``."""
    name = {"alpha": "α", "tau": "τ"}[row.metric]
    if row.before is None or row.after is None:
        return f"{row.key} {name}: no drafts on one side"
    figures = f"{row.key} {name} {row.before:.2f} → {row.after:.2f} {since}"
    counts = f"{row.requests_before} → {row.requests_after} requests"
    if row.note is not None:
        return f"{figures}, {row.note} ({counts})"
    verdict = f"significant {row.direction}" if row.significant else "no significant change"
    return f"{figures}, {verdict} ({_p(row.p_adjusted)}, request-level, Holm-adjusted; {counts})"
