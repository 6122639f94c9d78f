"""What proposes draft tokens: the interface both decode loops drive, and the draft model behind it.

A *proposer* is modelled on transformers' ``CandidateGenerator`` (``get_candidates`` then
``update_candidate_strategy``): it proposes up to d tokens after each sequence's committed context, then
learns what was committed. The loops (``engine.speculative``, one sequence; ``engine.batched``, rows
0 … B-1) call, in this order:

``open(rows, capacity, vocab, batched)``
    once per single-stream decode (rows = 1, ``batched=False``) or once per ``BatchedDecoder``
    (``batched=True``); ``reserve(capacity)`` later when longer sequences arrive;
``start(first_row, prompts)``
    sequences begin in rows first_row … (the prefill);
``propose(contexts, ds, params, generators)``
    one proposal per live row: at most ``ds[r]`` tokens after ``contexts[r]`` (the committed sequence,
    prompt included), with the draft distribution q of each token when the method has one (a draft model
    sampling at temperature > 0), or ``q=None``: the proposal is deterministic and the verifier treats it
    as drawn from a one-hot q (``engine.sampling.verify_sampling``);
``observe(row, hidden)``
    only for a proposer with ``reads_hidden`` (an EAGLE head): after every target forward (the prefill,
    each verification), the target's hidden states ([n, F], ``engine.base.hidden_states``) of the row's
    next n committed positions: the prompt's, then each step's catch-up token and accepted drafts; the
    proposer has then seen the target's states of every committed position but the last;
``commit(row, tokens)``
    the tokens the row committed after a step (its first token after the prefill included), cut at EOS;
``finish(row)``, ``move(src, dst)``
    a sequence ended; the batched loop moved the last row into a freed one. ``discard(row)`` instead of
    ``finish``: a sequence that only kept the batch full ended, and nothing of it is to be remembered
    across sequences;

A proposer may propose fewer tokens than asked (no n-gram match: none at all); the step then verifies
what there is, and records ``drafted`` as the number proposed. The draft model is one proposer
(:class:`DraftModelProposer`); the baseline is the same loop with no proposer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from specmeter.engine.base import BatchedCausalLM, CausalLM, reserve_rows
from specmeter.engine.sampling import SamplingParams, probs, sample

__all__ = ["DraftModelProposer", "ModelFreeProposer", "Proposal", "Proposals", "Proposer", "as_proposer"]


@dataclass(frozen=True)
class Proposal:
    """One row's draft: the tokens, and their draft probability rows (each [V]) or None (deterministic)."""

    tokens: list[int]
    q: list[torch.Tensor] | None = None


@dataclass(frozen=True)
class Proposals:
    """Every live row's proposal for one step, and the draft-model forwards the step ran (0: model-free)."""

    rows: list[Proposal]
    forwards: int = 0


class Proposer:
    """Proposes draft tokens for the loops' live sequences; see the module docstring for the call order."""

    name: str = "proposer"
    #: Proposals carry no q: verification treats each as drawn from a one-hot distribution.
    deterministic: bool = True
    #: The vocabulary the proposer draws from (a draft model's); None: any of the target's tokens.
    vocab_size: int | None = None
    #: The loops pass the target's hidden states of committed positions to ``observe`` (EAGLE).
    reads_hidden: bool = False

    def open(self, rows: int, capacity: int, vocab: int, *, batched: bool) -> None:
        """Take ``rows`` slots of at least ``capacity`` tokens; ``vocab``: the one shared with the target."""

    def reserve(self, capacity: int) -> None:
        """Make room for sequences of ``capacity`` tokens, keeping what is there."""

    def start(self, first_row: int, prompts: Sequence[Sequence[int]]) -> None:
        """Sequences begin in rows ``first_row`` … with these prompts."""

    def propose(
        self,
        contexts: Sequence[Sequence[int]],
        ds: Sequence[int],
        params: Sequence[SamplingParams],
        generators: Sequence[torch.Generator | None],
    ) -> Proposals:
        """At most ``ds[r]`` tokens after ``contexts[r]`` for every live row r = 0 … B-1."""
        raise NotImplementedError

    def observe(self, row: int, hidden: torch.Tensor) -> None:
        """The target's hidden states [n, F] of row ``row``'s next n committed positions (reads_hidden)."""

    def commit(self, row: int, tokens: Sequence[int]) -> None:
        """Row ``row`` appended ``tokens`` to its committed sequence."""

    def finish(self, row: int) -> None:
        """The sequence in row ``row`` ended."""

    def discard(self, row: int) -> None:
        """The sequence in row ``row`` ended and is forgotten: it kept the batch full, it was not traffic.
        Only a proposer that learns across sequences differs from ``finish``."""
        self.finish(row)

    def move(self, src: int, dst: int) -> None:
        """The sequence in row ``src`` now lives in row ``dst`` (``src`` is free)."""

    def forget(self) -> None:
        """Drop whatever was learnt across sequences (suffix decoding's cache of earlier responses)."""


