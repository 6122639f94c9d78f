"""A cost file read once: each candidate's step parts per batch size, where they come from, and how sure.

A step of B rows that drafts up to D tokens costs (docs/metrics.md, "Every method at its own price")

    t_step(B, D) = t_target(B, D) + t_propose(method, B, D)

``t_target`` is the target's verification of D + 1 positions per row plus the loop's bookkeeping: the
same for every method on one machine. It is read from every surface in the file (``step − draft`` at each
timed point) and pooled by the median, so one noisy surface does not decide it. ``t_propose`` is the
candidate's own: a draft model's, head's or ``layers:n``'s forwards from the surface timed *with that
candidate* (``tune --batch --draft A --draft B …``, ``bench --batch``), a model-free method's host time
(timed by ``tune --batch`` on the engine's own lookup, or per step by replay). A candidate without a cost
of its own borrows the nearest one and is marked (:class:`ProposeCost`): its figure is then an estimate.

Three files carry surfaces: ``tune --batch`` (``batch.surfaces``, one per candidate; older files
``batch.surface``, the first draft's), ``bench --batch`` (``batch.surfaces``, one per candidate). Every
cell is validated (numbers, finite, in range; one line naming the file and field), and the surface's
trust travels with it: the machine verdict of the run that timed it and its noisy points.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specmeter import inputs, jsonsafe
from specmeter.metrics.batch_surface import CostSurface, SurfacePoint

__all__ = [
    "MAX_BATCH",
    "MAX_COST_FILE_BYTES",
    "CostBook",
    "CostsError",
    "ProposeCost",
    "candidate_key",
    "is_model_free",
    "machine_warning",
    "read_cost_file",
    "result_verdict",
    "walk_nodes",
]

MS = 1000.0
MAX_BATCH = 4096  # the largest batch size a cell may name
MAX_K = 256
MAX_POINTS = 100_000
MAX_STEP_MS = 3_600_000.0  # an hour per step: beyond, the number is not a time
MAX_COST_FILE_BYTES = 256 * 1024 * 1024
UNTRUSTED_VERDICTS = ("busy", "unusable")


class CostsError(ValueError):
    """``--costs`` names a file that cannot price anything; one line naming the file and the field."""


def machine_warning(verdict: object, what: str = "the cost surface") -> str | None:
    """The line a prediction priced on a run judged busy or unusable (its ``hygiene.verdict``) carries, or
    None for a quiet or unjudged run."""
    if verdict not in UNTRUSTED_VERDICTS:
        return None
    return (
        f"{what} was timed on a machine judged {verdict}: every predicted E is uncertain; "
        "time it again on a quiet machine"
    )


def result_verdict(data: object) -> str | None:
    """A result file's machine verdict (``hygiene.verdict``), or None."""
    hygiene = data.get("hygiene") if isinstance(data, Mapping) else None
    verdict = hygiene.get("verdict") if isinstance(hygiene, Mapping) else None
    return verdict if isinstance(verdict, str) else None


def is_model_free(label: str) -> bool:
    """A method that proposes on the host, with no model (n-gram family, suffix decoding: ``methods``'
    ``model_free``); a label that parses as no method is a model."""
    from specmeter.methods import METHODS

    method = METHODS.get(label.split(":", 1)[0])
    return method is not None and method.model_free and not Path(label).is_dir()


def candidate_key(label: str) -> str:
    """The name by which a cost file's surfaces and a result's candidates meet: a method spec as written
    (``ngram:min=2,max=4``), a draft directory by its last path component (``draft-legal``)."""
    text = label.strip().rstrip("/")
    if ":" in text.split("/", 1)[0] and not text.startswith(("/", ".")):
        return text  # a method spec (its head= path included: two heads are two candidates)
    return Path(text).name or text


