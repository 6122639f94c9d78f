"""Alert rules: streaks of low α, τ drops against a baseline, transitions only, no-evidence windows."""

from __future__ import annotations

import pytest

from specmeter.monitoring.acceptance import ServerAcceptance
from specmeter.monitoring.alerts import AlertRules
from specmeter.monitoring.windows import Window


def w(
    t: float, alpha: float | None, tau: float | None, steps: int | None = 100, error: str | None = None
) -> Window:
    acc = ServerAcceptance("vllm", "counters", steps=steps, acceptance_rate=alpha, acceptance_length=tau)
    return Window("engine", "vllm", t, t + 1, None if error else acc, error)


def states(rules: AlertRules, windows: list[Window]) -> list[tuple[float, str, str]]:
    return [(e.value or 0.0, e.rule, e.state) for win in windows for e in rules.evaluate(win)]


def test_alpha_needs_n_consecutive_windows_and_resolves_once() -> None:
    rules = AlertRules(alpha_threshold=0.5, alpha_windows=3, tau_drop_pct=None)
    out = states(
        rules,
        [
            w(0, 0.4, 2),
            w(1, 0.4, 2),
            w(2, 0.6, 2),
            w(3, 0.4, 2),
            w(4, 0.4, 2),
            w(5, 0.3, 2),
            w(6, 0.2, 2),
            w(7, 0.7, 2),
            w(8, 0.8, 2),
        ],
    )
    assert [(r, s) for _, r, s in out] == [("alpha_low", "firing"), ("alpha_low", "resolved")]
    assert out[0][0] == 0.3 and out[1][0] == 0.7
    assert rules.active("engine") == set()


def test_windows_without_evidence_neither_extend_nor_break_a_streak() -> None:
    rules = AlertRules(alpha_threshold=0.5, alpha_windows=2, tau_drop_pct=None, min_drafts=10)
    out = states(
        rules,
        [
            w(0, 0.4, 2),
            w(1, None, None, steps=0),
            w(2, 0.1, 2, steps=3),
            w(3, None, None, error="down"),
            w(4, 0.4, 2),
        ],
    )
    assert [(r, s) for _, r, s in out] == [("alpha_low", "firing")]
    assert rules.active("engine") == {"alpha_low"}


def test_tau_drop_against_first_window_or_given_baseline() -> None:
    rules = AlertRules(alpha_threshold=None, tau_drop_pct=20.0)
    windows = [w(0, 0.7, 4.0), w(1, 0.7, 3.3), w(2, 0.7, 3.1), w(3, 0.7, 3.9)]
    events = [e for win in windows for e in rules.evaluate(win)]
    assert [(e.rule, e.state) for e in events] == [("tau_drop", "firing"), ("tau_drop", "resolved")]
    # The baseline is the first window's τ: the floor is 20 % below 4.0, and both messages name it.
    assert events[0].threshold == pytest.approx(3.2)
    assert all("baseline 4.000" in e.message for e in events)
    fixed = AlertRules(alpha_threshold=None, tau_drop_pct=10.0, tau_baseline=3.0)
    assert [(r, s) for _, r, s in states(fixed, [w(0, 0.7, 2.6)])] == [("tau_drop", "firing")]
