"""α, β, τ and per-position acceptance from what a server reports, with specmeter's own formulas.

Servers report totals (counter deltas over a window, or per-request sums), not steps, so the figures are
built as an ``AcceptanceCounts`` and handed to the same functions the engine's records go through
(``specmeter.metrics.acceptance``): the definitions cannot drift apart. What a server cannot tell is left
``None`` and listed in ``unavailable``.

Per-position rates from counters are the *per-draft* rates of docs/metrics.md: accepted at position i+1
over all drafts (S), as vLLM's counters give them, because servers do not export how many steps drafted
that far. They equal specmeter's P_i whenever every draft has k tokens, which only the drafted-token
counter can show (D = S·k, reported as ``full_drafts``; None where D is not exported). Figures computed
on the assumption that every draft had k tokens — D, α, R and β for TGI — are listed in ``estimated``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from specmeter.metrics.acceptance import AcceptanceCounts, acceptance_length, acceptance_rate, beta_mle
from specmeter.metrics.records import StepRecord
from specmeter.monitoring.adapters import (
    ACCEPTED,
    ALPHA_GAUGE,
    DRAFT_TOKENS,
    DRAFTS,
    GENERATION_TOKENS,
    NO_STEPS_PER_REQUEST,
    REQUESTS_DONE,
    TAU_GAUGE,
    TAU_SERVER_INFO,
    CounterDelta,
    position_key,
    unavailable_metrics,
)

__all__ = [
    "ServerAcceptance",
    "acceptance_from_delta",
    "acceptance_from_requests",
    "per_position_rates",
    "steps_from_report",
]


@dataclass(frozen=True)
class ServerAcceptance:
    """Acceptance as a server reports it; names and meanings are those of the result summary."""

    kind: str
    source: str  # "counters", "gauges", "per_request" or "none"
    steps: int | None = None
    drafted_tokens: int | None = None
    accepted_tokens: int | None = None
    rejections: int | None = None
    acceptance_rate: float | None = None
    acceptance_length: float | None = None
    beta: float | None = None
    per_position: list[dict[str, Any]] | None = None
    per_position_definition: str | None = None  # "per_draft" (counters ÷ S) or "P_i" (equal: full drafts)
    k: int | None = None
    full_drafts: bool | None = None  # every draft had k tokens (D = S·k); None without a measured D
    drafted_estimated: bool = False
    estimated: tuple[str, ...] = ()  # keys computed assuming every draft had k tokens
    generation_tokens: float | None = None
    seconds: float | None = None
    tokens_per_s: float | None = None
    drafts_per_s: float | None = None
    resets: tuple[str, ...] = ()
    unavailable: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["resets"] = list(self.resets)
        data["estimated"] = list(self.estimated)
        data["unavailable"] = list(self.unavailable)
        data["notes"] = list(self.notes)
        return data


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)


def per_position_rates(accepted_at: Sequence[float], steps: float) -> list[dict[str, Any]]:
    """Per-draft rates from counters: ``cumulative`` = accepted_at[i] / S, ``conditional`` =
    accepted_at[i] / accepted_at[i−1] (position 1: / S), so the cumulative is the product of the
    conditionals (docs/metrics.md, "per-draft rates").

    A step that accepted position i+1 accepted every earlier one, so consistent counters never rise with
    the position and never exceed S. Counters that do (scraped at different moments, a partial reset)
    give None for the rates they would push outside [0, 1], never an impossible value.
    """
    rows: list[dict[str, Any]] = []
    previous = steps
    for i, accepted in enumerate(accepted_at):
        consistent = steps > 0 and 0 <= accepted <= previous <= steps
        cumulative = accepted / steps if consistent else None
        conditional = (accepted / previous if previous > 0 else None) if consistent else None
        rows.append(
            {
                "position": i + 1,
                "cumulative": cumulative,
                "conditional": conditional,
                "count": _int(steps),
                "reached": None,
            }
        )
        previous = accepted if consistent else -1.0
    return rows


def _figures(
    kind: str,
    source: str,
    *,
    steps: float | None,
    drafted: float | None,
    accepted: float | None,
    accepted_at: Sequence[float],
    k: int | None,
) -> dict[str, Any]:
    """The acceptance figures from totals; anything that needs a missing total stays None.

    Without a drafted-token total (TGI) D is estimated as S·k and marked so, with α, R and β that rest on
    the same assumption; ``full_drafts`` then stays None — nothing shows whether the drafts were full.
    """
    k = k or (len(accepted_at) or None)
    estimated: list[str] = []
    if drafted is None and steps is not None and k:
        drafted = steps * k
        estimated += ["drafted_tokens", "acceptance_rate"]
    full = None
    if not estimated and steps is not None and drafted is not None and k:
        full = abs(drafted - steps * k) < 0.5
    rejections: float | None = None
    if (full or estimated) and accepted_at and k is not None and len(accepted_at) >= k and steps is not None:
        rejections = steps - accepted_at[k - 1]  # a step stopped early unless it accepted the last position
        if estimated:
            estimated += ["rejections", "beta"]
    counts = AcceptanceCounts(
        steps=_int(steps) or 0,
        target_forwards=_int(steps) or 0,
        drafted=_int(drafted) or 0,
        accepted=_int(accepted) or 0,
        emitted=0,
        rejections=_int(rejections) or 0,
        draft_forwards=0,
    )
    return {
        "kind": kind,
        "source": source,
        "steps": _int(steps),
        "drafted_tokens": _int(drafted),
        "accepted_tokens": _int(accepted),
        "rejections": _int(rejections),
        "acceptance_rate": acceptance_rate(counts) if drafted is not None and accepted is not None else None,
        "acceptance_length": acceptance_length(counts)
        if steps is not None and accepted is not None
        else None,
        "beta": beta_mle(counts) if rejections is not None and accepted is not None else None,
        "per_position": per_position_rates(accepted_at, steps) if accepted_at and steps else None,
        "per_position_definition": ("P_i" if full else "per_draft") if accepted_at and steps else None,
        "k": k,
        "full_drafts": full,
        "drafted_estimated": "drafted_tokens" in estimated,
        "estimated": tuple(estimated),
    }


def acceptance_from_delta(
    kind: str, delta: CounterDelta, gauges: Mapping[str, float] | None = None, *, k: int | None = None
) -> ServerAcceptance:
    """Acceptance over a window from counter deltas (vLLM, TGI, llama.cpp) or gauges (SGLang)."""
    gauges = gauges or {}
    seconds = delta.seconds or None
    generation = delta.get(GENERATION_TOKENS)
    rates: dict[str, Any] = {
        "generation_tokens": generation,
        "seconds": seconds,
        "tokens_per_s": generation / seconds if generation is not None and seconds else None,
        "drafts_per_s": None,
        "resets": delta.resets,
        "unavailable": unavailable_metrics(kind),
    }
    accepted_at: list[float] = []
    while (value := delta.get(position_key(len(accepted_at)))) is not None:
        accepted_at.append(value)
    steps, drafted, accepted = delta.get(DRAFTS), delta.get(DRAFT_TOKENS), delta.get(ACCEPTED)
    notes: tuple[str, ...] = ()
    if kind == "tgi" and steps is not None:
        # TGI observes every request's prefill as a 0 in the same histogram: those are not steps.
        requests = delta.get(REQUESTS_DONE)
        if requests is None:
            notes = (
                "prefill observations not removed (no tgi_request_success): S counts one extra step per "
                "request, so τ, α and β read low",
            )
        else:
            steps = max(steps - requests, accepted_at[0] if accepted_at else 0.0, 0.0)
            notes = (
                "S = tgi_request_skipped_tokens count − requests finished (one prefill observation each); "
                "exact when no request was in flight at either end of the window",
            )
    if steps is not None and seconds:
        rates["drafts_per_s"] = steps / seconds
    if accepted is not None and (steps is not None or drafted is not None):
        figures = _figures(
            kind, "counters", steps=steps, drafted=drafted, accepted=accepted, accepted_at=accepted_at, k=k
        )
        return ServerAcceptance(**figures, **rates, notes=notes)
    if any(g in gauges for g in (TAU_GAUGE, ALPHA_GAUGE, TAU_SERVER_INFO)):
        tau = gauges.get(TAU_GAUGE, gauges.get(TAU_SERVER_INFO))
        notes = ("gauge values at the end of the window (the server's last batch), not window totals",)
        return ServerAcceptance(
            kind=kind,
            source="gauges",
            acceptance_rate=gauges.get(ALPHA_GAUGE),
            acceptance_length=tau,
            k=k,
            notes=notes,
            **rates,
        )
    return ServerAcceptance(kind=kind, source="none", k=k, **rates)


def _number(obj: Mapping[str, Any], key: str) -> float | None:
    value = obj.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def acceptance_from_requests(
    stats: Iterable[Mapping[str, Any]], *, k: int | None = None
) -> ServerAcceptance | None:
    """Acceptance summed over per-request reports; None when no request carried any.

    Two shapes are understood (``adapters.request_report`` brings every engine's report to one of them):
    vLLM's ``metrics.speculative_decoding`` (``num_spec_steps``, ``num_draft_tokens``,
    ``num_accepted_draft_tokens``, ``acceptance_histogram`` where index j counts the steps that accepted
    exactly j drafts, ``num_spec_tokens`` = k; ``engine`` names another engine reported in that shape) and
    llama.cpp's ``timings`` (``draft_n``, ``draft_n_accepted``; no steps).
    """
    steps = drafted = accepted = 0.0
    have_steps, have_any = True, False
    histogram: list[float] = []
    kinds: set[str] = set()
    derived: list[Mapping[str, Any]] = []
    for item in stats:
        if item.get("derived_from_rates"):
            derived.append(item)
            continue
        d, a = _number(item, "num_draft_tokens"), _number(item, "num_accepted_draft_tokens")
        if d is not None and a is not None:
            kinds.add(str(item.get("engine") or "vllm"))
            s = _number(item, "num_spec_steps")
            if s is None:
                have_steps = False
            else:
                steps += s
            spec_tokens = _number(item, "num_spec_tokens")
            if spec_tokens is not None and k is None:
                k = int(spec_tokens)
            hist = item.get("acceptance_histogram")
            if isinstance(hist, list):
                while len(histogram) < len(hist):
                    histogram.append(0.0)
                for j, count in enumerate(hist):
                    histogram[j] += float(count) if isinstance(count, int | float) else 0.0
        else:
            d, a = _number(item, "draft_n"), _number(item, "draft_n_accepted")
            if d is None or a is None:
                continue
            kinds.add("llamacpp")
            have_steps = False
        drafted += d
        accepted += a
        have_any = True
    if not have_any:
        return _from_rates(derived, k) if derived else None
    kind = next(iter(kinds)) if len(kinds) == 1 else "mixed"
    # Steps that accepted at least position i+1 = steps that accepted exactly j drafts, for j > i.
    accepted_at = [sum(histogram[j] for j in range(i + 1, len(histogram))) for i in range(len(histogram) - 1)]
    figures = _figures(
        kind,
        "per_request",
        steps=steps if have_steps else None,
        drafted=drafted,
        accepted=accepted,
        accepted_at=accepted_at if have_steps else [],
        k=k,
    )
    unavailable = () if have_steps else (NO_STEPS_PER_REQUEST,)
    notes: tuple[str, ...] = ()
    if derived:
        notes = (
            f"{len(derived)} request(s) reported only SGLang's own rates, no counts: left out of these "
            "figures",
        )
    return ServerAcceptance(**figures, unavailable=unavailable, notes=notes)


RATES_NOTE = (
    "derived from SGLang's own per-request spec_accept_rate / spec_accept_length (its meta_info carried "
    "no counts), not counted: α = Σ rate·S / Σ S (SGLang counts every step as a full draft), "
    "τ = Σ (length·S − 1) / Σ S (its length is completion tokens / S, the prefill's token included; "
    "a step cut short by EOS or max_tokens makes τ read low)"
)
RATES_UNAVAILABLE = (
    "drafted and accepted counts, β and per-position acceptance (SGLang's meta_info carried its rates only)"
)


def _from_rates(reports: Sequence[Mapping[str, Any]], k: int | None) -> ServerAcceptance | None:
    """α and τ over reports marked ``derived_from_rates`` (``adapters._sglang_rates``), weighted by steps.

    Per request SGLang's rate is A / (S·k) and its length C / S with C = A + S + 1 (the prefill's token and
    one token per step besides the accepted drafts). Summed over requests with one k: α = Σ A / Σ (S·k) =
    Σ rate·S / Σ S and τ = 1 + Σ A / Σ S = Σ (length·S − 1) / Σ S. Each figure uses the requests that
    report its rate (and at least one step); S, the verification steps, is a count SGLang did send.
    """
    steps = sum(_number(r, "num_spec_steps") or 0.0 for r in reports)
    rated = [(r, s) for r in reports if (s := _number(r, "num_spec_steps"))]
    with_rate = [(_number(r, "sglang_accept_rate"), s) for r, s in rated]
    with_length = [(_number(r, "sglang_accept_length"), s) for r, s in rated]
    rate_steps = sum(s for x, s in with_rate if x is not None)
    length_steps = sum(s for x, s in with_length if x is not None)
    alpha = sum(x * s for x, s in with_rate if x is not None) / rate_steps if rate_steps else None
    tau = sum(x * s - 1.0 for x, s in with_length if x is not None) / length_steps if length_steps else None
    if alpha is None and tau is None and steps > 0:
        return None
    return ServerAcceptance(
        kind="sglang",
        source="per_request",
        steps=_int(steps),
        acceptance_rate=alpha,
        acceptance_length=None if tau is None else max(tau, 1.0),
        k=k,
        estimated=("acceptance_rate",) if alpha is not None else (),  # SGLang's D assumes full drafts
        unavailable=(RATES_UNAVAILABLE,),
        notes=(RATES_NOTE,),
    )


def _histogram(value: object) -> list[int] | None:
    if isinstance(value, list) and all(
        isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in value
    ):
        return list(value)
    return None


def steps_from_report(report: Mapping[str, Any]) -> tuple[StepRecord, ...] | None:
    """The request's verification steps, when a per-request report determines them exactly; else None.

    Exact means the multiset of (drafted, accepted) pairs is known — the order of steps is not, and no
    metric needs it. That holds for vLLM's ``per_step_accepted`` / ``per_step_drafted`` (the ``detailed``
    level of ``--per-request-spec-decode-metrics``, vLLM 0.32), for ``acceptance_histogram_by_draft_length``
    (``{"d": [steps that accepted exactly j of d drafts]}``, proposed in vLLM PR #56278 and emitted by
    ``specmeter serve``),
    and for ``acceptance_histogram`` when every draft had ``num_spec_tokens`` tokens
    (``num_draft_tokens == num_spec_steps * num_spec_tokens``). Timings are unknown (0) and ``emitted``
    assumes no EOS inside a step: neither enters any acceptance figure.
    """
    pairs: list[tuple[int, int, int]] = []  # (drafted, accepted, count)
    by_length = report.get("acceptance_histogram_by_draft_length")
    step_accepted = _histogram(report.get("per_step_accepted"))
    step_drafted = _histogram(report.get("per_step_drafted"))
    if step_accepted is not None and step_drafted is not None:
        # vLLM's `detailed` level: one (accepted, drafted) per verification step, in order.
        if len(step_accepted) != len(step_drafted):
            return None
        pairs = [(d, a, 1) for a, d in zip(step_accepted, step_drafted, strict=True)]
        if any(a > d for d, a, _ in pairs):
            return None
    elif isinstance(by_length, Mapping):
        for key, value in by_length.items():
            hist = _histogram(value)
            if hist is None or not str(key).isdigit() or len(hist) != int(key) + 1:
                return None
            pairs += [(int(key), j, c) for j, c in enumerate(hist) if c]
    else:
        hist = _histogram(report.get("acceptance_histogram"))
        k, steps, drafted = (
            _number(report, key) for key in ("num_spec_tokens", "num_spec_steps", "num_draft_tokens")
        )
        if hist is None or k is None or steps is None or drafted is None or len(hist) != int(k) + 1:
            return None
        if sum(hist) != steps or drafted != steps * k:
            return None  # some drafts were shorter than k: which ones is not recorded
        pairs = [(int(k), j, c) for j, c in enumerate(hist) if c]
    accepted = _number(report, "num_accepted_draft_tokens")
    drafted_total = _number(report, "num_draft_tokens")
    if (accepted is not None and accepted != sum(j * c for _, j, c in pairs)) or (
        drafted_total is not None and drafted_total != sum(d * c for d, _, c in pairs)
    ):
        return None  # the report contradicts itself; trust nothing derived from it
    return tuple(
        StepRecord(drafted=d, accepted=j, emitted=j + 1, draft_s=0.0, verify_s=0.0, draft_forwards=d)
        for d, j, c in pairs
        for _ in range(c)
    )
