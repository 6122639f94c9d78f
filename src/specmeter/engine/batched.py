"""Batched speculative decoding with continuous batching: B sequences, one draft pass and one verification.

Vocabulary (as in ``engine.speculative``): ``p`` target distribution, ``q`` draft distribution, ``y`` drafted
tokens, ``d`` tokens drafted for a row in a step, ``a`` accepted. A *row* is a live sequence's place in the
batched KV caches of both models; rows 0 … B-1 are always the live ones.

One step of B live rows:

1. ``k`` comes from the batch-size schedule for B (vLLM's ``num_speculative_tokens_per_batch_size``
   semantics, ``engine.schedule``; k = 0 is plain decoding). Each row drafts d_r = min(k, tokens it may
   still produce − 1), so no step makes tokens a request would throw away.
2. The proposer (``engine.proposers.proposer``) proposes up to d_r tokens per row. A draft model does it in
   lockstep: one forward over every row's catch-up tokens (what its cache lacks of the committed
   sequence: the correction token, or the last draft token and the bonus token after a fully accepted
   step, or more after steps at k = 0), then D − 1 single-token forwards of B rows, D = max d_r. A
   model-free method reads its tokens off each row's context and may propose fewer than d_r (none when
   nothing matches); the row then verifies what it got.
3. The target verifies every row's d_r + 1 positions in ONE forward of B rows (padding and a mask,
   ``NativeLlama.forward_rows`` says why not packed).
4. Each row accepts its own prefix (greedy exact match, or rejection sampling with the row's own generator
   and sampling parameters), commits, and rolls back its own caches (a length per row, nothing is copied).
5. Finished rows leave (EOS, token limit, or ``on_emit`` asking to stop); the last row moves into the hole
   so rows stay 0 … B-1. Waiting sequences join between steps: their prompts are prefilled together in one
   forward of the joining rows (target and draft model), their first token is emitted, and they decode with
   everyone else from the next step on. With ``pause_for_joins`` the live rows' clocks stop during that
   prefill (``bench --batch`` measures decode at B rows kept live).

Every row of a step records the step's wall times (``draft_s``, ``verify_s``: the batch lived through
them together), the batch size and the k scheduled (``StepRecord.batch``, ``StepRecord.k``). A row that
joined or left changes B for the *next* step; prefill of joiners happens between steps and shows up as a
longer gap in the other rows' emissions, as in an engine without chunked prefill.

With B = 1 and a constant k this is the single-stream loop of ``engine.speculative`` (tested token for
token); that module stays the batch-1 engine of ``bench``/``tune`` because it skips the row bookkeeping.

**Synthetic acceptance** (``synthetic=[r_1, …, r_K]``): every forward runs as usual, but the verifier accepts
draft position i with vLLM's ``rejection_sample_method: "synthetic"`` semantics — r_i is the unconditional
probability that the first i drafts are all accepted (non-increasing), so position i is accepted with the
conditional rate r_i / r_{i-1} given the ones before it; the token after the last accepted draft is the
target's own (argmax, or a draw from p). Outputs are not meaningful text; the step costs are real. The cost
surface (``engine.surface``) times steps this way, at the acceptance the workload showed.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import torch

from specmeter.engine.base import BatchedCausalLM, hidden_states, reserve_rows, synchronize
from specmeter.engine.proposers.proposer import Proposer, as_proposer
from specmeter.engine.sampling import SamplingParams, Verdict, probs, sample, verify_sampling
from specmeter.engine.schedule import KSchedule
from specmeter.engine.speculative import Generation
from specmeter.metrics.records import Emission, FinishReason, StepRecord

__all__ = ["BatchedDecoder", "SequenceRequest", "StepTiming", "conditional_rates", "decode_batch"]

GREEDY = SamplingParams()


@dataclass
class SequenceRequest:
    """One sequence to decode; ``tag`` is the caller's handle, returned with its Generation."""

    prompt_ids: Sequence[int]
    max_tokens: int
    params: SamplingParams = GREEDY
    generator: torch.Generator | None = None
    on_emit: Callable[[list[int]], bool | None] | None = None
    tag: Any = None
    # A row that only keeps the batch full while measured sequences decode (``engine.batch_runner``): a
    # proposer that learns across sequences (suffix decoding) forgets it when it ends (``Proposer.discard``).
    background: bool = False


