"""Cost model of the decode loop, fitted to measurements, and speedup predictions for k that were not run.

``tune`` runs a few draft lengths and must say which k is best, including k it did not run, and why the
four speedups of a run differ. Three ingredients (docs/metrics.md, "speedup, calibrated" and "choosing k"):

* the decode steps of a workload at k, as a :class:`StepMix` — counted from the records of a run
  (:func:`step_mix`), or expected at another k (:func:`predict_step_mix`) from the per-position
  conditional rates q_i measured at a larger k and each request's decode length, following the engine's
  rule that a step drafts d = min(k, tokens left − 1) near the token limit;
* the price of a step that drafts d tokens, ``CostCurve.step_s(d)`` = d·t_D(1) + t_T(d+1), the same for
  measured and predicted steps (E_cal is :func:`specmeter.metrics.speedup.speedup_calibrated` of a mix);
* what the loop spends outside forwards — sampling, KV-cache bookkeeping, the draft catching up, Python.
  That *engine overhead* is fitted from the runs themselves: per target forward it is close to a line in
  the tokens drafted per forward, o(x) = o_0 + o_1·x, with the baseline (x = 0) as one point of the line.

A prediction of the decode-only E_meas at k is then u_base·N / (Σ priced steps + o_0·forwards + o_1·D) of
the predicted mix, u_base being the baseline's measured decode time per token. :func:`gap_factors` splits
the distance from E_lev to E_meas into multiplicative factors so each gap has a number. Pure functions,
numpy only, no torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median

import numpy as np

from specmeter.metrics.acceptance import expected_acceptance_length, iter_steps
from specmeter.metrics.records import CostCurve, RequestRecord, StepRecord

__all__ = [
    "DecodeBudget",
    "DecodeTiming",
    "GapFactors",
    "LineFit",
    "StepMix",
    "decode_budgets",
    "decode_timing",
    "fit_cost_curve",
    "fit_line",
    "fit_overhead",
    "gap_factors",
    "predict_acceptance_length",
    "predict_speedup",
    "predict_step_mix",
    "shortens_drafts",
    "step_cost_curve",
    "step_mix",
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
    """τ(k) = 1 + Σ_{i<k} P_i when every step drafts k tokens (long outputs); None for an unmeasured position.

    Steps near the token limit draft fewer; :func:`predict_step_mix` accounts for them.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    if k > len(cumulative):
        return None
    rates = cumulative[:k]
    if any(p is None for p in rates):
        return None
    return 1.0 + sum(p for p in rates if p is not None)


@dataclass(frozen=True)
class StepMix:
    """The decode steps of a workload at one draft length: totals of a run, or expectations of a model.

    Kept by draft length and free of times, so any cost curve prices it (``CostCurve.step_s``). Over the
    verification steps (d_s ≥ 1) ``credited`` is Σ (a_s + 1), the tokens the steps produced as the verifier
    decided (EOS cuts ignored, as in τ); ``target_only`` counts the d = 0 forwards and ``tokens`` every token
    appended by decode.
    """

    by_length: Mapping[int, float] = field(default_factory=dict)  # verification steps per draft length
    credited: float = 0.0
    target_only: float = 0.0
    tokens: float = 0.0

    @property
    def steps(self) -> float:
        """S, the verification steps."""
        return float(sum(self.by_length.values()))

    @property
    def drafted(self) -> float:
        """D = Σ d_s."""
        return float(sum(d * n for d, n in self.by_length.items()))

    @property
    def acceptance_length(self) -> float | None:
        """τ = Σ (a_s + 1) / S = 1 + A/S; None without verification steps."""
        steps = self.steps
        return self.credited / steps if steps > 0 else None

    def step_s(self, curve: CostCurve) -> float:
        """Σ over verification steps of d_s·t_D(1) + t_T(d_s + 1)."""
        return sum(n * curve.step_s(d) for d, n in self.by_length.items())

    def decode_s(self, curve: CostCurve) -> float:
        """Every decode forward priced by the curve: verification steps plus target-only forwards."""
        return self.step_s(curve) + self.target_only * curve.t_target(1)

    def __add__(self, other: StepMix) -> StepMix:
        lengths = dict(self.by_length)
        for d, n in other.by_length.items():
            lengths[d] = lengths.get(d, 0.0) + n
        return StepMix(
            lengths,
            self.credited + other.credited,
            self.target_only + other.target_only,
            self.tokens + other.tokens,
        )


