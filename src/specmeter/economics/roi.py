"""Return on investment of speculative decoding, the field report's way.

    ROI = (GPU-time cost saved − extra memory cost) / engineering cost

Money is instance-hours. Serving a month's tokens at the baseline throughput takes
H_before = tokens / (throughput · 3600) instance-hours; with a speedup E it takes H_after = H_before / E.
Holding the draft may need a bigger (dearer) instance, so the after-hours are billed at the speculative
instance's price:

    GPU-time cost saved  = (H_before − H_after) · price_baseline
    extra memory cost    = H_after · (price_spec − price_baseline)      (the bigger instance's price delta)
    cost after           = H_after · price_spec = cost before − saved + extra
    monthly savings      = saved − extra

The seed gives no time horizon for ROI, so it is computed over ``horizon_months`` of savings (12 by
default) against a one-off engineering cost: ROI = 1 means the savings paid exactly for the work within
the horizon. Payback is engineering cost / monthly savings.

E is a *throughput* speedup here: a batch-1 latency speedup (``bench``) overstates it at high batch,
where decoding is less memory-bound; prefer a speedup measured under production concurrency
(``load``) when there is one. Pure Python, no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "HOURS_PER_MONTH",
    "Money",
    "RoiInputs",
    "RoiResult",
    "compute_roi",
    "money",
    "parse_amount",
    "price_ratio_for_saving",
    "roi_inputs",
    "speedup_for_payback",
]

HOURS_PER_MONTH = 730.0  # 365 · 24 / 12
_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


@dataclass(frozen=True)
class RoiInputs:
    monthly_tokens: float  # output tokens served per month
    baseline_throughput: float  # tokens/s one baseline instance sustains
    baseline_price: float  # per instance-hour, without speculation
    spec_price: float  # per instance-hour of the instance that holds target + draft
    speedup: float  # E: throughput with speculation ÷ without
    engineering_cost: float  # one-off cost of adopting speculation
    horizon_months: float = 12.0

    def check(self) -> None:
        """ValueError naming the first bad field."""
        positive = {
            "monthly_tokens": self.monthly_tokens,
            "baseline_throughput": self.baseline_throughput,
            "speedup": self.speedup,
            "horizon_months": self.horizon_months,
        }
        for name, value in positive.items():
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a number > 0 (got {value})")
        for name, value in {
            "baseline_price": self.baseline_price,
            "spec_price": self.spec_price,
            "engineering_cost": self.engineering_cost,
        }.items():
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a number >= 0 (got {value})")


@dataclass(frozen=True)
class RoiResult:
    inputs: RoiInputs
    hours_before: float  # instance-hours per month
    hours_after: float
    cost_before: float  # per month
    cost_after: float
    gpu_time_saved: float  # (H_before − H_after) · price_baseline
    extra_memory_cost: float  # H_after · (price_spec − price_baseline)
    monthly_savings: float  # cost_before − cost_after
    savings_fraction: float | None  # savings / cost before; None when nothing was spent before
    roi: float | None  # horizon · savings / engineering cost; None when engineering costs nothing
    payback_months: float | None  # None when it never pays back

    @property
    def instances_before(self) -> float:
        """Instances busy on average over the month."""
        return self.hours_before / HOURS_PER_MONTH

    @property
    def instances_after(self) -> float:
        return self.hours_after / HOURS_PER_MONTH


@dataclass(frozen=True)
class Money:
    """The field report's money figures for instance-hours before and after (one month)."""

    cost_before: float
    cost_after: float
    gpu_time_saved: float  # (H_before − H_after) · price_baseline
    extra_memory_cost: float  # H_after · (price_spec − price_baseline)
    monthly_savings: float
    savings_fraction: float | None
    roi: float | None
    payback_months: float | None


def money(
    hours_before: float,
    hours_after: float,
    baseline_price: float,
    spec_price: float,
    engineering_cost: float,
    horizon_months: float,
) -> Money:
    """ROI = (GPU-time cost saved − extra memory cost) / engineering cost, from monthly instance-hours.

    The one place of the formula: ``compute_roi`` (hours from a speedup) and ``capacityroi`` (hours from
    instances needed at a measured capacity) both price hours through it.
    """
    cost_before = hours_before * baseline_price
    saved = (hours_before - hours_after) * baseline_price
    extra = hours_after * (spec_price - baseline_price)
    savings = saved - extra
    return Money(
        cost_before=cost_before,
        cost_after=hours_after * spec_price,
        gpu_time_saved=saved,
        extra_memory_cost=extra,
        monthly_savings=savings,
        savings_fraction=savings / cost_before if cost_before > 0 else None,
        roi=horizon_months * savings / engineering_cost if engineering_cost > 0 else None,
        payback_months=None if savings <= 0 else engineering_cost / savings,
    )