@dataclass(frozen=True)
class StepTiming:
    """One decode step of the whole batch: its size, k, and where its wall time went (seconds).

    ``step_s`` runs from the step's start to the end of committing every row (emissions, ``on_emit``):
    ``draft_s`` + ``verify_s`` + the loop's own bookkeeping. Prefill of joining rows is not in it.
    """

    batch: int
    k: int
    depth: int  # draft forwards run (the longest d_r)
    draft_s: float
    verify_s: float
    step_s: float


def conditional_rates(unconditional: Sequence[float]) -> list[float]:
    """vLLM's ``unconditional_to_conditional_rates``: c_i = r_i / r_{i-1} (r_0 = 1), 0 after a zero."""
    rates = list(unconditional)
    if any(not 0.0 <= r <= 1.0 for r in rates):
        raise ValueError(f"synthetic acceptance rates must be in [0, 1], got {rates}")
    if any(b > a for a, b in itertools.pairwise(rates)):
        raise ValueError(f"synthetic acceptance rates must be non-increasing, got {rates}")
    return [r / q if q > 0 else 0.0 for r, q in zip(rates, [1.0, *rates[:-1]], strict=True)]


@dataclass
class _Row:
    req: SequenceRequest
    t0: float
    seq: list[int]
    out: list[int] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    emissions: list[Emission] = field(default_factory=list)
    prefill_s: float = 0.0
    reason: FinishReason | None = None
    error: BaseException | None = None  # its own sampling raised: it leaves alone, at the end of the step

    def generation(self) -> Generation:
        reason: FinishReason = self.reason or "length"
        return Generation(
            output_ids=tuple(self.out),
            steps=tuple(self.steps),
            emissions=tuple(self.emissions),
            ttft_s=self.emissions[0].t if self.emissions else 0.0,
            latency_s=self.emissions[-1].t if self.emissions else 0.0,
            prefill_s=self.prefill_s,
            finish_reason=reason,
        )


