"""Reading a what-if surface: interpolation, break-even α, best k and the overlay of real domains."""

from __future__ import annotations

from typing import Any

import pytest

from specmeter.selection.whatif_surface import (
    best_k,
    break_even,
    describe_overlay,
    overlay,
    overlay_points,
    surface_e,
)


def _section(es: dict[tuple[float, int, int], float]) -> dict[str, Any]:
    return {"cells": [{"alpha": a, "k": k, "batch": b, "e": e} for (a, k, b), e in es.items()]}


SECTION = _section({
    (0.2, 2, 1): 0.8, (0.6, 2, 1): 1.4, (0.2, 4, 1): 0.6, (0.6, 4, 1): 1.8,
    (0.2, 2, 8): 0.5, (0.6, 2, 8): 0.9, (0.2, 4, 8): 0.3, (0.6, 4, 8): 0.8,
})  # fmt: skip


def test_surface_is_linear_between_measured_alphas_and_says_when_it_extrapolates() -> None:
    assert surface_e(SECTION, 0.2, 4, 1) == (0.6, False)
    e, extra = surface_e(SECTION, 0.4, 4, 1) or (None, None)
    assert e == pytest.approx(1.2) and extra is False
    e, extra = surface_e(SECTION, 0.8, 4, 1) or (None, None)
    assert e == pytest.approx(2.4) and extra is True
    e, _ = surface_e(SECTION, 0.0, 4, 8) or (None, None)
    assert e == pytest.approx(0.05)
    assert surface_e(SECTION, 0.4, 3, 1) is None  # k not measured
    assert surface_e(_section({(0.5, 4, 1): 1.1}), 0.6, 4, 1) is None  # one point is no line


def test_break_even_inside_below_and_above() -> None:
    be = break_even(SECTION)
    per = {(r["batch"], r["k"]): r for r in be["per_k"]}
    # k=2 at B=1: 0.8 → 1.4 between α 0.2 and 0.6: E = 1 at α = 0.2 + 0.2/0.6 · 0.4
    assert per[(1, 2)]["alpha"] == pytest.approx(0.2 + 0.4 / 3) and per[(1, 2)]["where"] == "inside"
    assert per[(1, 4)]["alpha"] == pytest.approx(0.2 + 0.4 * 0.4 / 1.2)
    assert per[(8, 2)]["alpha"] is None and per[(8, 2)]["where"] == "above"
    best = {r["batch"]: r for r in be["best"]}
    assert best[1]["k"] == 4 and best[1]["alpha"] == pytest.approx(1 / 3)
    assert best[8]["alpha"] is None
    below = break_even(_section({(0.3, 2, 1): 1.2, (0.5, 2, 1): 1.5}))
    assert below["per_k"][0]["where"] == "below" and below["per_k"][0]["alpha"] == 0.3


def test_best_k_is_zero_where_nothing_pays() -> None:
    best = {(r["alpha"], r["batch"]): r for r in best_k(SECTION)}
    assert best[(0.6, 1)]["k"] == 4 and best[(0.6, 1)]["e"] == 1.8
    assert best[(0.2, 1)]["k"] == 0 and best[(0.2, 1)]["best_speculative_e"] == 0.8
    assert best[(0.6, 8)]["k"] == 0


def test_overlay_places_each_measured_domain_and_reads_the_surface_at_a_future_alpha() -> None:
    bench = {
        "kind": "bench",
        "candidates": [
            {"draft": "draft-general", "k": 4, "by_category": {
                "legal": {"acceptance_rate": 0.2, "speedup_measured": 0.62, "requests": 40},
                "general": {"acceptance_rate": 0.6, "speedup_measured": 1.7, "requests": 40}}},
        ]
    }  # fmt: skip
    points = overlay_points(bench, "bench.json")
    # Without an overall summary the categories are the points; with one, they nest under it.
    assert [(p["domain"], p["alpha"], p["k"]) for p in points] == [("legal", 0.2, 4), ("general", 0.6, 4)]
    overall = {"acceptance_rate": 0.4, "speedup_measured": 1.1}
    nested = overlay_points(
        {**bench, "run": {"config": {"prompts": "/x/golden.jsonl"}},
         "candidates": [{**bench["candidates"][0], "summary": overall}]},
        "bench.json",
    )  # fmt: skip
    assert [(p["domain"], p["alpha"]) for p in nested] == [("golden", 0.4)]
    assert [c["domain"] for c in nested[0]["categories"]] == ["legal", "general"]
    assert [c["surface"][0]["e"] for c in overlay(SECTION, nested)[0]["categories"]] == [
        0.6,
        pytest.approx(1.8),
    ]
    rows = overlay(SECTION, points, at_alpha=0.4)
    legal = rows[0]
    assert [s["e"] for s in legal["surface"]] == [0.6, 0.3]
    assert [s["e"] for s in legal["at"]["surface"]] == pytest.approx([1.2, 0.55])
    text = describe_overlay(legal)
    assert text.startswith("legal today α 0.20 with draft-general (k=4): 0.62× measured at B=1")
    assert "at α 0.40: 1.20× at B=1, 0.55× at B=8" in text
    # A domain measured at a k the surface lacks is read at the nearest k, and says so.
    row = overlay(SECTION, [{**points[0], "k": 3}])[0]
    assert row["k_used"] == 2 and "measured at k=3" in describe_overlay(row)


