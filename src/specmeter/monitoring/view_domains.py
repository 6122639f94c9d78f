"""Terminal rendering of per-domain windows: one line per window (logs), or a table of the latest ones."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from specmeter.monitoring.domains import DomainWindow
from specmeter.monitoring.windows import iso

__all__ = ["domain_line", "domain_table"]


def _ci(value: float | None, ci: tuple[float, float] | None, fmt: str = ".3f") -> str:
    if value is None:
        return "—"
    return f"{value:{fmt}}" + (f" [{ci[0]:{fmt}}, {ci[1]:{fmt}}]" if ci else "")


def _latency(w: DomainWindow, key: str) -> str:
    row = (w.latency or {}).get(key)
    if row is None:
        return "—"
    ci = row["ci"]
    ms = f"{row['value'] * 1000:.0f}"
    return ms + (f" [{ci[0] * 1000:.0f}, {ci[1] * 1000:.0f}]" if ci else "") + " ms"


def domain_line(w: DomainWindow) -> str:
    alpha, tau = _ci(w.alpha, w.alpha_ci), _ci(w.tau, w.tau_ci, ".2f")
    speed = _ci(w.tokens_per_s, w.tokens_per_s_ci, ".1f")
    return (
        f"{iso(w.t_end)} {w.key}: {w.requests} req, α {alpha}, τ {tau}, {speed} tok/s, "
        f"p50 {_latency(w, 'p50')}, p99 {_latency(w, 'p99')}"
    )


def domain_table(
    windows: Sequence[DomainWindow], alpha_threshold: float | None, active: dict[str, set[str]]
) -> Table:
    """The latest window of every domain: α, τ, tokens/s and latency with their 95 % intervals."""
    latest: dict[str, DomainWindow] = {}
    for w in windows:
        latest[w.key] = w
    table = Table()
    for name in (
        "domain",
        "window end",
        "requests",
        "α [95% CI]",
        "τ [95% CI]",
        "tok/s",
        "p50",
        "p90",
        "p99",
        "alerts",
    ):
        table.add_column(name, justify="left" if name in ("domain", "window end", "alerts") else "right")
    for key in sorted(latest):
        w = latest[key]
        alpha = _ci(w.alpha, w.alpha_ci)
        if alpha_threshold is not None and w.alpha is not None and w.alpha < alpha_threshold:
            alpha = f"[red]{alpha}[/]"
        table.add_row(
            key,
            iso(w.t_end),
            str(w.requests),
            alpha,
            _ci(w.tau, w.tau_ci, ".2f"),
            _ci(w.tokens_per_s, w.tokens_per_s_ci, ".1f"),
            _latency(w, "p50"),
            _latency(w, "p90"),
            _latency(w, "p99"),
            ", ".join(sorted(active.get(key, set()))) or "—",
        )
    return table