def step_mix(items: Iterable[StepRecord | RequestRecord]) -> StepMix:
    """The measured :class:`StepMix` of steps (or of requests' steps)."""
    lengths: dict[int, float] = {}
    credited = target_only = tokens = 0.0
    for step in iter_steps(items):
        tokens += step.emitted
        if step.drafted == 0:
            target_only += 1
            continue
        lengths[step.drafted] = lengths.get(step.drafted, 0.0) + 1
        credited += step.accepted + 1
    return StepMix(lengths, credited, target_only, tokens)


# (decode tokens, whether the token limit shortens the last drafts): what the engine's step rule needs
DecodeBudget = tuple[int, bool]


def shortens_drafts(requests: Iterable[RequestRecord], k: int) -> bool:
    """Whether a run at k shows the engine shortening drafts near the token limit (a step with d_s < k in
    a request that ended at the limit). specmeter's engine does (d = min(k, tokens left − 1)); an engine
    that drafts k to the end and throws the surplus away does not."""
    return any(s.drafted < k for r in requests if r.finish_reason == "length" for s in r.steps)


def decode_budgets(requests: Iterable[RequestRecord], shortened: bool) -> list[DecodeBudget]:
    """Each request's decode tokens (tokens appended after the first), and whether its drafts are cut short
    near the end: only requests that ended at the token limit, and only on an engine that shortens."""
    return [(sum(s.emitted for s in r.steps), shortened and r.finish_reason == "length") for r in requests]


def _accept_probs(conditional: Sequence[float | None], d: int) -> list[float] | None:
    """P(a = j), j = 0..d, for a draft of d tokens: reach_j·(1 − q_j), and reach_d for all accepted.

    None when a position that can be reached (reach > 0) has no measured rate.
    """
    probs: list[float] = []
    reach = 1.0
    for j in range(d):
        if reach == 0.0:
            probs.append(0.0)
            continue
        q = conditional[j] if j < len(conditional) else None
        if q is None:
            return None
        probs.append(reach * (1.0 - q))
        reach *= q
    probs.append(reach)
    return probs


def _expected_steps(
    conditional: Sequence[float | None], k: int, longest: int, shortened: bool
) -> np.ndarray | None:
    """Row r: expected [verification steps with d = 1..k, Σ(a+1), target-only forwards] to emit r tokens.

    A step with r tokens left drafts d = min(k, r − 1) when ``shortened`` (at r = 1 a target-only forward
    emits the last token), else d = k; it accepts j with :func:`_accept_probs` and emits j + 1 tokens
    (fewer if the end comes first).
    """
    probs = {d: _accept_probs(conditional, d) for d in range(1, k + 1)}
    cols = k + 2
    table = np.zeros((longest + 1, cols))
    for r in range(1, longest + 1):
        d = min(k, r - 1) if shortened else k
        if d == 0:
            table[r, k + 1] = 1.0  # target-only forward, emits the last token
            continue
        p = probs[d]
        if p is None:
            return None
        row = np.zeros(cols)
        row[d - 1] = 1.0
        row[k] = sum(pj * (j + 1) for j, pj in enumerate(p))
        for j, pj in enumerate(p):
            if pj:
                row += pj * table[max(r - j - 1, 0)]
        table[r] = row
    return table


