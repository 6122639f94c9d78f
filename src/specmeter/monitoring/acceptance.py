"""α, β, τ and per-position acceptance from what a server reports, with specmeter's own formulas.

Servers report totals (counter deltas over a window, or per-request sums), not steps, so the figures are
built as an ``AcceptanceCounts`` and handed to the same functions the engine's records go through
(``specmeter.metrics.acceptance``): the definitions cannot drift apart. What a server cannot tell is left
``None`` and listed in ``unavailable``.

Per-position rates from counters divide by all steps (S), as vLLM does, because servers do not export how
many steps drafted that far; they equal specmeter's definition whenever every draft has k tokens, which is
checked (D = S·k) and reported as ``full_drafts``.
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
    k: int | None = None
    full_drafts: bool | None = None
    drafted_estimated: bool = False
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
        data["unavailable"] = list(self.unavailable)
        data["notes"] = list(self.notes)
        return data


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)


def per_position_rates(accepted_at: Sequence[float], steps: float) -> list[dict[str, Any]]:
    """``[{position, cumulative, conditional, count}]``: cumulative_i = accepted_at[i] / S."""
    rows: list[dict[str, Any]] = []
    previous: float | None = None
    for i, accepted in enumerate(accepted_at):
        cumulative = accepted / steps if steps > 0 else None
        if i == 0:
            conditional = cumulative
        elif cumulative is None or previous is None or previous == 0.0:
            conditional = None
        else:
            conditional = cumulative / previous
        rows.append(
            {"position": i + 1, "cumulative": cumulative, "conditional": conditional, "count": _int(steps)}
        )
        previous = cumulative
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
    drafted_estimated: bool = False,
) -> dict[str, Any]:
    """The acceptance figures from totals; anything that needs a missing total stays None."""
    k = k or (len(accepted_at) or None)
    if drafted is None and steps is not None and k:
        drafted, drafted_estimated = steps * k, True
    full = None if steps is None or drafted is None or not k else abs(drafted - steps * k) < 0.5
    rejections: float | None = None
    if full and accepted_at and k is not None and len(accepted_at) >= k and steps is not None:
        rejections = steps - accepted_at[k - 1]  # a step stopped early unless it accepted the last position
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
        "k": k,
        "full_drafts": full,
        "drafted_estimated": drafted_estimated,
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
    if steps is not None and seconds:
        rates["drafts_per_s"] = steps / seconds
    if accepted is not None and (steps is not None or drafted is not None):
        figures = _figures(
            kind, "counters", steps=steps, drafted=drafted, accepted=accepted, accepted_at=accepted_at, k=k
        )
        return ServerAcceptance(**figures, **rates)
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

    Two shapes are understood: vLLM's ``metrics.speculative_decoding`` (``num_spec_steps``,
    ``num_draft_tokens``, ``num_accepted_draft_tokens``, ``acceptance_histogram`` where index j counts
    the steps that accepted exactly j drafts, ``num_spec_tokens`` = k) and llama.cpp's ``timings``
    (``draft_n``, ``draft_n_accepted``; no steps).
    """
    steps = drafted = accepted = 0.0
    have_steps, have_any = True, False
    histogram: list[float] = []
    kinds: set[str] = set()
    for item in stats:
        d, a = _number(item, "num_draft_tokens"), _number(item, "num_accepted_draft_tokens")
        if d is not None and a is not None:
            kinds.add("vllm")
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
        return None
    kind = "vllm" if kinds == {"vllm"} else "llamacpp" if kinds == {"llamacpp"} else "mixed"
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
    unavailable = unavailable_metrics("llamacpp")[:1] if kind != "vllm" else ()
    return ServerAcceptance(**figures, unavailable=unavailable)


def _histogram(value: object) -> list[int] | None:
    if isinstance(value, list) and all(
        isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in value
    ):
        return list(value)
    return None


def steps_from_report(report: Mapping[str, Any]) -> tuple[StepRecord, ...] | None:
    """The request's verification steps, when a per-request report determines them exactly; else None.

    Exact means the multiset of (drafted, accepted) pairs is known — the order of steps is not, and no
    metric needs it. That holds for ``acceptance_histogram_by_draft_length`` (``{"d": [steps that
    accepted exactly j of d drafts]}``, proposed in vLLM PR #56278 and emitted by ``specmeter serve``),
    and for ``acceptance_histogram`` when every draft had ``num_spec_tokens`` tokens
    (``num_draft_tokens == num_spec_steps * num_spec_tokens``). Timings are unknown (0) and ``emitted``
    assumes no EOS inside a step: neither enters any acceptance figure.
    """
    pairs: list[tuple[int, int, int]] = []  # (drafted, accepted, count)
    by_length = report.get("acceptance_histogram_by_draft_length")
    if isinstance(by_length, Mapping):
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
    if accepted is not None and accepted != sum(j * c for _, j, c in pairs):
        return None  # the report contradicts itself; trust nothing derived from it
    return tuple(
        StepRecord(drafted=d, accepted=j, emitted=j + 1, draft_s=0.0, verify_s=0.0, draft_forwards=d)
        for d, j, c in pairs
        for _ in range(c)
    )