def test_monitor_windows_give_the_latest_window_per_domain_read_at_the_largest_k() -> None:
    monitor = {"windows": [
        {"domain": "legal", "tenant": None, "acceptance_rate": 0.7, "requests": 12, "start": "t0"},
        {"domain": "legal", "tenant": None, "acceptance_rate": 0.5, "requests": 9, "start": "t1"},
        {"domain": "chat", "tenant": "acme", "acceptance_rate": 0.3, "requests": 4, "start": "t1"},
    ]}  # fmt: skip
    points = overlay_points(monitor, "monitor.json")
    assert {(p["domain"], p["alpha"]) for p in points} == {("legal", 0.5), ("acme/chat", 0.3)}
    row = overlay(SECTION, points)[0]
    assert row["k_used"] == 4 and "k unknown, read at k=4" in describe_overlay(row)


# ------------------------------------------------------------------ requests that differ (issue 28 item 6)


def _costed_section(step: Any, k: int = 4, batches: tuple[int, ...] = (1, 4)) -> dict[str, Any]:
    """A what-if section whose measured step costs are t_step(B, k) = step(B, k), E from τ · t(B,0)/t(B,k)."""
    from specmeter.metrics.synthetic import geometric_profile

    cells, baselines = [], []
    for b in batches:
        baselines.append({"batch": b, "decode_tokens_per_s": 1.0 / step(b, 0)})
        for alpha in (0.3, 0.6, 0.9):
            tau = geometric_profile(alpha, k).tau
            cells.append({
                "alpha": alpha, "k": k, "batch": b, "measured_tau": tau, "e": tau * step(b, 0) / step(b, k),
                "decode_tokens_per_s": tau / step(b, k),
            })  # fmt: skip
    return {"baselines": baselines, "cells": cells}


def _linear(b: int, k: int) -> float:
    return 1.0 + 0.3 * b + k * (0.05 + 0.1 * b)  # batching gains: a step of 4 rows costs < 4 of 1 row


MIXED = [(0.98, 64)] * 5 + [(0.3, 64)] * 5  # easy and hard requests, per-request α 0.98 / 0.3


def test_spread_changes_nothing_at_batch_one_and_nothing_without_spread() -> None:
    from specmeter.selection.whatif_surface import spread_prediction

    section = _costed_section(_linear)
    at_1 = spread_prediction(section, 0.6, 4, 1, MIXED, tokens=64, draws=600, seed=1)
    assert at_1 is not None and at_1["factor"] == pytest.approx(1.0, abs=0.03)
    alike = spread_prediction(section, 0.6, 4, 4, [(0.6, 64)], tokens=64, draws=600)
    assert alike is not None and alike["factor"] == pytest.approx(1.0, abs=0.03)
    assert alike["e"] == pytest.approx(alike["surface_e"] * alike["factor"])


def test_easy_rows_leaving_a_wave_early_raise_e_at_batch_b() -> None:
    """Σ per-request time over a wave is Σ_s live_s · t_step(live_s): with spread the hard rows finish in a
    smaller, cheaper batch, so E rises with B > 1 — unless a step costs the same at any live count (then
    each request's time is its steps, as at B = 1)."""
    from specmeter.selection.whatif_surface import spread_prediction

    mixed = spread_prediction(_costed_section(_linear), 0.6, 4, 4, MIXED, tokens=64, draws=600)
    assert mixed is not None and mixed["factor"] > 1.05 and mixed["factor_alpha"] > 1.05
    flat = spread_prediction(
        _costed_section(lambda b, k: 1.0 + 0.2 * k), 0.6, 4, 4, MIXED, tokens=64, draws=600
    )
    assert flat is not None and flat["factor"] == pytest.approx(1.0, abs=0.03)
    assert spread_prediction({"cells": []}, 0.6, 4, 4, MIXED, tokens=64) is None