@dataclass(frozen=True)
class ProposeCost:
    """What proposing costs a candidate at (B, D), in seconds, and what the figure stands on.

    ``basis``: ``measured`` (this candidate, timed in the loop), ``lookup`` (a model-free method's host
    time, ``per_row_s`` a row at each step), ``borrowed`` (another candidate's: ``source`` names it; the
    figure is an estimate) or ``none`` (nothing to price it with).
    """

    basis: str
    source: str | None = None
    surface: CostSurface | None = None
    per_row_s: float | None = None
    origin: str | None = None  # where a lookup time comes from (tune's timing, replay's own)
    per_row_by_batch: Mapping[int, float] = field(default_factory=dict)  # the lookup timed at each B

    @property
    def borrowed(self) -> bool:
        return self.basis == "borrowed"

    def at(self, batch: int, depth: int) -> float | None:
        """Seconds of proposing for a step of ``batch`` rows whose longest draft is ``depth``."""
        if self.basis == "lookup":
            per_row = self.per_row_by_batch.get(batch, self.per_row_s)
            return None if per_row is None else per_row * batch
        if self.surface is None:
            return None
        if depth == 0:
            return 0.0
        return _interpolate(self.surface, batch, depth, lambda p: p.draft_s)

    def describe(self) -> str:
        if self.basis == "measured":
            return "its own proposing cost, timed in the loop"
        if self.basis == "lookup":
            per = "—" if self.per_row_s is None else f"{self.per_row_s * 1e6:.0f} µs"
            return f"host lookup, {per} per row and step ({self.origin})"
        if self.basis == "borrowed":
            return f"borrowed: {self.source}'s proposing cost (an estimate; time this candidate for its own)"
        return "no proposing cost"


def _interpolate(surface: CostSurface, batch: int, depth: int, part: Any) -> float | None:
    """A part of the step at (B, depth): measured, or linear in depth between the timed ks at B. None past
    the largest timed k (no extrapolation) or at a batch size the surface lacks."""
    pts = sorted((p.k, float(part(p))) for p in surface.points if p.batch == batch)
    if not pts:
        return None
    for k, v in pts:
        if k == depth:
            return v
    below = [x for x in pts if x[0] < depth]
    above = [x for x in pts if x[0] > depth]
    if not below or not above:
        return None
    (k0, v0), (k1, v1) = below[-1], above[0]
    return v0 + (v1 - v0) * (depth - k0) / (k1 - k0)


@dataclass(frozen=True)
class CostBook:
    """Every surface of one cost file, keyed by :func:`candidate_key`, and what can be said of their trust."""

    path: Path
    kind: str
    surfaces: Mapping[str, CostSurface]
    # model-free: seconds per row and step, overall and per batch size
    lookups: Mapping[str, float] = field(default_factory=dict)
    lookups_by_batch: Mapping[str, Mapping[int, float]] = field(default_factory=dict)
    verdict: str | None = None  # the machine verdict of the run that timed them

    @property
    def batches(self) -> list[int]:
        """Batch sizes at which every surface has a plain step (k = 0)."""
        common: set[int] | None = None
        for s in self.surfaces.values():
            have = {p.batch for p in s.points if p.k == 0}
            common = have if common is None else common & have
        return sorted(common or ())

    @property
    def max_depth(self) -> int:
        return max((p.k for s in self.surfaces.values() for p in s.points), default=0)

    def noisy(self) -> list[str]:
        """``name B=b k=k`` of every point whose spread is above ``NOISY_SPREAD`` of its median."""
        return [f"{n} B={p.batch} k={p.k}" for n, s in self.surfaces.items() for p in s.points if p.noisy]

    def trust_lines(self) -> list[str]:
        """What a reader of a prediction priced with this book must know (empty: nothing to say)."""
        lines = []
        machine = machine_warning(self.verdict)
        if machine is not None:
            lines.append(machine)
        noisy = self.noisy()
        if noisy:
            shown = ", ".join(noisy[:4]) + (f" and {len(noisy) - 4} more" if len(noisy) > 4 else "")
            lines.append(f"noisy cost points (spread above 25% of the median): {shown}")
        return lines

    def target_s(self, batch: int, depth: int) -> float | None:
        """t_target(B, D): the step without its proposing, the median over the surfaces that timed it."""
        surfaces = self.surfaces.values()
        found = (_interpolate(s, batch, depth, lambda p: p.step_s - p.draft_s) for s in surfaces)
        values = [v for v in found if v is not None]
        if not values:
            return None
        values.sort()
        mid = len(values) // 2
        return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

    def propose(self, label: str, replay_lookup_s: float | None = None) -> ProposeCost:
        """The proposing cost of ``label``: its own surface, its lookup time (this file's, else replay's),
        or a borrowed one (marked)."""
        key = candidate_key(label)
        if is_model_free(label):
            if key in self.lookups:
                return ProposeCost(
                    "lookup", per_row_s=self.lookups[key], origin="timed by tune on the engine"
                )
            method = key.split(":", 1)[0]
            same = [v for n, v in self.lookups.items() if n.split(":", 1)[0] == method]
            if same:
                return ProposeCost(
                    "lookup", per_row_s=max(same), origin=f"{method} with other keys, timed by tune"
                )
            if replay_lookup_s is not None:
                return ProposeCost("lookup", per_row_s=replay_lookup_s, origin="measured by replay")
            return ProposeCost("lookup", per_row_s=0.0, origin="not timed: priced as free, an upper bound")
        if key in self.surfaces:
            return ProposeCost("measured", source=key, surface=self.surfaces[key])
        if not self.surfaces:
            return ProposeCost("none")
        first = next(iter(self.surfaces))
        return ProposeCost("borrowed", source=first, surface=self.surfaces[first])


