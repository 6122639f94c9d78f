"""Service-level objectives: per-request limits, attainment with a Wilson interval, and goodput.

An SLO is a set of per-request limits (docs/metrics.md, "SLO, attainment, goodput, capacity"), written
``ttft_p99_ms=500,tpot_p99_ms=50,gap_p99_ms=200`` (any subset, plus ``gap_per_token_p99_ms``). A request
meets it when it completed and

- its TTFT (:func:`metrics.latency.ttft`) is at most ``ttft_p99_ms``,
- its TPOT (:func:`metrics.latency.tpot`, (t_last − t_first)/(N − 1)) is at most ``tpot_p99_ms``,
- the p99 of its own *chunk* gaps (:func:`metrics.latency.chunk_gaps`, vLLM's per-chunk ITL: the pause a
  reader of the stream feels, however many tokens the next chunk brings) is at most ``gap_p99_ms``,
- the p99 of its own *per-token* gaps (:func:`metrics.latency.per_token_gaps`, each gap ÷ the tokens in
  the later chunk, genai-perf's convention: comparable with a server that sends one token per chunk) is at
  most ``gap_per_token_p99_ms``.

A speculative server (vLLM, SGLang, llama.cpp with a draft, ``specmeter serve``) sends up to k + 1 tokens
per chunk after a longer pause, so the two gap limits judge different things: ``gap_p99_ms`` judges the
stutter, ``gap_per_token_p99_ms`` the pace. The names say p99 because, judged per request, a level whose
attainment is at least 0.99 has (up to interpolation) its p99 of TTFT and TPOT within the limits; the gap
limits are a per-request p99 (linear interpolation, :func:`metrics.latency.percentiles`). A limit whose
figure does not exist for the request (TPOT with one token, gaps with one chunk) is met: there is nothing
to exceed. A request that failed or was cut short never meets an SLO.

Attainment is met / judged with a Wilson score interval (:func:`wilson_interval`); goodput is the requests
and output tokens per second of the requests that met it, over the level's wall time. vLLM's
``vllm bench serve --goodput ttft:… tpot:… e2el:…`` (``vllm/benchmarks/serve.py``, ``calculate_metrics``)
uses the same per-request rule: a completed request is good when every configured figure is within its
limit (a one-token request's TPOT counts as 0, i.e. met), failed requests are never good, and request
goodput is good requests / the benchmark's duration. It has no gap limit; the gap limits here are ours.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from specmeter.metrics.latency import chunk_gaps, per_token_gaps, percentiles, tpot, ttft
from specmeter.metrics.records import RequestRecord

__all__ = [
    "DEFAULT_ATTAINMENT",
    "FAILED",
    "SLO",
    "SLO_FIELDS",
    "Attainment",
    "Goodput",
    "SLOError",
    "SLOLevel",
    "attainment",
    "evaluate",
    "goodput",
    "wilson_interval",
]

DEFAULT_ATTAINMENT = 0.95  # the capacity target when none is given (docs/metrics.md)
Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile: a two-sided 95% interval
FAILED = "failed"  # the violation of a request that failed or was cut short

# field → what it limits, for messages and docs; the order is the canonical spelling's order
SLO_FIELDS: Mapping[str, str] = {
    "ttft_p99_ms": "time to first token, ms",
    "tpot_p99_ms": "time per output token after the first, ms",
    "gap_p99_ms": "p99 of the request's chunk gaps (per chunk, as the stream is read), ms",
    "gap_per_token_p99_ms": "p99 of the request's per-token gaps (chunk gap ÷ its tokens), ms",
}


class SLOError(ValueError):
    """A malformed SLO; the message is one line naming the option and the field."""


@dataclass(frozen=True)
class SLO:
    """Per-request limits in milliseconds; None = no limit on that figure (at least one is set)."""

    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None
    gap_p99_ms: float | None = None
    gap_per_token_p99_ms: float | None = None

    def __post_init__(self) -> None:
        limits = self.limits()
        if not limits:
            raise SLOError(f"an SLO needs at least one of {', '.join(SLO_FIELDS)}")
        for name, value in limits.items():
            if not (math.isfinite(value) and value > 0):
                raise SLOError(f"{name} must be a positive number of milliseconds, not {value!r}")

    @classmethod
    def parse(cls, text: str, *, option: str = "--slo") -> SLO:
        """``ttft_p99_ms=500,tpot_p99_ms=50`` → SLO; :class:`SLOError` names ``option`` and the field."""
        values: dict[str, float] = {}
        parts = [p.strip() for p in text.split(",")]
        if not any(parts):
            raise SLOError(f"{option}: empty; expected e.g. ttft_p99_ms=500,tpot_p99_ms=50")
        for part in parts:
            if not part:
                raise SLOError(f"{option}: empty field in {text!r}")
            name, sep, raw = part.partition("=")
            name = name.strip()
            if not sep:
                raise SLOError(f"{option}: {part!r} is not field=value (fields: {', '.join(SLO_FIELDS)})")
            if name not in SLO_FIELDS:
                raise SLOError(f"{option}: unknown field {name!r} (fields: {', '.join(SLO_FIELDS)})")
            if name in values:
                raise SLOError(f"{option}: {name} given twice")
            try:
                value = float(raw.strip())
            except ValueError:
                raise SLOError(f"{option}: {name}={raw.strip()!r} is not a number of milliseconds") from None
            if not (math.isfinite(value) and value > 0):
                raise SLOError(
                    f"{option}: {name} must be a positive number of milliseconds, not {raw.strip()}"
                )
            values[name] = value
        return cls(**values)

    def limits(self) -> dict[str, float]:
        """The limits that are set, by field name, in the canonical order."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}

    def text(self) -> str:
        """The canonical spelling, which :meth:`parse` reads back to an equal SLO."""
        return ",".join(f"{name}={value:g}" for name, value in self.limits().items())

    def figures(self, record: RequestRecord) -> dict[str, float | None]:
        """The request's figure for each limit that is set, in ms; None where it has none (met)."""
        out: dict[str, float | None] = {}
        for name in self.limits():
            out[name] = _figure(name, record)
        return out

    def violations(self, record: RequestRecord) -> tuple[str, ...]:
        """The fields the request exceeds, or (:data:`FAILED`,) for a failed or cut request; () = met."""
        if record.error is not None or record.finish_reason == "interrupted":
            return (FAILED,)
        limits = self.limits()
        return tuple(
            name
            for name, figure in self.figures(record).items()
            if figure is not None and figure > limits[name]
        )

    def meets(self, record: RequestRecord) -> bool:
        """True when the request completed and every set limit holds (a load outcome: ``outcome.record``)."""
        return not self.violations(record)


