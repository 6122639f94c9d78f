"""A result file as a source of acceptance: a ``replay`` result's candidates (or a ``bench``-like result's,
the same shape), overall and per category, for the commands that rank or price acceptance without running a
model: ``select --from``, ``whatif --alpha-from`` and ``roi --alpha-from``.

A candidate is named ``METHOD@k`` (``suffix@4``), ``METHOD@k=4`` or its run label, or by ``METHOD`` alone
where the result holds it at one k. Its figures per category are pooled into domains by the per-position
counts (docs/metrics.md, "per-position acceptance": ``reached`` and the accepted count q_i · ``reached``),
so a domain of several categories has the product-limit rates of its requests together, as one summary of
them would. From the rates come the steady-state τ(k) = 1 + Σ_{i<k} P_i (``metrics.batch_surface.tau_by_k``,
the τ of ``replay --costs`` and ``tune --batch``) and the *full-draft* α = (τ(k) − 1) / k = mean P_i: the
α a draft that always proposes k tokens with these per-position rates has, which is the α ``whatif``'s cells
are measured at (docs/metrics.md, "What if": τ = 1 + k·α for full drafts).

Every problem is an :class:`AcceptanceSourceError` whose message is one line naming the option and the file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmeter import inputs, jsonsafe
from specmeter.inputs import InputError
from specmeter.metrics.batch_surface import tau_by_k
from specmeter.metrics.records import run_label

__all__ = [
    "SOURCE_KINDS",
    "AcceptanceSourceError",
    "Figures",
    "Source",
    "SourceCandidate",
    "pool",
    "read_source",
]

# Results whose candidates carry batch-1 acceptance summaries (docs/results.md): replay's and bench's shape.
SOURCE_KINDS = ("replay", "bench", "select", "tune", "demo")


class AcceptanceSourceError(ValueError):
    """A result that cannot serve as an acceptance source; one line naming the option and the file."""


@dataclass(frozen=True)
class Figures:
    """The acceptance of one candidate over a set of requests (one category, a domain, or all).

    ``drafted_to[i]``, ``reached[i]`` and ``accepted[i]`` are the per-position counts of position i+1
    (docs/results.md's ``count``, ``reached`` and q_i · ``reached``); ``steps`` S, the steps that drafted;
    ``forwards`` every target forward in decode (S plus the steps where nothing was drafted).
    """

    requests: int
    tokens: int
    steps: int
    forwards: int
    drafted: int
    accepted_tokens: int
    rejections: int
    drafted_to: tuple[int, ...]
    reached: tuple[int, ...]
    accepted: tuple[int, ...]
    alpha_ci: list[float] | None = None  # the summary's, where the figures are one summary's
    tau_ci: list[float] | None = None  # the summary's 95% interval of τ (acceptance_length), likewise

    @property
    def alpha(self) -> float | None:
        """α = A / D (docs/metrics.md)."""
        return self.accepted_tokens / self.drafted if self.drafted else None

    @property
    def beta(self) -> float | None:
        """β = A / (A + R)."""
        total = self.accepted_tokens + self.rejections
        return self.accepted_tokens / total if total else None

    @property
    def acceptance_length(self) -> float | None:
        """The run's τ = 1 + A / S (steps near the token limit included)."""
        return 1.0 + self.accepted_tokens / self.steps if self.steps else None

    @property
    def drafting_share(self) -> float | None:
        """S / target forwards: the share of decode steps at which the method proposed anything."""
        return self.steps / self.forwards if self.forwards else None

    @property
    def cumulative(self) -> list[float | None]:
        """P_i = q_0 · … · q_i, the product-limit estimate, with the rule of
        ``metrics.acceptance.per_position_acceptance`` for the positions it cannot measure: None from a
        position nobody drafted, and from one no step reached unless an earlier P is already 0 (then 0)."""
        out: list[float | None] = []
        p: float | None = 1.0
        for count, n, a in zip(self.drafted_to, self.reached, self.accepted, strict=True):
            if count == 0:
                p = None
            elif p is not None:
                if n:
                    p *= a / n
                elif p > 0.0:
                    p = None
            out.append(p)
        return out

    def tau(self, k: int) -> float | None:
        """The steady-state τ(k) = 1 + Σ_{i<k} P_i; None past a position never reached."""
        return tau_by_k(self.cumulative, k).get(k)

    def lower_bound(self, k: int) -> bool:
        """Whether some P_i, i < k, is unknown (a position no step reached or drafted) while the last known
        one is above 0 (after a 0 every later P is 0: P never rises)."""
        last = 1.0
        for p in self.cumulative[:k] + [None] * (k - min(k, len(self.cumulative))):
            if p is None:
                return last > 0.0
            last = p
        return False

    def cumulative_low(self, k: int) -> list[float]:
        """P_1 … P_k with an unknown P_i at its lower bound 0 (P_i lies in [0, P_{i−1}])."""
        cumulative = self.cumulative[:k]
        return [0.0 if p is None else p for p in cumulative] + [0.0] * (k - len(cumulative))

    def tau_low(self, k: int) -> float:
        """τ(k) with the unknown positions at 0: τ(k) itself where every P_i is known, else a lower bound."""
        return 1.0 + sum(self.cumulative_low(k))

    def tokens_per_step(self, k: int) -> float:
        """Tokens per target forward in decode: f · τ(k) + 1 − f, f the drafting share (a step without a
        proposal yields one token); ``tau_low`` where f is unknown."""
        f = self.drafting_share
        tau = self.tau_low(k)
        return tau if f is None else f * tau + 1.0 - f

    def speedup_interval(self, e: float | None) -> list[float] | None:
        """A 95% prediction interval of a speedup ``e`` predicted from these requests, for another sample of
        as many requests of the same traffic: ``e`` scaled by the tokens per forward at the ends of τ's
        interval (the summary's bootstrap over requests) widened by √2 — the new sample's mean varies as
        much as this one's, so their difference has twice the variance — the drafting share and the step's
        price held. A predicted E is proportional to the tokens per forward when its steps cost what they
        cost (pricing.predict). It holds the acceptance's sampling only: not the cost model's own error.
        None without the interval or the figure."""
        tau, ci, f = self.acceptance_length, self.tau_ci, self.drafting_share
        if e is None or tau is None or ci is None or f is None:
            return None
        lo_tau = max(1.0, tau - math.sqrt(2.0) * (tau - min(ci)))
        hi_tau = tau + math.sqrt(2.0) * (max(ci) - tau)
        per_forward = f * tau + 1.0 - f
        lo, hi = (e * (f * t + 1.0 - f) / per_forward for t in (lo_tau, hi_tau))
        return [min(lo, e), max(hi, e)]

    def full_draft_alpha(self, k: int) -> float | None:
        """(τ(k) − 1) / k: the α of full drafts with these per-position rates (whatif's α)."""
        tau = self.tau(k)
        return None if tau is None else (tau - 1.0) / k

    def rates(self, k: int) -> list[float] | None:
        """P_1 … P_k, the unconditional per-position rates (vLLM's ``synthetic_acceptance_rates``)."""
        cumulative = self.cumulative[:k]
        if len(cumulative) < k or any(p is None for p in cumulative):
            return None
        return [float(p) for p in cumulative if p is not None]

    def summary(self, k: int) -> dict[str, Any]:
        """The figures in docs/results.md's summary keys (what ``replay --costs``' predictor reads), with
        the first k positions' P_i at :meth:`cumulative_low` (so E is a lower bound where one is unknown)."""
        per_position = []
        width = max(k, len(self.reached))
        pad = (0,) * (width - len(self.reached))
        cumulative = self.cumulative_low(k) + self.cumulative[k:]
        rows = zip(cumulative, self.drafted_to + pad, self.reached + pad, self.accepted + pad, strict=True)
        for i, (p, count, n, a) in enumerate(rows):
            per_position.append({"position": i + 1, "cumulative": p, "conditional": a / n if n else None,
                                 "count": count, "reached": n})  # fmt: skip
        return {
            "requests": self.requests, "emitted_tokens": self.tokens, "steps": self.steps,
            "target_forwards": self.forwards, "drafted_tokens": self.drafted,
            "accepted_tokens": self.accepted_tokens, "acceptance_rate": self.alpha,
            "acceptance_rate_ci": self.alpha_ci, "beta": self.beta,
            "acceptance_length": self.acceptance_length, "per_position": per_position, "k": k,
        }  # fmt: skip


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def figures_of(summary: Mapping[str, Any]) -> Figures:
    """A summary's figures (docs/results.md); the accepted count of a position is q_i · reached."""
    drafted_to, reached, accepted = [], [], []
    for p in summary.get("per_position") or []:
        n = _int(p.get("reached"))
        q = p.get("conditional")
        drafted_to.append(_int(p.get("count")))
        reached.append(n)
        accepted.append(round(float(q) * n) if isinstance(q, int | float) and n else 0)
    ci = summary.get("acceptance_rate_ci")
    tau_ci = summary.get("acceptance_length_ci")
    return Figures(
        requests=_int(summary.get("requests")),
        tokens=_int(summary.get("emitted_tokens")),
        steps=_int(summary.get("steps")),
        forwards=_int(summary.get("target_forwards")),
        drafted=_int(summary.get("drafted_tokens")),
        accepted_tokens=_int(summary.get("accepted_tokens")),
        rejections=_int(summary.get("rejections")),
        drafted_to=tuple(drafted_to),
        reached=tuple(reached),
        accepted=tuple(accepted),
        alpha_ci=list(ci) if isinstance(ci, list) else None,
        tau_ci=_tau_interval(tau_ci),
    )


def _tau_interval(value: object) -> list[float] | None:
    """A summary's τ interval: two numbers in [1, 10⁶], else None."""
    if not isinstance(value, list) or len(value) != 2:
        return None
    if not all(isinstance(x, int | float) and not isinstance(x, bool) and 1.0 <= x <= 1e6 for x in value):
        return None
    return [float(x) for x in value]


def pool(parts: Iterable[Figures]) -> Figures:
    """Several sets of requests as one: counts added position by position (a summary of their requests
    together would have the same counts, hence the same α, τ and rates)."""
    parts = list(parts)
    if len(parts) == 1:
        return parts[0]
    width = max((len(p.reached) for p in parts), default=0)

    def total(values: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
        return tuple(sum(v[i] for v in values if i < len(v)) for i in range(width))

    return Figures(
        requests=sum(p.requests for p in parts), tokens=sum(p.tokens for p in parts),
        steps=sum(p.steps for p in parts), forwards=sum(p.forwards for p in parts),
        drafted=sum(p.drafted for p in parts), accepted_tokens=sum(p.accepted_tokens for p in parts),
        rejections=sum(p.rejections for p in parts),
        drafted_to=total([p.drafted_to for p in parts]), reached=total([p.reached for p in parts]),
        accepted=total([p.accepted for p in parts]),
    )  # fmt: skip


@dataclass(frozen=True)
class SourceCandidate:
    """One (method, k) of the result: its figures over all requests and per category."""

    draft: str
    k: int
    overall: Figures
    categories: dict[str, Figures]

    @property
    def label(self) -> str:
        return run_label(self.draft, self.k)

    @property
    def name(self) -> str:
        return f"{self.draft}@{self.k}"


@dataclass(frozen=True)
class Source:
    """An acceptance source read from ``path`` (a result of ``kind``)."""

    path: Path
    option: str
    kind: str
    candidates: tuple[SourceCandidate, ...]
    exact: bool | None  # replay's: every replayed request was greedy (None: not a replay)
    data: Mapping[str, Any]  # the result file as read

    @property
    def categories(self) -> dict[str, int]:
        """Requests per category (the first candidate's: every candidate saw the same requests)."""
        first = self.candidates[0]
        return {c: f.requests for c, f in first.categories.items()} or {"all": first.overall.requests}

    def candidate(self, wanted: str | None, option: str = "--candidate") -> SourceCandidate:
        """The candidate ``wanted`` names: ``METHOD@k``, ``METHOD@k=K``, its label, or ``METHOD`` alone
        where the result holds it at one k (None: the result's only candidate); one error line listing the
        names otherwise."""
        names = ", ".join(c.name for c in self.candidates)
        if wanted is None:
            if len(self.candidates) == 1:
                return self.candidates[0]
            raise AcceptanceSourceError(
                f"{option}: {self.path} holds several candidates; name one of {names}"
            )
        key = wanted.strip()
        if "@" in key:
            method, _, k = key.rpartition("@")
            key = f"{method}@{k.removeprefix('k=')}"
        found = [c for c in self.candidates if key in (c.name, c.draft)]
        if len(found) == 1:
            return found[0]
        if not found:
            raise AcceptanceSourceError(f"{option} {wanted!r}: {self.path} holds no such candidate ({names})")
        raise AcceptanceSourceError(
            f"{option} {wanted!r}: {self.path} holds it at several k; name one of {names}"
        )


def read_source(path: Path, option: str) -> Source:
    """The result file ``path`` (given with ``option``) as an acceptance source: a replay result, or a
    bench/select/tune result, whose candidates have per-position acceptance."""
    from specmeter.report.validate import validate_result

    try:
        data = jsonsafe.loads(inputs.read_text(path), surrogates=True)
    except InputError as e:
        raise AcceptanceSourceError(f"{option}: {path} is {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise AcceptanceSourceError(f"{option}: {path}: unreadable ({e})") from None
    except json.JSONDecodeError as e:
        raise AcceptanceSourceError(f"{option}: {path}: not JSON ({e.msg} at line {e.lineno})") from None
    kind = data.get("kind") if isinstance(data, Mapping) else None
    if kind not in SOURCE_KINDS:
        what = f"a {kind} result" if isinstance(kind, str) else "not a specmeter result file"
        raise AcceptanceSourceError(
            f"{option}: {path} is {what}, not a replay or bench result (run specmeter replay --json)"
        )
    assert isinstance(data, Mapping)
    problems = validate_result(data, limit=1)
    if problems:
        raise AcceptanceSourceError(f"{option}: {path}: {problems[0]}")
    candidates = []
    for c in data.get("candidates") or []:
        k, draft = c.get("k"), c.get("draft")
        if not isinstance(k, int) or k < 1 or draft is None:
            continue
        overall = figures_of(c.get("summary") or {})
        if not overall.drafted:
            continue
        categories = {str(n): figures_of(s) for n, s in (c.get("by_category") or {}).items() if s}
        candidates.append(SourceCandidate(str(draft), k, overall, categories))
    if not candidates:
        raise AcceptanceSourceError(
            f"{option}: {path} has no candidate with drafted tokens (nothing was replayed or measured)"
        )
    section = data.get("replay")
    exact = section.get("exact") if isinstance(section, Mapping) else None
    exact = exact if isinstance(exact, bool) else None
    return Source(Path(path), option, str(kind), tuple(candidates), exact, data)
