"""Measure the cost surface t_step(B, k) — and with it t_T(B, n) and t_D(B, 1) — in the loop's own rhythm.

The batch-1 cost curve (``engine.costs``) times forwards in isolation and leaves the loop's bookkeeping to
a fitted overhead; in ``benchmarks/engine_vs_hf.py`` that made verification look 17% and drafting 24%
cheaper than inside the loop (caches evicted by the other model's forward, the context growing, the
sampling and rollback around each forward). Here nothing is isolated: the surface is a run of the real
``BatchedDecoder`` on the workload's own prompts and token limit, B rows kept live by letting the next
prompt join as soon as one finishes, every forward as in a measured run. Only acceptance is fixed: the
verifier accepts with the per-position rates the workload showed (synthetic mode, vLLM's semantics), so the
catch-up forwards after full accepts, the emitted tokens and the growth of the contexts are those of the
real run while the measurement does not depend on what the draft happens to propose.

Each (B, k) point is the median of ``repeats`` steps taken at exactly B live rows and k drafts, after a
warm-up of two steps; the steps are collected a chunk at a time, cell after cell, and :class:`SurfaceSampler`
lets a caller interleave the chunks with the runs the surface predicts (between waves, between prompts), so
slow drift of a shared machine hits both alike. Steps during which a row joined include no prefill (that
runs between steps).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from typing import Any

from specmeter.engine.base import BatchedCausalLM
from specmeter.engine.batched import BatchedDecoder, SequenceRequest, StepTiming
from specmeter.metrics.batch_surface import CostSurface, SurfacePoint, spread

__all__ = ["SurfaceSampler", "measure_cost_surface", "measure_lookup_time"]

WARMUP_STEPS = 2


def _collect(
    target: BatchedCausalLM,
    draft: BatchedCausalLM | None,
    prompts: Sequence[Sequence[int]],
    start: int,
    batch: int,
    k: int,
    rates: Sequence[float],
    max_tokens: int,
    eos_ids: frozenset[int],
    steps: int,
) -> tuple[list[StepTiming], int]:
    """``steps`` timed steps at exactly ``batch`` rows and ``k`` drafts; returns them and the next prompt."""
    timed: list[StepTiming] = []
    seen = 0

    def on_step(t: StepTiming) -> None:
        nonlocal seen
        if t.batch == batch and t.depth == k:
            seen += 1
            if seen > WARMUP_STEPS:
                timed.append(t)

    decoder = BatchedDecoder(
        target, draft if k else None, schedule=k, max_batch=batch, eos_ids=eos_ids,
        synthetic=list(rates[:k]) if k else None, on_step=on_step, seed=start,
    )  # fmt: skip
    nxt = start
    guard = 0
    rng = random.Random(start)
    # A chunk lives a few steps; started at their prompts, its rows would all be timed at the beginning of
    # their output, where attention is cheapest. Each row instead starts at a random point of its output
    # (the prompt followed by that many tokens, prefilled outside the timing) and runs to the prompt + the
    # token limit, so the timed steps see contexts spread over the whole output, as a run's steps do.
    room = (WARMUP_STEPS + steps + 1) * (k + 1) + 1
    while len(timed) < steps:
        while decoder.free_rows > 0:  # keep B rows live: the next prompt joins as soon as a row frees
            prompt = list(prompts[nxt % len(prompts)])
            done = rng.randrange(max(1, max_tokens - room))
            filler = [prompt[i % len(prompt)] for i in range(done)]
            decoder.add(SequenceRequest(prompt + filler, max_tokens - done))
            nxt += 1
        decoder.step()
        guard += 1
        if guard > 50 * (steps + WARMUP_STEPS) + 100:
            break  # a token limit too short to ever run a full step at k: return what there is
    return timed, nxt


class SurfaceSampler:
    """Collects the surface a few steps at a time, so it can be interleaved with the runs it predicts.

    ``sample()`` times one chunk of the cell (B, k) that has the fewest steps so far; ``surface()`` gives the
    medians of everything collected. ``rates(k)`` is asked for the acceptance to verify with each time a
    chunk starts, so a caller can pass what the runs have measured so far.
    """

    def __init__(
        self,
        target: BatchedCausalLM,
        draft: BatchedCausalLM | None,
        prompts: Sequence[Sequence[int]],
        *,
        batches: Sequence[int],
        ks: Sequence[int],
        rates: Callable[[int], Sequence[float]],
        max_tokens: int,
        eos_ids: frozenset[int] = frozenset(),
        repeats: int = 9,
        chunk: int = 3,
    ) -> None:
        if not prompts:
            raise ValueError("no prompts to time the surface on")
        if draft is None and any(k > 0 for k in ks):
            raise ValueError("a surface with k > 0 needs a draft")
        self.target, self.draft, self.prompts = target, draft, prompts
        self.rates, self.eos_ids, self.repeats, self.chunk = rates, eos_ids, repeats, max(1, chunk)
        # Long enough that a row lives through a few full steps even at the largest k.
        self.max_tokens = max(max_tokens, 2 * (max(ks) + 1) + 2)
        self.cells = [(b, k) for b in sorted(set(batches)) for k in sorted(set(ks))]
        self.timings: dict[tuple[int, int], list[StepTiming]] = {cell: [] for cell in self.cells}
        self.used_rates: dict[int, tuple[float, ...]] = {}
        self._next_prompt = 0
        self._turn = 0
        self._given_up: set[tuple[int, int]] = set()

    @property
    def chunks_left(self) -> int:
        return sum(
            -(-max(0, self.repeats - len(t)) // self.chunk)
            for cell, t in self.timings.items()
            if cell not in self._given_up
        )

    @property
    def done(self) -> bool:
        return self.chunks_left == 0

    def sample(self) -> None:
        """Time one chunk of the least-sampled cell (in turn, so the order alternates)."""
        if self.done:
            return
        open_cells = [c for c in self.cells if c not in self._given_up]
        fewest = min(len(self.timings[c]) for c in open_cells)
        candidates = [c for c in open_cells if len(self.timings[c]) == fewest]
        b, k = candidates[self._turn % len(candidates)] if self._turn % 2 == 0 else candidates[-1]
        self._turn += 1
        rates = tuple(self.rates(k)[:k]) if k else ()
        if len(rates) < k:
            raise ValueError(f"need an acceptance rate for each of {k} positions, got {len(rates)}")
        self.used_rates[k] = rates
        need = min(self.chunk, self.repeats - len(self.timings[(b, k)]))
        got, self._next_prompt = _collect(
            self.target, self.draft, self.prompts, self._next_prompt, b, k, rates, self.max_tokens,
            self.eos_ids, need,
        )  # fmt: skip
        if not got:  # nothing can be timed at this cell (token limit too short): do not ask again
            self._given_up.add((b, k))
        self.timings[(b, k)].extend(got)

    def surface(self) -> CostSurface:
        points = []
        for b, k in self.cells:
            ts = self.timings[(b, k)]
            if not ts:
                continue
            step = [t.step_s for t in ts]
            point = SurfacePoint(
                batch=b, k=k, step_s=statistics.median(step),
                draft_s=statistics.median(t.draft_s for t in ts),
                verify_s=statistics.median(t.verify_s for t in ts),
                step_spread=spread(step), steps=len(ts),
            )  # fmt: skip
            points.append(point)
        top = max((k for _, k in self.cells), default=0)
        return CostSurface(points=tuple(points), rates=self.used_rates.get(top, ()), repeats=self.repeats)


def measure_cost_surface(
    target: BatchedCausalLM,
    draft: BatchedCausalLM | None,
    prompts: Sequence[Sequence[int]],
    *,
    batches: Sequence[int],
    ks: Sequence[int],
    rates: Sequence[float],
    max_tokens: int,
    eos_ids: frozenset[int] = frozenset(),
    repeats: int = 9,
) -> CostSurface:
    """t_step(B, k) for every B in ``batches`` and k in ``ks`` (0 = plain decoding), ``repeats`` steps each.

    ``rates`` are the unconditional per-position acceptance rates to verify with (at least max(ks) of
    them); ``prompts`` are the workload's prompts (token ids), reused in turn. EOS is ignored unless
    ``eos_ids`` is given, so sequences run to ``max_tokens`` as a long-enough workload would.
    """
    sampler = SurfaceSampler(
        target, draft, prompts, batches=batches, ks=ks, rates=lambda k: rates, max_tokens=max_tokens,
        eos_ids=eos_ids, repeats=repeats,
    )  # fmt: skip
    while not sampler.done:
        sampler.sample()
    return sampler.surface()


def measure_lookup_time(
    target: BatchedCausalLM,
    proposer: Any,
    prompts: Sequence[Sequence[int]],
    *,
    batches: Sequence[int],
    k: int,
    max_tokens: int,
    eos_ids: frozenset[int] = frozenset(),
    steps: int = 27,
) -> dict[int, tuple[float, float, int]]:
    """A model-free proposer's host time per row and step, timed in the loop: ``steps`` steps of the real
    ``BatchedDecoder`` at each batch size (greedy verification, the workload's prompts, rows joining as
    others finish), after the same warm-up as the surface. Per B: (median seconds per row, IQR, steps).

    Every step is timed, those where the lookup found nothing too: a lookup costs its time whether or not
    it matches. The per-row figure is the step's proposing time over its rows (the rows are looked up one
    after the other on the host)."""
    out: dict[int, tuple[float, float, int]] = {}
    for b in sorted(set(batches)):
        times: list[float] = []
        seen = 0

        def on_step(t: StepTiming, b: int = b, times: list[float] = times) -> None:
            nonlocal seen
            if t.batch == b:
                seen += 1
                if seen > WARMUP_STEPS:
                    times.append(t.draft_s / b)

        decoder = BatchedDecoder(target, proposer, schedule=k, max_batch=b, eos_ids=eos_ids, on_step=on_step)
        nxt = guard = 0
        while len(times) < steps and guard < 50 * (steps + WARMUP_STEPS) + 100:
            while decoder.free_rows > 0:
                decoder.add(SequenceRequest(list(prompts[nxt % len(prompts)]), max_tokens))
                nxt += 1
            decoder.step()
            guard += 1
        if times:
            out[b] = (statistics.median(times), spread(times), len(times))
    return out
