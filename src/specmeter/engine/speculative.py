"""The propose -> verify -> commit loop, one request at a time, recording raw events only.

A proposer (``engine.proposers.proposer``: a draft model one forward at a time, or a model-free method)
proposes up to
d tokens, the target scores all d+1 positions in one forward, the verifier decides how many survive, and
the target's KV cache (and the draft model's) is rolled back to the committed sequence. With no proposer
(or d = 0) the same loop is plain target-only decoding, so the baseline shares every line of code and
every overhead with the speculative run it is compared with.
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
    model, which
    is wrapped in a :class:`DraftModelProposer`. ``on_emit`` sees each batch of newly visible tokens;
    returning True stops generation (client gone).
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