def walk_nodes(obj: Any, depth: int = 0) -> Iterator[Mapping[str, Any]]:
    """Every object inside a JSON value, depth first (12 levels at most: a result is shallower)."""
    if depth > 12:
        return
    if isinstance(obj, Mapping):
        yield obj
        for v in obj.values():
            yield from walk_nodes(v, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            yield from walk_nodes(v, depth + 1)


def _number(value: Any, where: str, lo: float, hi: float, *, integer: bool = False) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and isinstance(value, float) and not math.isfinite(value):
        ok = False
    if not ok or not lo <= value <= hi or (integer and int(value) != value):
        kind = "an integer" if integer else "a number"
        raise CostsError(f"{where}: must be {kind} in [{lo:g}, {hi:g}], got {value!r}")
    return float(value)


def surface_from_section(section: Mapping[str, Any], where: str) -> CostSurface:
    """A surface section (``points`` with batch, k, step_ms, draft_ms, verify_ms, step_spread_ms, steps),
    every cell validated."""
    raw = section.get("points")
    if not isinstance(raw, list) or not raw:
        raise CostsError(f"{where}.points: not a list of points")
    if len(raw) > MAX_POINTS:
        raise CostsError(f"{where}.points: {len(raw)} points, more than {MAX_POINTS}")
    points = []
    for i, p in enumerate(raw):
        at = f"{where}.points[{i}]"
        if not isinstance(p, Mapping):
            raise CostsError(f"{at}: not an object")
        b = int(_number(p.get("batch"), f"{at}.batch", 1, MAX_BATCH, integer=True))
        k = int(_number(p.get("k"), f"{at}.k", 0, MAX_K, integer=True))
        step = _number(p.get("step_ms"), f"{at}.step_ms", 0, MAX_STEP_MS) / MS
        draft = _number(p.get("draft_ms") or 0, f"{at}.draft_ms", 0, MAX_STEP_MS) / MS
        verify = _number(p.get("verify_ms") or 0, f"{at}.verify_ms", 0, MAX_STEP_MS) / MS
        spread = _number(p.get("step_spread_ms") or 0, f"{at}.step_spread_ms", 0, MAX_STEP_MS) / MS
        steps = int(_number(p.get("steps") or 0, f"{at}.steps", 0, 1e12, integer=True))
        if step <= 0:
            raise CostsError(f"{at}.step_ms: a step takes time, got {p.get('step_ms')!r}")
        if draft > step:
            raise CostsError(f"{at}.draft_ms: {draft * MS:g} ms of drafting in a {step * MS:g} ms step")
        points.append(SurfacePoint(b, k, step, draft, verify, spread, steps))
    if len({(p.batch, p.k) for p in points}) != len(points):
        raise CostsError(f"{where}.points: a (batch, k) point appears twice")
    return CostSurface(tuple(points))


def read_json(path: Path, option: str = "--costs") -> Any:
    """The cost file's JSON: a regular file of bounded size (``specmeter.inputs``: a FIFO would block, a
    device never end), or one line naming the option and the file."""
    try:
        return jsonsafe.loads(inputs.read_text(path, MAX_COST_FILE_BYTES))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise CostsError(f"{option}: {path}: cannot read a JSON result ({e})") from None


def _lookups(section: Mapping[str, Any], where: str) -> tuple[dict[str, float], dict[str, dict[int, float]]]:
    raw = section.get("lookups")
    if raw is None:
        return {}, {}
    if not isinstance(raw, Mapping):
        raise CostsError(f"{where}.lookups: not an object")
    out: dict[str, float] = {}
    by_batch: dict[str, dict[int, float]] = {}
    for name, entry in raw.items():
        at = f"{where}.lookups.{name}"
        if not isinstance(entry, Mapping):
            raise CostsError(f"{at}: not an object")
        key = candidate_key(str(name))
        out[key] = _number(entry.get("per_row_ms"), f"{at}.per_row_ms", 0, MAX_STEP_MS) / MS
        batches = entry.get("by_batch") or {}
        if not isinstance(batches, Mapping):
            raise CostsError(f"{at}.by_batch: not an object")
        for b, cell in batches.items():
            if not isinstance(cell, Mapping) or not str(b).isdigit() or not 1 <= int(str(b)) <= MAX_BATCH:
                raise CostsError(f"{at}.by_batch.{b}: not a batch size with its time")
            ms = _number(cell.get("per_row_ms"), f"{at}.by_batch.{b}.per_row_ms", 0, MAX_STEP_MS)
            by_batch.setdefault(key, {})[int(str(b))] = ms / MS
    return out, by_batch


def book_from(data: Any, path: Path) -> CostBook | None:
    """The book of a ``tune --batch`` or ``bench --batch`` result; None when the file holds no surface."""
    if not isinstance(data, Mapping):
        return None
    kind = str(data.get("kind", "result"))
    verdict = result_verdict(data)
    surfaces: dict[str, CostSurface] = {}
    lookups: dict[str, float] = {}
    by_batch: dict[str, dict[int, float]] = {}
    for node in walk_nodes(data):
        many = node.get("surfaces")
        if isinstance(many, Mapping) and many:
            for name, section in many.items():
                if isinstance(section, Mapping) and isinstance(section.get("points"), list):
                    surfaces.setdefault(
                        candidate_key(str(name)), surface_from_section(section, f"surfaces.{name}")
                    )
            overall, each = _lookups(node, "batch")
            lookups.update(overall)
            by_batch.update(each)
        one = node.get("surface")
        if isinstance(one, Mapping) and isinstance(one.get("points"), list) and one["points"]:
            first = one["points"][0]
            if isinstance(first, Mapping) and {"batch", "k", "step_ms"} <= set(first):
                name = node.get("draft") or one.get("draft") or _first_draft(data) or "draft"
                surfaces.setdefault(candidate_key(str(name)), surface_from_section(one, "surface"))
    if not surfaces:
        return None
    return CostBook(path, kind, surfaces, lookups, by_batch, verdict)


def _first_draft(data: Mapping[str, Any]) -> str | None:
    for c in data.get("candidates") or []:
        if isinstance(c, Mapping) and isinstance(c.get("draft"), str):
            return str(c["draft"])
    return None


def read_cost_file(path: Path) -> tuple[Any, CostBook | None]:
    """(the file's JSON, its book or None when it holds what-if or sweep cells instead)."""
    data = read_json(path)
    return data, book_from(data, path)