def _figure(name: str, record: RequestRecord) -> float | None:
    if name == "ttft_p99_ms":
        return ttft(record) * 1000.0
    if name == "tpot_p99_ms":
        value = tpot(record)
        return None if value is None else value * 1000.0
    gaps = chunk_gaps(record) if name == "gap_p99_ms" else per_token_gaps(record)
    summary = percentiles(gaps, scale=1000.0)
    return None if summary is None else summary["p99"]


def wilson_interval(successes: int, trials: int, *, z: float = Z_95) -> tuple[float, float] | None:
    """Wilson score interval for a binomial share (95% by default); None without trials.

    Unlike the Wald interval p ± z·√(p(1−p)/n) it stays inside [0, 1] and does not collapse to a point at
    0/n or n/n, and its coverage stays near nominal at small n (Brown, Cai & DasGupta 2001).
    """
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError("successes must lie in [0, trials]")
    n = float(trials)
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # exact at the ends (0/n has lower bound 0, n/n upper bound 1) and never excluding p itself, whatever
    # the rounding of centre ± half
    lo = 0.0 if successes == 0 else min(p, max(0.0, centre - half))
    hi = 1.0 if successes == trials else max(p, min(1.0, centre + half))
    return lo, hi


@dataclass(frozen=True)
class Attainment:
    """met of judged requests met the SLO; ``share`` = met / judged and its Wilson interval [lo, hi]."""

    met: int
    judged: int
    share: float | None
    lo: float | None
    hi: float | None

    @classmethod
    def of(cls, met: int, judged: int) -> Attainment:
        interval = wilson_interval(met, judged)
        share = met / judged if judged else None
        return cls(met, judged, share, *(interval if interval else (None, None)))

    def passes(self, target: float) -> bool:
        """The point estimate is at or above ``target`` (no request judged: False)."""
        return self.share is not None and self.share >= target

    def surely_passes(self, target: float) -> bool:
        """The whole interval is at or above ``target``."""
        return self.lo is not None and self.lo >= target

    def surely_fails(self, target: float) -> bool:
        """The whole interval is below ``target``."""
        return self.hi is not None and self.hi < target

    def to_dict(self) -> dict[str, Any]:
        ci = None if self.lo is None or self.hi is None else [self.lo, self.hi]
        return {"met": self.met, "judged": self.judged, "share": self.share, "ci": ci}