def predict_step_mix(
    budgets: Sequence[DecodeBudget], conditional: Sequence[float | None], k: int
) -> StepMix | None:
    """The expected :class:`StepMix` at draft length k of requests with these decode ``budgets``.

    Acceptance follows the per-position conditional rates q_0..q_{k−1} measured at a k ≥ this one
    (position i behaves the same whether or not the draft goes on); None for k beyond the measured
    positions or when a position the draft can reach has no rate. Requests are independent, so the mix
    of a workload is the sum of its requests' expectations.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    if k > len(conditional):
        return None  # positions beyond the measured ones are not predicted
    mix = StepMix()
    for shortened in (False, True):
        lengths = [n for n, flag in budgets if flag is shortened and n > 0]
        if not lengths:
            continue
        table = _expected_steps(conditional, k, max(lengths), shortened)
        if table is None:
            return None
        total = table[lengths].sum(axis=0)
        mix = mix + StepMix(
            {d: float(total[d - 1]) for d in range(1, k + 1) if total[d - 1] > 0},
            float(total[k]),
            float(total[k + 1]),
            float(sum(lengths)),
        )
    return mix


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
    """Decode time of a run split into priced forwards (``CostCurve.step_s`` of each step's own draft
    length) and overhead; None without a cost curve."""
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
            modelled_s += curve.step_s(s.drafted)
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
    mix: StepMix | None,
    curve: CostCurve | None,
    overhead: LineFit | None,
    baseline_seconds_per_token: float | None,
) -> float | None:
    """Decode-only E_meas of a (predicted) step mix: u_base·N / (priced forwards + o_0·forwards + o_1·D).

    ``u_base`` is the baseline's measured decode time per token, so the baseline side needs no model; the
    overhead line prices what the loop spends outside forwards, per forward and per drafted token.
    """
    if mix is None or curve is None or not curve.target_s or baseline_seconds_per_token is None:
        return None
    if overhead is None or mix.tokens <= 0:
        return None
    forwards = mix.steps + mix.target_only
    spec_s = mix.decode_s(curve) + overhead.intercept * forwards + overhead.slope * mix.drafted
    if spec_s <= 0:
        return None
    e = baseline_seconds_per_token * mix.tokens / spec_s
    # A step that drafts costs at least a plain one, so E cannot exceed the tokens per forward; above it the
    # overhead line was fitted to noise (a negative slope on a loaded machine): no figure, not a wrong one.
    if forwards > 0 and e > mix.tokens / forwards * (1.0 + 1e-9):
        return None
    return e


@dataclass(frozen=True)
class GapFactors:
    """E_meas = E_lev · short_drafts · iid · verification · engine · prefill; None when an input is missing.

    * ``short_drafts``: what steps drafting fewer than k tokens (near the token limit) change — the
      i.i.d. τ of the actual draft lengths over that of k, times the full step's price over the mean
      step's; 1 when every step drafted k;
    * ``iid``: measured τ over the τ the i.i.d. model expects from β for the same draft lengths;
    * ``verification``: (k·c + 1)/(k·c + t_T(k+1)/t_T(1)), the cost of verifying k+1 tokens instead of 1;
    * ``engine``: E_meas(decode-only) / E_cal, time the loop spends outside the priced forwards;
    * ``prefill``: E_meas / E_meas(decode-only), prefill and time to first token.
    """

    short_drafts: float | None
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
    mix: StepMix,
    curve: CostCurve | None,
    e_cal: float | None,
    e_meas: float | None,
    e_meas_decode: float | None,
) -> GapFactors:
    """The factors of :class:`GapFactors` for one run at k; their product with E_lev is E_meas."""
    steps = mix.steps
    tau = mix.acceptance_length
    tau_iid_mix = tau_iid_k = None
    if beta is not None and steps > 0:
        tau_iid_k = expected_acceptance_length(beta, k)
        tau_iid_mix = sum(n * expected_acceptance_length(beta, d) for d, n in mix.by_length.items()) / steps
    verification: float | None = None
    short: float | None = None
    v = verification_factor(curve, k)
    if v is not None and curve is not None:
        c = curve.draft_s / curve.target_s[0]
        verification = (k * c + 1.0) / (k * c + v)
        priced = mix.step_s(curve)
        tokens_ratio = _ratio(tau_iid_mix, tau_iid_k)
        if tokens_ratio is not None and priced > 0:
            short = tokens_ratio * curve.step_s(k) * steps / priced
    return GapFactors(
        short_drafts=short,
        iid=_ratio(tau, tau_iid_mix),
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
