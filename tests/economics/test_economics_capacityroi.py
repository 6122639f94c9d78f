"""economics.capacityroi: whole instances at measured capacity, priced by the field report's formula."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from specmeter.economics.capacityroi import SweepCapacity, capacity_roi, sweep_capacity
from specmeter.economics.roi import HOURS_PER_MONTH, RoiInputs, compute_roi


def capacity(base: float, spec: float, e1: float | None = None) -> SweepCapacity:
    return SweepCapacity(base, spec, "k=4", "slo", "ttft_p99_ms=500", "c=8", "c=16", e1, "c=1", "measured")


def sweep_result(base: float | None, spec: float | None) -> dict[str, Any]:
    return {
        "kind": "sweep",
        "sweep": {
            "best": [{"level": "c=1", "k": 4, "e": 2.0}],
            "capacity": {
                "source": "slo", "slo": "ttft_p99_ms=500", "assumption": "a",
                "baseline": {"run": "k=0", "level": "c=8", "requests_per_s": base},
                "speculative": {"run": "k=4", "level": "c=16", "requests_per_s": spec},
            },
        },
    }  # fmt: skip


def test_the_field_reports_case_in_instances() -> None:
    # 2.5× the requests per instance on an instance 1.75× the price: −30% monthly cost.
    r = capacity_roi(capacity(1.0, 2.5), traffic=10, baseline_price=4, spec_price=7, engineering_cost=20000)
    assert (r.instances_before, r.instances_after) == (10, 4)
    assert r.money.cost_before == pytest.approx(10 * HOURS_PER_MONTH * 4)
    assert r.money.cost_after == pytest.approx(4 * HOURS_PER_MONTH * 7)
    assert r.money.savings_fraction == pytest.approx(0.30)
    assert r.money.payback_months == pytest.approx(20000 / r.money.monthly_savings)


@pytest.mark.parametrize("seed", range(50))
def test_whole_instances_and_the_same_formula_as_roi(seed: int) -> None:
    rng = random.Random(seed)
    base, spec, traffic = rng.uniform(0.1, 100), rng.uniform(0.1, 100), rng.uniform(0.1, 1000)
    pb, ps = rng.uniform(0, 50), rng.uniform(0, 50)
    r = capacity_roi(capacity(base, spec, 1.5), traffic, pb, ps, engineering_cost=1000)
    assert r.instances_before == math.ceil(traffic / base) and r.instances_before * base >= traffic
    assert r.instances_after * spec >= traffic and (r.instances_after - 1) * spec < traffic
    # The same money as roi's speedup path when that speedup gives the same hours.
    hours = r.instances_before * HOURS_PER_MONTH
    e = r.instances_before / r.instances_after
    same = compute_roi(RoiInputs(hours * 3600.0, 1.0, pb, ps, e, 1000))
    assert r.money.monthly_savings == pytest.approx(same.monthly_savings, rel=1e-9, abs=1e-9)
    assert r.batch1_instances_after == math.ceil(traffic / (base * 1.5))


def test_reading_a_sweep_result() -> None:
    cap = sweep_capacity(sweep_result(2.0, 3.0))
    assert (cap.baseline_rps, cap.spec_rps, cap.spec_run, cap.batch1_e) == (2.0, 3.0, "k=4", 2.0)
    with pytest.raises(ValueError, match="no capacity"):
        sweep_capacity(sweep_result(None, 3.0))
    with pytest.raises(ValueError, match="not a sweep result"):
        sweep_capacity({"kind": "load"})
    with pytest.raises(ValueError, match="traffic must be"):
        capacity_roi(cap, 0, 1, 1)


def test_a_whatif_capacity_is_the_baseline_scaled_by_e_and_says_it_is_assumed() -> None:
    from specmeter.economics.capacityroi import SCALED_ASSUMPTION, scaled_capacity, sweep_baseline_capacity

    base = sweep_baseline_capacity(sweep_result(2.0, None))  # no speculative capacity needed
    assert (base.baseline_rps, base.baseline_load, base.slo) == (2.0, "c=8", "ttft_p99_ms=500")
    cap = scaled_capacity(base.baseline_rps, 1.6, "α=0.65, k=4, B=8", baseline_load="c=8")
    assert cap.spec_rps == pytest.approx(3.2) and cap.assumption == SCALED_ASSUMPTION
    assert "assumed" in cap.assumption and "SLO-bound" in cap.assumption
    r = capacity_roi(cap, traffic=40, baseline_price=4, spec_price=4.4)
    assert (r.instances_before, r.instances_after) == (20, 13)  # ⌈40 / 2⌉, ⌈40 / 3.2⌉
    with pytest.raises(ValueError, match="no baseline capacity"):
        sweep_baseline_capacity(sweep_result(None, 3.0))
    with pytest.raises(ValueError, match="speedup must be"):
        scaled_capacity(2.0, 0.0, "x")


def test_level_concurrency() -> None:
    from specmeter.economics.capacityroi import level_concurrency

    assert level_concurrency("c=8") == 8
    assert level_concurrency("rate=2/s") is None and level_concurrency(None) is None
    assert level_concurrency("c=x") is None


@pytest.mark.parametrize("seed", range(200))
def test_the_speedup_for_capacity_payback_is_the_smallest_that_pays(seed: int) -> None:
    from specmeter.economics.capacityroi import scaled_capacity, speedup_for_capacity_payback

    rng = random.Random(seed)
    base, traffic = rng.uniform(0.5, 5), rng.uniform(1, 200)
    pb, ps = rng.uniform(1, 10), rng.uniform(1, 12)
    cost, months = rng.choice([0.0, rng.uniform(0, 200_000)]), rng.uniform(1, 24)
    e = speedup_for_capacity_payback(base, traffic, pb, ps, cost, months)

    def pays(speedup: float) -> bool:
        m = capacity_roi(scaled_capacity(base, speedup, "x"), traffic, pb, ps, cost, months).money
        return m.payback_months is not None and m.payback_months <= months * (1 + 1e-9)

    if e is None:
        # No fleet pays back: not even a single speculative instance.
        assert not pays(traffic / base * 1e6)
        return
    assert pays(e)
    assert not pays(e * (1 - 1e-6))  # one instance more: it no longer pays back in time
