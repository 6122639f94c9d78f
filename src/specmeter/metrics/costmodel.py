"""Cost model of the decode loop, fitted to measurements, and speedup predictions for k that were not run.

``tune`` runs a few draft lengths and must say which k is best, including k it did not run, and why the
four speedups of a run differ. Two ingredients (docs/metrics.md, "choosing k"):

* tokens per step at k: τ(k) = 1 + Σ_{i<k} P_i from the per-position acceptance measured at a larger k;
* cost of a step at k: the forwards it runs, from the measured cost curve (d·t_D(1) + t_T(d+1)), plus what
  the loop spends outside forwards — sampling, KV-cache bookkeeping, the draft catching up, Python. That
  *engine overhead* is fitted from the runs themselves: per target forward it is close to a line in the
  tokens drafted per forward, o(x) = o_0 + o_1·x, with the baseline (x = 0) as one point of the line.

A prediction of the decode-only E_meas at k is then τ(k) · u_base / (k·t_D(1) + t_T(k+1) + o(k)), u_base
being the baseline's measured decode time per token. Without the overhead term it is E_cal
(``speedup.predict_speedup_calibrated``). :func:`gap_factors` splits the distance from E_lev to E_meas into
four multiplicative factors so each gap has a number. Pure functions, no torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import median

from specmeter.metrics.acceptance import expected_acceptance_length
from specmeter.metrics.records import CostCurve, RequestRecord

__all__ = [
    "DecodeTiming",
    "GapFactors",
    "LineFit",
    "decode_timing",
    "fit_cost_curve",
    "fit_line",
    "fit_overhead",
    "gap_factors",
    "predict_acceptance_length",
    "predict_speedup",
    "step_cost_curve",
    "verification_factor",
]


@dataclass(frozen=True)
class LineFit:
    """y ≈ intercept + slope·x by least squares; ``r2`` is None when it says nothing (< 3 points, flat y)."""

    intercept: float
    slope: float
    r2: float | None
    points: int

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> LineFit:
    """Ordinary least squares. One distinct x gives a flat line through the mean of y."""
    if len(xs) != len(ys):
        raise ValueError("xs and ys must have the same length")
    if not xs:
        raise ValueError("cannot fit a line to no points")
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    slope = sxy / sxx if sxx > 0 else 0.0
    intercept = my - slope * mx
    syy = sum((y - my) ** 2 for y in ys)
    r2: float | None = None
    if n >= 3 and syy > 0:
        residual = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
        r2 = 1.0 - residual / syy
    return LineFit(intercept=intercept, slope=slope, r2=r2, points=n)


def fit_cost_curve(curve: CostCurve) -> LineFit | None:
    """t_T(n) ≈ a + b·n over the measured n, in seconds: b is the marginal cost of one more verified token.

    A summary of the curve, not a replacement for it: predictions use the measured points, and on CPUs the
    step from n = 1 to n = 2 is often far steeper than the rest, which a low ``r2`` makes visible.
    """
    if not curve.target_s:
        return None
    return fit_line([float(n) for n in range(1, len(curve.target_s) + 1)], list(curve.target_s))


def verification_factor(curve: CostCurve | None, k: int) -> float | None:
    """t_T(k+1) / t_T(1): what verifying k drafted tokens costs in single-token target forwards.

    E_lev assumes 1; the measured factor is the verification overhead between E_lev and E_cal.
    """
    if curve is None or not curve.target_s or curve.target_s[0] <= 0:
        return None
    return curve.t_target(k + 1) / curve.target_s[0]


def predict_acceptance_length(cumulative: Sequence[float | None], k: int) -> float | None:
    """τ(k) = 1 + Σ_{i<k} P_i from cumulative per-position rates; None when a position was never measured."""
    if k < 1:
        raise ValueError("k must be >= 1")
    if k > len(cumulative):
        return None
    rates = cumulative[:k]
    if any(p is None for p in rates):
        return None
    return 1.0 + sum(p for p in rates if p is not None)


@dataclass(frozen=True)
class DecodeTiming:
    """Where one run's decode time went: forwards as the cost curve prices them, and the rest.

    Decode is first token → last token of each request (latency − TTFT), so prefill is left out.
    """

    forwards: int  # target forwards in decode: verification steps and target-only steps
    drafted: int  # D, drafted tokens
    tokens: int  # tokens appended by decode steps
    decode_s: float  # Σ (latency − TTFT)
    modelled_s: float  # Σ over steps of draft_forwards·t_D(1) + t_T(d_s + 1)

    @property
    def overhead_s(self) -> float:
        """Decode time outside the forwards the cost curve prices (may be slightly negative from noise)."""
        return self.decode_s - self.modelled_s

    @property
    def drafted_per_forward(self) -> float:
        return self.drafted / self.forwards if self.forwards else 0.0

    @property
    def overhead_per_forward_s(self) -> float | None:
        return self.overhead_s / self.forwards if self.forwards else None

    @property
    def overhead_share(self) -> float | None:
        """Fraction of decode time outside the priced forwards."""
        return self.overhead_s / self.decode_s if self.decode_s > 0 else None

    @property
    def seconds_per_token(self) -> float | None:
        return self.decode_s / self.tokens if self.tokens else None


def decode_timing(requests: Iterable[RequestRecord], curve: CostCurve) -> DecodeTiming | None:
    """Decode time of a run split into priced forwards and overhead; None without a cost curve."""
    if not curve.target_s:
        return None
    forwards = drafted = tokens = 0
    decode_s = modelled_s = 0.0
    for r in requests:
        decode_s += r.latency_s - r.ttft_s
        for s in r.steps:
            forwards += 1
            drafted += s.drafted
            tokens += s.emitted
            modelled_s += s.draft_forwards * curve.draft_s + curve.t_target(s.drafted + 1)
    return DecodeTiming(forwards, drafted, tokens, decode_s, modelled_s)


def fit_overhead(timings: Iterable[DecodeTiming]) -> LineFit | None:
    """Engine overhead per target forward as a line in drafted tokens per forward: o(x) = o_0 + o_1·x.

    The baseline (x = 0) and every speculative run are points; each draft token adds its own sampling and
    bookkeeping, hence the slope. None without a run that has forwards.
    """
    points = [(t.drafted_per_forward, t.overhead_s / t.forwards) for t in timings if t.forwards]
    if not points:
        return None
    return fit_line([x for x, _ in points], [y for _, y in points])


def predict_speedup(
    tau: float | None,
    k: int,
    curve: CostCurve | None,
    overhead: LineFit | None,
    baseline_seconds_per_token: float | None,
) -> float | None:
    """Decode-only E_meas predicted at k: τ(k)·u_base / (k·t_D(1) + t_T(k+1) + o(k)).

    ``u_base`` is the baseline's measured decode time per token, so the baseline side needs no model.
    Assumes every step drafts k tokens, i.e. outputs long enough that the last steps before the token
    limit (which draft fewer) do not matter.
    """
    if tau is None or curve is None or not curve.target_s or baseline_seconds_per_token is None:
        return None
    if overhead is None:
        return None
    step = k * curve.draft_s + curve.t_target(k + 1) + overhead.at(float(k))
    if step <= 0:
        return None
    return tau * baseline_seconds_per_token / step


@dataclass(frozen=True)
class GapFactors:
    """E_meas = E_lev · iid · verification · engine · prefill; a factor is None when an input is missing.

    * ``iid``: measured τ over the τ the i.i.d. model expects from β (acceptance is not i.i.d.);
    * ``verification``: (k·c + 1)/(k·c + t_T(k+1)/t_T(1)), the cost of verifying k+1 tokens instead of 1;
    * ``engine``: E_meas(decode-only) / E_cal, time the loop spends outside the priced forwards;
    * ``prefill``: E_meas / E_meas(decode-only), prefill and time to first token.
    """

    iid: float | None
    verification: float | None
    engine: float | None
    prefill: float | None


def _ratio(num: float | None, den: float | None) -> float | None:
    return None if num is None or den is None or den == 0 else num / den


def gap_factors(
    *,
    k: int,
    beta: float | None,
    tau: float | None,
    curve: CostCurve | None,
    e_cal: float | None,
    e_meas: float | None,
    e_meas_decode: float | None,
) -> GapFactors:
    """The factors of :class:`GapFactors` for one run; their product with E_lev is E_meas."""
    iid = _ratio(tau, expected_acceptance_length(beta, k) if beta is not None else None)
    verification: float | None = None
    v = verification_factor(curve, k)
    if v is not None and curve is not None:
        c = curve.draft_s / curve.target_s[0]
        verification = (k * c + 1.0) / (k * c + v)
    return GapFactors(
        iid=iid,
        verification=verification,
        engine=_ratio(e_meas_decode, e_cal),
        prefill=_ratio(e_meas, e_meas_decode),
    )


def step_cost_curve(
    baseline: Sequence[RequestRecord], by_k: Mapping[int, Sequence[RequestRecord]], points: int
) -> CostCurve | None:
    """An *effective* cost curve from whole-step wall times, for engines that expose no forward timings.

    vLLM runs draft and verification inside one engine step, so only the step is timed: the median step
    time of the baseline (x = 0) and of the full steps (d_s = k) of each run at k are fitted with one line,
    step(x) = a + b·x, read as t_T(n) = a for every n (flat) and t_D(1) = b, so the growth of verification
    with k is counted as draft cost. Good for predicting k between and near those run; not a measurement of
    t_T(n). None without a baseline step and one speculative step.
    """
    xs: list[float] = []
    ys: list[float] = []
    base = [s.draft_s + s.verify_s for r in baseline for s in r.steps if s.drafted == 0]
    if not base:
        return None
    xs.append(0.0)
    ys.append(median(base))
    for k, records in sorted(by_k.items()):
        full = [s.draft_s + s.verify_s for r in records for s in r.steps if s.drafted == k]
        if full:
            xs.append(float(k))
            ys.append(median(full))
    if len(xs) < 2:
        return None
    line = fit_line(xs, ys)
    return CostCurve(target_s=(line.intercept,) * points, draft_s=max(line.slope, 0.0), repeats=len(base))