def attainment(slo: SLO, records: Iterable[RequestRecord]) -> Attainment:
    """The share of ``records`` meeting ``slo``, with its Wilson interval (failed requests count, unmet)."""
    met = judged = 0
    for record in records:
        judged += 1
        met += slo.meets(record)
    return Attainment.of(met, judged)


@dataclass(frozen=True)
class Goodput:
    """Requests and output tokens per second of the requests meeting the SLO, over the wall time."""

    requests_per_s: float | None
    tokens_per_s: float | None
    requests_per_s_ci: tuple[float, float] | None  # the attainment interval × judged / wall

    def to_dict(self) -> dict[str, Any]:
        ci = None if self.requests_per_s_ci is None else list(self.requests_per_s_ci)
        return {
            "requests_per_s": self.requests_per_s,
            "tokens_per_s": self.tokens_per_s,
            "requests_per_s_ci": ci,
        }


def goodput(slo: SLO, records: Sequence[RequestRecord], wall_s: float) -> Goodput:
    """Goodput over ``wall_s`` seconds: meeting requests / wall and their output tokens / wall.

    The interval is the attainment's Wilson interval scaled by judged / wall (the wall time taken as
    known). All None when no time passed.
    """
    if wall_s <= 0:
        return Goodput(None, None, None)
    good = [r for r in records if slo.meets(r)]
    share = Attainment.of(len(good), len(records))
    ci = None
    if share.lo is not None and share.hi is not None:
        ci = (share.lo * len(records) / wall_s, share.hi * len(records) / wall_s)
    return Goodput(len(good) / wall_s, sum(r.output_tokens for r in good) / wall_s, ci)


@dataclass(frozen=True)
class SLOLevel:
    """One level judged against an SLO: attainment, goodput and how many requests missed each limit."""

    slo: SLO
    attainment: Attainment
    goodput: Goodput
    violations: Mapping[str, int]  # field (or "failed") → requests exceeding it; a request may count twice

    def to_dict(self) -> dict[str, Any]:
        return {
            "slo": self.slo.limits(),
            "attainment": self.attainment.to_dict(),
            "goodput": self.goodput.to_dict(),
            "violations": dict(self.violations),
        }


def evaluate(slo: SLO, records: Sequence[RequestRecord], wall_s: float) -> SLOLevel:
    """Attainment, goodput and violation counts of one level's requests over its wall time ``wall_s``."""
    counts: dict[str, int] = {name: 0 for name in (*slo.limits(), FAILED)}
    for record in records:
        for name in slo.violations(record):
            counts[name] += 1
    return SLOLevel(slo, attainment(slo, records), goodput(slo, records, wall_s), counts)