class ModelFreeProposer(Proposer):
    """A proposer that reads tokens off the context: deterministic, no forwards, no accelerator memory."""

    deterministic = True

    def draft(self, row: int, context: Sequence[int], d: int) -> list[int]:
        """At most ``d`` tokens to follow ``context`` (row ``row``'s committed sequence)."""
        raise NotImplementedError

    def propose(
        self,
        contexts: Sequence[Sequence[int]],
        ds: Sequence[int],
        params: Sequence[SamplingParams],
        generators: Sequence[torch.Generator | None],
    ) -> Proposals:
        pairs = enumerate(zip(contexts, ds, strict=True))
        rows = [Proposal(self.draft(r, c, d)[:d] if d > 0 else []) for r, (c, d) in pairs]
        return Proposals(rows, 0)


class DraftModelProposer(Proposer):
    """A draft model, autoregressively: today's draft code path of both loops, moved behind the interface.

    Single-stream (``batched=False``): the model's single KV cache. Rolled back to the committed sequence
    less one token, it is fed the catch-up tokens (usually one; two after a fully accepted step), then
    d − 1 single tokens: d forwards. Batched: the same in lockstep over rows 0 … B-1 (one catch-up forward
    of every row, then D − 1 forwards of B single tokens, D = max d_r), each row rolled back on its own.
    Greedy rows take the argmax; sampling rows draw from q = probs(logits) with their own generator, and
    the q rows go to the verifier.
    """

    deterministic = False

    def __init__(self, model: CausalLM, name: str | None = None) -> None:
        self.model = model
        self.name = name or model.info.name
        self.vocab_size = model.vocab_size
        self._batched = False
        self._vocab = model.vocab_size

    def open(self, rows: int, capacity: int, vocab: int, *, batched: bool) -> None:
        self._batched, self._vocab = batched, vocab
        if batched:
            self._rows_model().batch_reset(rows, capacity)
        else:
            self.model.reset(capacity)

    def reserve(self, capacity: int) -> None:
        if self._batched:
            self._rows_model().batch_reserve(capacity)

    def start(self, first_row: int, prompts: Sequence[Sequence[int]]) -> None:
        if not self._batched:
            self.model.forward(torch.tensor(list(prompts[0]), dtype=torch.long, device=self.model.device))
            return
        model = self._rows_model()
        for r in range(len(prompts)):
            model.rollback_row(first_row + r, 0)
        reserve_rows(model, first_row, prompts)
        model.forward_rows(first_row, [list(p) for p in prompts], last_only=True)

    def move(self, src: int, dst: int) -> None:
        if self._batched:
            self._rows_model().move_row(src, dst)

    def _rows_model(self) -> BatchedCausalLM:
        return self.model  # type: ignore[return-value]  # native and transformers models both batch

    def propose(
        self,
        contexts: Sequence[Sequence[int]],
        ds: Sequence[int],
        params: Sequence[SamplingParams],
        generators: Sequence[torch.Generator | None],
    ) -> Proposals:
        if self._batched:
            return self._propose_rows(contexts, ds, params, generators)
        return self._propose_one(contexts[0], ds[0], params[0], generators[0])

    def _propose_one(
        self, seq: Sequence[int], d: int, params: SamplingParams, generator: torch.Generator | None
    ) -> Proposals:
        draft, vocab, device = self.model, self._vocab, self.model.device
        y: list[int] = []
        q_rows: list[torch.Tensor] = []
        if d <= 0:
            return Proposals([Proposal([])], 0)
        draft.rollback(min(draft.length, len(seq) - 1))
        q_logits = draft.forward(torch.tensor(list(seq[draft.length :]), device=device))[-1, :vocab]
        for i in range(d):
            if params.greedy:
                y.append(int(q_logits.argmax().item()))
            else:
                q_rows.append(probs(q_logits, params))
                y.append(sample(q_rows[-1], generator))
            if i < d - 1:
                q_logits = draft.forward(torch.tensor(y[-1:], device=device))[-1, :vocab]
        return Proposals([Proposal(y, None if params.greedy else q_rows)], d)

    def _propose_rows(
        self,
        contexts: Sequence[Sequence[int]],
        ds: Sequence[int],
        params: Sequence[SamplingParams],
        generators: Sequence[torch.Generator | None],
    ) -> Proposals:
        b, depth = len(contexts), max(ds, default=0)
        ys: list[list[int]] = [[] for _ in range(b)]
        qs: list[list[torch.Tensor]] = [[] for _ in range(b)]
        if depth > 0:
            draft = self._rows_model()
            feeds = []
            for r, seq in enumerate(contexts):
                keep = min(draft.row_length(r), len(seq) - 1)
                draft.rollback_row(r, keep)
                feeds.append(list(seq[keep:]))  # catch-up: usually 1 token, 2 after a full accept
            reserve_rows(draft, 0, feeds)
            logits = draft.forward_rows(0, feeds)  # [B, n, V]
            last = torch.tensor([len(f) - 1 for f in feeds], device=logits.device)
            q_logits = logits[torch.arange(b, device=logits.device), last, : self._vocab]  # [B, V]
            for i in range(depth):
                tokens = choose_tokens(q_logits, params, generators, ys, qs)
                if i < depth - 1:
                    q_logits = draft.forward_rows(0, [[t] for t in tokens])[:, 0, : self._vocab]
        return row_proposals(ys, qs, ds, params, depth)


