"""The monitor's terminal view: one row per target with the last window's figures and active alerts.

``render`` builds a rich table from the trackers (used by the live view and by tests); ``window_line`` is the
plain one-line form printed per window when the output is not a terminal (logs, CI). "run/wait" is the
server's queue (requests running / waiting) at the window's end.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.table import Table
from rich.text import Text

from specmeter.monitoring.adapters import QUEUE_RUNNING, QUEUE_WAITING
from specmeter.monitoring.alerts import AlertRules
from specmeter.monitoring.windows import Window, WindowTracker, iso

__all__ = ["render", "window_line"]

DASH = "—"


def _num(value: float | None, digits: int = 3) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


def _positions(w: Window) -> str:
    """Cumulative rate per position; "per draft" (counters ÷ drafts, docs/metrics.md) unless the counters
    show every draft had k tokens, when it is P_i itself."""
    a = w.acceptance
    rows = a.per_position if a is not None else None
    if not rows:
        return DASH
    text = " ".join(DASH if r["cumulative"] is None else f"{r['cumulative']:.2f}" for r in rows)
    return text + (" (per draft)" if a is not None and a.per_position_definition == "per_draft" else "")


def _alpha(w: Window) -> str:
    """α, marked ≈ where D was estimated (TGI: no drafted-token counter)."""
    a = w.acceptance
    approx = a is not None and "acceptance_rate" in a.estimated
    return ("≈" if approx and w.alpha is not None else "") + _num(w.alpha)


def _queue(w: Window) -> str:
    """``running/waiting`` as the server's gauges said at the window's end (—: not exported)."""
    q = w.queue or {}
    running, waiting = q.get(QUEUE_RUNNING), q.get(QUEUE_WAITING)
    if running is None and waiting is None:
        return DASH
    return f"{DASH if running is None else f'{running:g}'}/{DASH if waiting is None else f'{waiting:g}'}"


def window_line(w: Window) -> str:
    if w.error is not None:
        return f"[{iso(w.t_end)}] {w.target}: scrape failed: {w.error}"
    a = w.acceptance
    parts = [
        f"[{iso(w.t_end)}] {w.target} ({w.kind})",
        f"α {_alpha(w)}",
        f"τ {_num(w.tau)}",
        f"per-position {_positions(w)}",
        f"drafts {DASH if w.drafts is None else w.drafts}",
        f"tokens/s {_num(None if a is None else a.tokens_per_s, 1)}",
    ]
    if w.queue:
        parts.append(f"running/waiting {_queue(w)}")
    if a is not None and a.resets:
        parts.append("counter reset (engine restart) handled")
    if a is not None and a.source == "none":
        parts.append("no speculative-decoding metrics")
    return " · ".join(parts)


def render(trackers: Mapping[str, WindowTracker], rules: AlertRules, alpha_threshold: float | None) -> Table:
    table = Table(title="specmeter monitor", title_justify="left")
    columns = ("target", "kind", "window end", "α", "τ", "per-position", "drafts", "tokens/s", "run/wait")
    for column in (*columns, "alerts"):
        table.add_column(column, justify="left" if column in ("target", "kind", "alerts") else "right")
    for url, tracker in trackers.items():
        w = tracker.history[-1] if tracker.history else None
        if w is None:
            table.add_row(url, tracker.kind or DASH, "waiting for a second scrape", *[DASH] * 7)
            continue
        if w.error is not None:
            table.add_row(
                url, w.kind, iso(w.t_end), Text(f"scrape failed: {w.error}", style="red"), *[DASH] * 6
            )
            continue
        a = w.acceptance
        alpha = Text(_alpha(w))
        if w.alpha is not None and alpha_threshold is not None and w.alpha < alpha_threshold:
            alpha.stylize("bold red")
        active = ", ".join(sorted(rules.active(url))) or DASH
        table.add_row(
            url,
            w.kind,
            iso(w.t_end),
            alpha,
            _num(w.tau),
            _positions(w),
            DASH if w.drafts is None else str(w.drafts),
            _num(None if a is None else a.tokens_per_s, 1),
            _queue(w),
            Text(active, style="bold red" if active != DASH else ""),
        )
    return table
