"""ROI, the field report's formula: the seed's case (2.5× with a bigger instance → −30%) and the pieces."""

from __future__ import annotations

import pytest

from specmeter.economics import HOURS_PER_MONTH, RoiInputs, compute_roi, price_ratio_for_saving


def seed_case(**overrides: float) -> RoiInputs:
    # 1B tokens/month at 1,000 tokens/s per instance; the draft needs an instance 1.75× the price.
    values = dict(monthly_tokens=1e9, baseline_throughput=1000.0, baseline_price=4.0, spec_price=7.0,
                  speedup=2.5, engineering_cost=20_000.0)  # fmt: skip
    values.update(overrides)
    return RoiInputs(**values)  # type: ignore[arg-type]


def test_the_seed_case_cuts_the_monthly_cost_by_30_percent() -> None:
    assert price_ratio_for_saving(2.5, 0.30) == pytest.approx(1.75)
    r = compute_roi(seed_case())
    assert r.savings_fraction == pytest.approx(0.30)
    assert r.cost_after / r.cost_before == pytest.approx(1.75 / 2.5)
    hours = 1e9 / (1000 * 3600)
    assert r.hours_before == pytest.approx(hours) and r.hours_after == pytest.approx(hours / 2.5)
    assert r.cost_before == pytest.approx(hours * 4.0)
    # ROI = (GPU-time cost saved − extra memory cost) / engineering cost, over 12 months.
    assert r.gpu_time_saved == pytest.approx((hours - hours / 2.5) * 4.0)
    assert r.extra_memory_cost == pytest.approx(hours / 2.5 * 3.0)
    assert r.monthly_savings == pytest.approx(r.gpu_time_saved - r.extra_memory_cost)
    assert r.roi == pytest.approx(12 * r.monthly_savings / 20_000)
    assert r.payback_months == pytest.approx(20_000 / r.monthly_savings)
    assert r.instances_before == pytest.approx(hours / HOURS_PER_MONTH)


def test_same_instance_saves_one_minus_one_over_e() -> None:
    r = compute_roi(seed_case(spec_price=4.0, speedup=2.0))
    assert r.savings_fraction == pytest.approx(0.5) and r.extra_memory_cost == 0.0


def test_a_slowdown_or_a_too_expensive_instance_never_pays_back() -> None:
    for r in (compute_roi(seed_case(speedup=0.8, spec_price=4.0)), compute_roi(seed_case(spec_price=12.0))):
        assert r.monthly_savings < 0 and r.payback_months is None
        assert r.roi is not None and r.roi < 0


def test_free_engineering_has_no_ratio_and_pays_back_at_once() -> None:
    r = compute_roi(seed_case(engineering_cost=0.0))
    assert r.roi is None and r.payback_months == 0.0


def test_bad_inputs_name_the_field() -> None:
    for field, value in [("speedup", 0.0), ("monthly_tokens", -1.0), ("baseline_throughput", float("nan")),
                         ("spec_price", -3.0), ("engineering_cost", float("inf"))]:  # fmt: skip
        with pytest.raises(ValueError, match=field):
            compute_roi(seed_case(**{field: value}))
    with pytest.raises(ValueError):
        price_ratio_for_saving(2.5, 1.0)


def test_speedup_for_payback_pays_back_in_exactly_that_many_months() -> None:
    from specmeter.economics.roi import speedup_for_payback

    base = RoiInputs(3e9, 2500, 4.0, 7.0, 1.0, 40_000)
    for months in (1.0, 6.0, 24.0):
        big = RoiInputs(3e11, 2500, 4.0, 7.0, 1.0, 40_000)
        e = speedup_for_payback(big, months)
        assert e is not None and e > 7.0 / 4.0
        r = compute_roi(RoiInputs(3e11, 2500, 4.0, 7.0, e, 40_000))
        assert r.payback_months == pytest.approx(months)
    # The whole baseline bill (1,333/month here) cannot repay 40,000 within 6 months at any speedup.
    assert speedup_for_payback(base, 6.0) is None
    # No engineering cost: any saving will do, E above the price ratio.
    free = RoiInputs(3e9, 2500, 4.0, 7.0, 1.0, 0.0)
    assert speedup_for_payback(free, 1.0) == pytest.approx(7.0 / 4.0)
