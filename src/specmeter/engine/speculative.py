"""The propose -> verify -> commit loop, one request at a time, recording raw events only.

A proposer (``engine.proposers.proposer``: a draft model one forward at a time, or a model-free method)
proposes up to d tokens, the target scores all d+1 positions in one forward, the verifier decides how many
survive, and the target's KV cache (and the draft model's) is rolled back to the committed sequence. With no
proposer (or d = 0) the same loop is plain target-only decoding, so the baseline shares every line of code and
every overhead with the speculative run it is compared with. :class:`KnownContinuation` drives a
proposer the same way over tokens known in advance (a logged response, ``specmeter replay``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from time import perf_counter

import torch

from specmeter.engine.base import CausalLM, hidden_states, synchronize
from specmeter.engine.proposers.proposer import Proposer, as_proposer
from specmeter.engine.sampling import SamplingParams, Verdict, probs, sample, verify_greedy, verify_sampling
from specmeter.metrics.records import Emission, FinishReason, StepRecord


@dataclass(frozen=True)
class Generation:
    output_ids: tuple[int, ...]
    steps: tuple[StepRecord, ...]
    emissions: tuple[Emission, ...]
    ttft_s: float
    latency_s: float
    prefill_s: float
    finish_reason: FinishReason


def _choose(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None) -> int:
    if params.greedy:
        return int(logits.argmax().item())
    return sample(probs(logits, params), generator)


def speculative_decode(
    target: CausalLM,
    draft: CausalLM | Proposer | None,
    prompt_ids: Sequence[int],
    *,
    k: int,
    params: SamplingParams,
    max_tokens: int,
    eos_ids: Collection[int],
    generator: torch.Generator | None = None,
    on_emit: Callable[[list[int]], bool | None] | None = None,
) -> Generation:
    """Decode up to ``max_tokens`` tokens after ``prompt_ids``; ``draft=None`` or ``k=0`` is the baseline.

    ``draft`` is a :class:`Proposer` (a method: ``engine.proposers.candidate.make_proposer``) or a draft
    model, which is wrapped in a :class:`DraftModelProposer`. ``on_emit`` sees each batch of newly visible
    tokens; returning True stops generation (client gone).
    """
    if not prompt_ids:
        raise ValueError("empty prompt")
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    proposer = as_proposer(draft)
    device = target.device
    vocab = target.vocab_size
    if proposer is not None and proposer.vocab_size is not None:
        vocab = min(vocab, proposer.vocab_size)
    k = k if proposer is not None else 0
    steps: list[StepRecord] = []
    emissions: list[Emission] = []
    out: list[int] = []
    reason: FinishReason = "length"

    with torch.inference_mode():
        t0 = perf_counter()
        capacity = len(prompt_ids) + max_tokens + k + 1
        prompt = torch.tensor(list(prompt_ids), dtype=torch.long, device=device)
        target.reset(capacity)
        if proposer is not None:
            proposer.open(1, capacity, vocab, batched=False)  # before the prefill: EAGLE sets what it keeps
        last_logits = target.forward(prompt)[-1, :vocab]
        if proposer is not None:
            proposer.start(0, [prompt_ids])
            if proposer.reads_hidden:
                proposer.observe(0, hidden_states(target))
        seq = list(prompt_ids)
        new = [_choose(last_logits, params, generator)]
        synchronize(device)
        t_first = perf_counter() - t0

        while True:
            # Commit `new`: cut at EOS, record the emission, stop on EOS or the token limit.
            for i, tok in enumerate(new):
                if tok in eos_ids:
                    new, reason = new[: i + 1], "eos"
                    break
            seq.extend(new)
            out.extend(new)
            if proposer is not None:
                proposer.commit(0, new)
            emissions.append(Emission(t=perf_counter() - t0, tokens=len(new)))
            stop = bool(on_emit(new)) if on_emit is not None else False
            if reason == "eos" or len(out) >= max_tokens:
                break
            if stop:
                reason = "interrupted"
                break

            # Propose. d < k near the limit so a step never produces tokens that would be thrown away;
            # the proposer may return fewer than d (a method with no match returns none).
            d = min(k, max_tokens - len(out) - 1)
            t_step = perf_counter()
            y: list[int] = []
            q_rows: list[torch.Tensor] | None = None
            forwards = 0
            if d > 0 and proposer is not None:
                drafts = proposer.propose([seq], [d], [params], [generator])
                y, q_rows, forwards = drafts.rows[0].tokens, drafts.rows[0].q, drafts.forwards
            d = len(y)
            synchronize(device)
            t_verify = perf_counter()

            # Verify all d+1 positions in one target forward.
            target.rollback(min(target.length, len(seq) - 1))
            feed = seq[target.length :] + y
            p_logits = target.forward(torch.tensor(feed, device=device))[-(d + 1) :, :vocab]  # [d+1, V]
            y_t = torch.tensor(y, dtype=torch.long, device=device)
            verdict: Verdict
            if params.greedy:
                verdict = verify_greedy(p_logits, y_t)
            else:
                q = torch.stack(q_rows) if q_rows else None  # None: deterministic, a one-hot q
                verdict = verify_sampling(probs(p_logits, params), q, y_t, generator)
            if proposer is not None and proposer.reads_hidden:  # the catch-up and the accepted drafts
                proposer.observe(0, hidden_states(target)[: len(feed) - d + verdict.accepted])
            synchronize(device)
            t_done = perf_counter()

            new = [*y[: verdict.accepted], verdict.token]
            emitted = len(new)
            for i, tok in enumerate(new):
                if tok in eos_ids:
                    emitted = i + 1
                    break
            steps.append(
                StepRecord(
                    drafted=d,
                    accepted=verdict.accepted,
                    emitted=emitted,
                    draft_s=t_verify - t_step,
                    verify_s=t_done - t_verify,
                    draft_forwards=forwards,
                )
            )
            # The caches now hold rejected tokens past the committed prefix; the next step rolls them back.
        if proposer is not None:
            proposer.finish(0)

    latency = emissions[-1].t
    return Generation(
        output_ids=tuple(out),
        steps=tuple(steps),
        emissions=tuple(emissions),
        ttft_s=emissions[0].t,
        latency_s=latency,
        prefill_s=t_first,
        finish_reason=reason,
    )


class KnownContinuation:
    """One proposer driven for one row as :func:`speculative_decode` drives it, when the committed tokens
    are known in advance (a logged response: ``specmeter replay``): greedy proposals, and the target's
    forwards only for a proposer that reads the target's hidden states (an EAGLE head).

    Such a proposer sees what the live loop would show it: the prefill's states of the prompt, then at each
    step one target forward over the catch-up token and the step's whole draft, of which it observes the
    catch-up's and the accepted drafts' states — the same forwards on the same tokens as live, so the same
    numbers. Their logits are not used: the caller knows which token came. Any other proposer (a draft
    model, ``layers:n``) runs alone. The vocabulary is the live loop's, min(target's, proposer's).

    Call ``begin(prompt, capacity)``, then per step ``propose(context, d)`` (or nothing, for a step with
    no draft) and ``commit(tokens)`` (the prefill's token first; each step's accepted drafts and the next
    token, cut at EOS), then ``end()``.
    """

    def __init__(self, proposer: Proposer, target: CausalLM) -> None:
        self.proposer = proposer
        self.target = target if proposer.reads_hidden else None
        vocab = target.vocab_size
        self.vocab = vocab if proposer.vocab_size is None else min(vocab, proposer.vocab_size)
        self._seq: list[int] = []
        self._draft: list[int] = []
        self._prefilled = False

    def begin(self, prompt: Sequence[int], capacity: int) -> None:
        target = self.target
        with torch.inference_mode():
            if target is not None:
                target.reset(capacity)
            self.proposer.open(1, capacity, self.vocab, batched=False)  # before the prefill: EAGLE's capture
            if target is not None:
                target.forward(torch.tensor(list(prompt), dtype=torch.long, device=target.device))
            self.proposer.start(0, [list(prompt)])
            if target is not None:
                self.proposer.observe(0, hidden_states(target))
        self._seq, self._draft, self._prefilled = [int(t) for t in prompt], [], False

    def propose(self, context: Sequence[int], d: int) -> list[int]:
        """At most ``d`` greedy draft tokens after ``context`` (the committed sequence)."""
        if d <= 0:
            return []
        with torch.inference_mode():
            drafts = self.proposer.propose([list(context)], [d], [SamplingParams()], [None])
        self._draft = [int(t) for t in drafts.rows[0].tokens]
        return list(self._draft)

    def commit(self, tokens: Sequence[int]) -> None:
        new = [int(t) for t in tokens]
        target, y = self.target, self._draft
        with torch.inference_mode():
            if target is not None and self._prefilled:
                # The step's verification forward: the cache rolled back to the committed sequence but its
                # last token, then the catch-up and the whole draft. The accepted drafts are the committed
                # tokens' common prefix with the draft (the next token differs from the draft's there).
                target.rollback(min(target.length, len(self._seq) - 1))
                feed = self._seq[target.length :] + y
                target.forward(torch.tensor(feed, dtype=torch.long, device=target.device))
                accepted = 0
                while accepted < min(len(y), len(new)) and y[accepted] == new[accepted]:
                    accepted += 1
                self.proposer.observe(0, hidden_states(target)[: len(feed) - len(y) + accepted])
            self.proposer.commit(0, new)
        self._prefilled = True
        self._seq.extend(new)
        self._draft = []

    def end(self) -> None:
        with torch.inference_mode():
            self.proposer.finish(0)