def choose_tokens(
    q_logits: torch.Tensor,
    params: Sequence[SamplingParams],
    generators: Sequence[torch.Generator | None],
    ys: list[list[int]],
    qs: list[list[torch.Tensor]],
) -> list[int]:
    """One drafting position of every row: the argmax of a greedy row's ``q_logits`` [B, V], a draw from
    the others' q (kept in ``qs``); each row's token is appended to ``ys`` and returned."""
    tokens: list[int] = q_logits.argmax(-1).tolist()
    for r in range(len(tokens)):
        if not params[r].greedy:
            q = probs(q_logits[r], params[r])
            qs[r].append(q)
            tokens[r] = sample(q, generators[r])
        ys[r].append(tokens[r])
    return tokens


def row_proposals(
    ys: Sequence[list[int]],
    qs: Sequence[list[torch.Tensor]],
    ds: Sequence[int],
    params: Sequence[SamplingParams],
    depth: int,
) -> Proposals:
    """Each row's draft cut to its own length ``ds[r]`` (with its q where it sampled), ``depth`` drafted."""
    rows = [Proposal(ys[r][: ds[r]], None if params[r].greedy else qs[r][: ds[r]]) for r in range(len(ds))]
    return Proposals(rows, depth)


def as_proposer(draft: CausalLM | Proposer | None) -> Proposer | None:
    """A Proposer as it is; a draft model (the loops' historical argument) wrapped; None stays None."""
    if draft is None or isinstance(draft, Proposer):
        return draft
    return DraftModelProposer(draft)