class BatchedDecoder:
    """Continuous batching over one target (and optional proposer); not thread-safe, one caller drives it.

    ``add`` queues a sequence; ``step`` admits waiting sequences into free rows (prefill) and runs one
    speculative step for every live row; it returns the sequences that finished, with their Generation.
    ``draft`` is a :class:`Proposer` or a draft model (wrapped in a ``DraftModelProposer``).
    ``schedule`` is a :class:`KSchedule` or a constant k; with no proposer every step is plain decoding.
    The models' batched caches belong to this decoder while it is in use.
    """

    def __init__(
        self,
        target: BatchedCausalLM,
        draft: BatchedCausalLM | Proposer | None,
        *,
        schedule: KSchedule | int,
        max_batch: int,
        eos_ids: Collection[int],
        synthetic: Sequence[float] | None = None,
        on_step: Callable[[StepTiming], None] | None = None,
        seed: int = 0,
        pause_for_joins: bool = False,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self.schedule = schedule if isinstance(schedule, KSchedule) else KSchedule.constant(max(0, schedule))
        self.k_max = self.schedule.max_k
        self.target = target
        # A proposer that the schedule never uses is not run at all (``--k 0`` with a draft is a baseline).
        self.proposer = as_proposer(draft) if self.k_max > 0 else None
        self.max_batch = max_batch
        self.eos_ids = eos_ids
        self.vocab = target.vocab_size
        if self.proposer is not None and self.proposer.vocab_size is not None:
            self.vocab = min(self.vocab, self.proposer.vocab_size)
        self._live: list[_Row] = []
        self._waiting: deque[_Row] = deque()
        self.on_step = on_step
        # The live rows' clocks stop while joining rows are prefilled: their emission times (and so
        # latency − TTFT) then hold decode steps only, as when every row is prefilled before any decodes.
        # For measuring decode at B rows kept live (``bench --batch``); a server keeps wall time.
        self.pause_for_joins = pause_for_joins
        self._synthetic: list[float] | None = None
        if synthetic is not None:
            if len(synthetic) < self.k_max:
                raise ValueError(f"synthetic acceptance needs a rate for each of {self.k_max} positions")
            self._synthetic = conditional_rates(synthetic)
        self._uniform = torch.Generator().manual_seed(seed)  # synthetic draws of rows without a generator
        # Rows whose own sampling raised, by tag: they leave with finish reason "interrupted" and the
        # caller takes their error from here (``pop_error``); the other rows go on (issue 29).
        self.errors: dict[Any, BaseException] = {}
        target.batch_reset(max_batch, 256)
        if self.proposer is not None:
            self.proposer.open(max_batch, 256, self.vocab, batched=True)

    @property
    def live(self) -> int:
        return len(self._live)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def free_rows(self) -> int:
        return self.max_batch - len(self._live) - len(self._waiting)

    def add(self, req: SequenceRequest) -> None:
        """Queue a sequence; it joins at the start of the next ``step`` if a row is free."""
        if not req.prompt_ids:
            raise ValueError("empty prompt")
        if req.max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        need = len(req.prompt_ids) + req.max_tokens + self.k_max + 1
        self.target.batch_reserve(need)  # raises (one line) when the model's context is too short
        if self.proposer is not None:
            self.proposer.reserve(need)
        self._waiting.append(_Row(req=req, t0=perf_counter(), seq=list(req.prompt_ids)))

    def step(self) -> list[tuple[Any, Generation]]:
        """Admit waiting sequences, run one step of every live row; the (tag, Generation) of those done."""
        done = self._admit()
        if self._live:
            done += self._decode()
        return done

    def pop_error(self, tag: Any) -> BaseException | None:
        """The error that ended the sequence ``tag`` alone, if one did (its Generation says "interrupted")."""
        return self.errors.pop(tag, None)

    def abandon(self) -> None:
        """End every live and waiting sequence without a result (their rows are freed; nothing is returned).

        Background rows are discarded from the proposer's memory, the others finish as usual.
        """
        for r in range(len(self._live) - 1, -1, -1):
            self._end(r)
        self._live.clear()
        self._waiting.clear()

    def run(self) -> list[tuple[Any, Generation]]:
        """Step until nothing is live or waiting."""
        done: list[tuple[Any, Generation]] = []
        while self._live or self._waiting:
            done += self.step()
        return done

    # -------------------------------------------------------------------------------------------- steps

    def _choose(self, logits: torch.Tensor, rows: Sequence[_Row]) -> list[int]:
        """One token per row from logits [R, V]: argmax for greedy rows, a draw for sampling rows."""
        tokens: list[int] = logits.argmax(-1).tolist()
        for r, row in enumerate(rows):
            if not row.req.params.greedy and row.error is None:
                try:
                    tokens[r] = sample(probs(logits[r], row.req.params), row.req.generator)
                except Exception as e:  # this row's own sampling: it fails alone
                    row.error = e
        return tokens

    def _admit(self) -> list[tuple[Any, Generation]]:
        joining: list[_Row] = []
        while self._waiting and len(self._live) + len(joining) < self.max_batch:
            joining.append(self._waiting.popleft())
        if not joining:
            return []
        start = len(self._live)
        with torch.inference_mode():
            t0 = perf_counter()
            prompts = [row.seq[:] for row in joining]
            for r in range(len(joining)):
                self.target.rollback_row(start + r, 0)
            reserve_rows(self.target, start, prompts)
            last = self.target.forward_rows(start, prompts, last_only=True)[:, : self.vocab]  # [J, V]
            if self.proposer is not None:
                self.proposer.start(start, prompts)
                if self.proposer.reads_hidden:
                    hidden = hidden_states(self.target)  # [J, n, F]
                    for r, p in enumerate(prompts):
                        self.proposer.observe(start + r, hidden[r, : len(p)])
            first = self._choose(last, joining)
            synchronize(self.target.device)
            prefill_s = perf_counter() - t0
        if self.pause_for_joins:
            for row in self._live:
                row.t0 += prefill_s
        self._live.extend(joining)
        for r, (row, tok) in enumerate(zip(joining, first, strict=True)):
            row.prefill_s = prefill_s
            self._commit(start + r, row, [tok])
        return self._retire()

    def _commit(self, r: int, row: _Row, new: list[int]) -> None:
        """Append ``new`` (cut at EOS) to row ``r``, record the emission, decide whether it is finished."""
        if row.error is not None:  # nothing more reaches its client; it leaves with its error
            row.reason = "interrupted"
            return
        for i, tok in enumerate(new):
            if tok in self.eos_ids:
                new, row.reason = new[: i + 1], "eos"
                break
        row.seq.extend(new)
        row.out.extend(new)
        if self.proposer is not None:
            self.proposer.commit(r, new)
        row.emissions.append(Emission(t=perf_counter() - row.t0, tokens=len(new)))
        stop = bool(row.req.on_emit(new)) if row.req.on_emit is not None else False
        if row.reason is None and len(row.out) >= row.req.max_tokens:
            row.reason = "length"
        if row.reason is None and stop:
            row.reason = "interrupted"

    def _end(self, r: int) -> None:
        """The proposer forgets live row ``r``'s sequence: a background row is discarded, others finish."""
        if self.proposer is not None:
            (self.proposer.discard if self._live[r].req.background else self.proposer.finish)(r)

    def _retire(self) -> list[tuple[Any, Generation]]:
        """Remove finished rows; the last live row moves into each hole so rows stay 0 … B-1."""
        done = []
        for r in range(len(self._live) - 1, -1, -1):
            row = self._live[r]
            if row.reason is None:
                continue
            if row.error is not None:
                self.errors[row.req.tag] = row.error
            done.append((row.req.tag, row.generation()))
            self._end(r)
            last = len(self._live) - 1
            if r != last:
                self.target.move_row(last, r)
                if self.proposer is not None:
                    self.proposer.move(last, r)
                self._live[r] = self._live[last]
            self._live.pop()
        done.reverse()
        return done

    def _decode(self) -> list[tuple[Any, Generation]]:
        rows = self._live
        b = len(rows)
        k = self.schedule.k_for(b, self.k_max) if self.proposer is not None else 0
        ds = [min(k, row.req.max_tokens - len(row.out) - 1) for row in rows]  # d_r per row
        ys: list[list[int]] = [[] for _ in rows]
        qs: list[list[torch.Tensor] | None] = [None for _ in rows]  # q rows of sampling rows, or None
        depth = 0  # draft-model forwards this step
        with torch.inference_mode():
            t_step = perf_counter()
            if max(ds) > 0 and self.proposer is not None:
                drafts = self.proposer.propose(
                    [row.seq for row in rows], ds, [row.req.params for row in rows],
                    [row.req.generator for row in rows],
                )  # fmt: skip
                ys, qs, depth = [p.tokens for p in drafts.rows], [p.q for p in drafts.rows], drafts.forwards
            ds = [len(y) for y in ys]  # what each row got (a method may propose fewer than asked)
            synchronize(self.target.device)
            t_verify = perf_counter()

            # Verify every row's d_r + 1 positions in one target forward of B rows.
            feeds, offsets = [], []
            for r, row in enumerate(rows):
                keep = min(self.target.row_length(r), len(row.seq) - 1)
                self.target.rollback_row(r, keep)
                catch_up = row.seq[keep:]
                offsets.append(len(catch_up) - 1)  # the logits of the last committed token predict y_1
                feeds.append(catch_up + ys[r])
            reserve_rows(self.target, 0, feeds)
            p_logits = self.target.forward_rows(0, feeds)[..., : self.vocab]  # [B, n, V]
            if self._synthetic is None:
                verdicts = self._verify(p_logits, rows, ys, qs, ds, offsets)
            else:
                verdicts = self._verify_synthetic(p_logits, rows, ys, ds, offsets, self._synthetic)
            if self.proposer is not None and self.proposer.reads_hidden:  # catch-up and accepted drafts
                hidden = hidden_states(self.target)  # [B, n, F]
                for r, (accepted, _) in enumerate(verdicts):
                    self.proposer.observe(r, hidden[r, : offsets[r] + 1 + accepted])
            synchronize(self.target.device)
            t_done = perf_counter()

        for r, row in enumerate(rows):
            accepted, token = verdicts[r]
            new = [*ys[r][:accepted], token]
            emitted = len(new)
            for i, tok in enumerate(new):
                if tok in self.eos_ids:
                    emitted = i + 1
                    break
            step = StepRecord(
                drafted=ds[r], accepted=accepted, emitted=emitted, draft_s=t_verify - t_step,
                verify_s=t_done - t_verify, draft_forwards=depth, batch=b, k=k,
            )  # fmt: skip
            row.steps.append(step)
            self._commit(r, row, new)
        if self.on_step is not None:
            timing = StepTiming(b, k, depth, t_verify - t_step, t_done - t_verify, perf_counter() - t_step)
            self.on_step(timing)
        return self._retire()

    def _verify(
        self,
        p_logits: torch.Tensor,
        rows: Sequence[_Row],
        ys: Sequence[list[int]],
        qs: Sequence[list[torch.Tensor] | None],
        ds: Sequence[int],
        offsets: Sequence[int],
    ) -> list[tuple[int, int]]:
        """(accepted, correction-or-bonus token) per row; p_logits [B, n, V], row r's rows at offsets[r]."""
        choice: list[list[int]] = p_logits.argmax(-1).tolist()  # [B, n]
        out = []
        for r, row in enumerate(rows):
            d, o = ds[r], offsets[r]
            if row.req.params.greedy or row.error is not None:
                # [y1, y2, y3] vs target's picks [c1, c2, c3, c4]: accept while equal, then take c_{a+1}.
                picks = choice[r][o : o + d + 1]
                a = 0
                while a < d and picks[a] == ys[r][a]:
                    a += 1
                out.append((a, picks[a]))
            else:
                try:
                    p = probs(p_logits[r, o : o + d + 1], row.req.params)  # [d+1, V]
                    q_rows = qs[r]
                    q = torch.stack(q_rows) if q_rows else None  # None: deterministic, a one-hot q
                    y = torch.tensor(ys[r], dtype=torch.long, device=p.device)
                    v = verify_sampling(p, q, y, row.req.generator)
                except Exception as e:  # this row's own sampling: it fails alone
                    row.error = e
                    v = Verdict(0, choice[r][o])
                out.append((v.accepted, v.token))
        return out

    def _verify_synthetic(
        self,
        p_logits: torch.Tensor,
        rows: Sequence[_Row],
        ys: Sequence[list[int]],
        ds: Sequence[int],
        offsets: Sequence[int],
        conditional: Sequence[float],
    ) -> list[tuple[int, int]]:
        """Accept position i with its conditional rate (vLLM's synthetic mode); then the target's token."""
        choice: list[list[int]] = p_logits.argmax(-1).tolist()
        out = []
        for r, row in enumerate(rows):
            d, o = ds[r], offsets[r]
            draws = torch.rand(d, generator=row.req.generator or self._uniform).tolist() if d else []
            a = 0
            while a < d and draws[a] < conditional[a]:
                a += 1
            token = choice[r][o + a]
            if not row.req.params.greedy and row.error is None:
                try:
                    token = sample(probs(p_logits[r, o + a], row.req.params), row.req.generator)
                except Exception as e:  # this row's own sampling: it fails alone
                    row.error = e
            out.append((a, token))
        return out


def decode_batch(
    target: BatchedCausalLM,
    draft: BatchedCausalLM | Proposer | None,
    requests: Sequence[SequenceRequest],
    *,
    schedule: KSchedule | int,
    max_batch: int,
    eos_ids: Collection[int],
    synthetic: Sequence[float] | None = None,
    on_step: Callable[[StepTiming], None] | None = None,
) -> list[Generation]:
    """Decode ``requests`` with at most ``max_batch`` live at once (the rest join as rows free up).

    Generations come back in the order of ``requests``.
    """
    decoder = BatchedDecoder(
        target, draft, schedule=schedule, max_batch=max_batch, eos_ids=eos_ids, synthetic=synthetic,
        on_step=on_step,
    )  # fmt: skip
    tagged = [SequenceRequest(r.prompt_ids, r.max_tokens, r.params, r.generator, r.on_emit, i)
              for i, r in enumerate(requests)]  # fmt: skip
    for r in tagged:
        decoder.add(r)
    results: dict[int, Generation] = dict(decoder.run())
    if decoder.errors:  # a caller of the whole batch gets the first failure, as before rows failed alone
        raise next(iter(decoder.errors.values()))
    return [results[i] for i in range(len(requests))]