def compute_roi(inputs: RoiInputs) -> RoiResult:
    inputs.check()
    hours_before = inputs.monthly_tokens / (inputs.baseline_throughput * 3600.0)
    hours_after = hours_before / inputs.speedup
    m = money(
        hours_before,
        hours_after,
        inputs.baseline_price,
        inputs.spec_price,
        inputs.engineering_cost,
        inputs.horizon_months,
    )
    return RoiResult(
        inputs=inputs,
        hours_before=hours_before,
        hours_after=hours_after,
        cost_before=m.cost_before,
        cost_after=m.cost_after,
        gpu_time_saved=m.gpu_time_saved,
        extra_memory_cost=m.extra_memory_cost,
        monthly_savings=m.monthly_savings,
        savings_fraction=m.savings_fraction,
        roi=m.roi,
        payback_months=m.payback_months,
    )


def price_ratio_for_saving(speedup: float, saving: float) -> float:
    """The spec/baseline price ratio at which ``speedup`` saves the fraction ``saving`` of the monthly cost.

    cost after / cost before = ratio / E, so ratio = E · (1 − saving); the seed's 2.5× and −30% give 1.75.
    """
    if speedup <= 0 or not 0 <= saving < 1:
        raise ValueError("speedup must be > 0 and saving in [0, 1)")
    return speedup * (1.0 - saving)


def speedup_for_payback(inputs: RoiInputs, months: float) -> float | None:
    """The smallest speedup E whose savings pay the engineering cost back within ``months``.

    Monthly savings at E are H_before · price_baseline − (H_before / E) · price_spec (the formula above);
    paying C back within N months needs savings ≥ C / N, so

        E ≥ H_before · price_spec / (H_before · price_baseline − C / N)

    (with C = 0: any saving, E > price_spec / price_baseline). None when no speedup can do it: the whole
    baseline bill H_before · price_baseline is less than C / N. ``inputs.speedup`` is not used.
    """
    if not math.isfinite(months) or months <= 0:
        raise ValueError(f"months must be a number > 0 (got {months})")
    inputs.check()
    hours_before = inputs.monthly_tokens / (inputs.baseline_throughput * 3600.0)
    room = hours_before * inputs.baseline_price - inputs.engineering_cost / months
    if room <= 0:
        return None
    return hours_before * inputs.spec_price / room


def parse_amount(text: str, option: str) -> float:
    """``"3B"`` -> 3e9, ``"2.5e6"`` -> 2.5e6 (suffixes K, M, B/G, T); ValueError naming ``option``."""
    raw = text.strip().replace(",", "").replace("_", "")
    scale = 1.0
    if raw and raw[-1].lower() in _SUFFIXES:
        scale, raw = _SUFFIXES[raw[-1].lower()], raw[:-1]
    try:
        return float(raw) * scale
    except ValueError:
        raise ValueError(f"{option}: {text!r} is not a number (suffixes K, M, B, T are allowed)") from None


def roi_inputs(
    monthly_tokens: str, baseline_throughput: float, baseline_price: float, spec_price: float | None,
    engineering_cost: str, horizon_months: float, speedup: float = 1.0,
) -> RoiInputs:  # fmt: skip
    """Checked RoiInputs from the command line's values (``roi``, ``report``): amounts may carry suffixes,
    the speculative price defaults to the baseline's; ValueError naming the option (``--monthly-tokens``)."""
    inputs = RoiInputs(
        monthly_tokens=parse_amount(monthly_tokens, "--monthly-tokens"),
        baseline_throughput=baseline_throughput,
        baseline_price=baseline_price,
        spec_price=baseline_price if spec_price is None else spec_price,
        speedup=speedup,
        engineering_cost=parse_amount(engineering_cost, "--engineering-cost"),
        horizon_months=horizon_months,
    )
    try:
        inputs.check()
    except ValueError as e:
        raise ValueError("--" + str(e).replace("_", "-")) from None
    return inputs
