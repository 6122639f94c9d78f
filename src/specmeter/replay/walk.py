"""Walking one logged response with one proposer: the steps the live loop would have recorded.

The live loop (``engine.speculative.speculative_decode``) emits the prefill's token, then, step by step:
d = min(k, max_tokens - emitted - 1); the proposer drafts at most d tokens after the committed context
(d = 0, or no draft: a target-only step); the verifier keeps a prefix of the draft and adds one token of
its own (the bonus); the step commits accepted + 1 tokens, cut at EOS, and the request ends at EOS or at
max_tokens. Replay runs the same loop with the logged response in place of the target: the accepted
prefix is the longest one equal to the response at that position, and the bonus is the response's next
token. At temperature 0 the response does not depend on the proposer, so this is the live run exactly; at
temperature > 0, with a deterministic proposer, it is the live run in distribution (docs/metrics.md,
"Replay").

One case the log cannot settle: a draft that matches the response through its last token and goes on. The
live verifier would compare the tokens past the end with the target's next choices, which nobody logged;
replay stops the acceptance there (a lower bound), counts the step in :attr:`Walk.past_end` and the
tokens drafted past the end in :attr:`Walk.past_end_drafts`. With vLLM's rule (``draft_rule="vllm"``) a
draft that matched every logged token up to ``max_tokens`` is counted accepted in full instead: vLLM
verifies it whole and counts what the target accepted before cutting the output, and a draft that copied
the response to its very limit is a copy the greedy target goes on with — in ``make test-vllm``
(tests/real_vllm/test_vllm_replay.py, vLLM 0.32 n-gram proposers at k = 3 and 5) all 11 such tokens were
accepted by the server. At EOS the lower bound stays: past EOS the target says nothing a draft copies.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from specmeter.metrics.records import FinishReason, RequestRecord, StepRecord
from specmeter.replay.proposers import ReplayProposer

__all__ = ["Walk", "walk"]


@dataclass(frozen=True)
class Walk:
    """One request replayed: its record (steps as the live loop records them) and what the log left open."""

    record: RequestRecord
    past_end: int  # steps whose draft matched through EOS and went on (acceptance there is a lower bound)
    past_end_drafts: int = 0  # those steps' drafted tokens past the log's end: accepted or not, unknown


# Steps of equal counts are the same frozen object: a long replay holds millions of them.
_STEPS: dict[tuple[int, int, int, int], StepRecord] = {}


def _step(drafted: int, accepted: int, emitted: int, forwards: int) -> StepRecord:
    key = (drafted, accepted, emitted, forwards)
    step = _STEPS.get(key)
    if step is None:
        step = _STEPS[key] = StepRecord(drafted, accepted, emitted, 0.0, 0.0, forwards)
    return step


def walk(
    proposer: ReplayProposer,
    prompt: Sequence[int],
    response: Sequence[int],
    *,
    k: int,
    max_tokens: int,
    eos_ids: Collection[int],
    request_id: str,
    category: str,
    draft_rule: str = "specmeter",
) -> Walk:
    """Replay ``response`` (the target's tokens after ``prompt``, EOS included when it ended there).

    ``max_tokens`` is the request's limit (the response's length when it ended by length). The record's
    times are zero: replay measures acceptance, not time. ``draft_rule`` is the draft length near the
    limit: ``specmeter`` (the live loop's d = min(k, max_tokens − emitted − 1)) or ``vllm`` (vLLM drafts k
    at every step, verifies all of them and counts those accepted, then cuts the output at max_tokens; its
    counters count the drafts past the limit). Past the logged response the target's choices are unknown:
    acceptance stops there and the step is counted in ``past_end``, as at EOS — but for vLLM's rule at
    ``max_tokens``, where a draft that copied the response to its limit is counted accepted (module
    docstring).
    """
    if not prompt or not response:
        raise ValueError("replay needs a prompt and a response of at least one token each")
    n = len(response)
    ended_eos = response[-1] in eos_ids
    context = list(prompt)
    steps: list[StepRecord] = []
    past_end = past_end_drafts = 0
    reason: FinishReason = "length"
    proposer.begin(prompt, len(prompt) + max_tokens + k + 1)  # the live loop's cache size
    new = [int(response[0])]  # the prefill's token
    t = 0  # tokens of the response committed
    while True:
        for i, tok in enumerate(new):
            if tok in eos_ids:
                new, reason = new[: i + 1], "eos"
                break
        context.extend(new)
        t += len(new)
        proposer.commit(new)
        if reason == "eos" or t >= max_tokens or t >= n:
            break
        d = k if draft_rule == "vllm" else min(k, max_tokens - t - 1)
        draft = proposer.propose(context, d)[:d] if d > 0 else []
        d = len(draft)
        a = 0
        while a < d and t + a < n and draft[a] == response[t + a]:
            a += 1
        if t + a >= n:  # the draft matched through the response's last token
            new = list(draft[:a])
            if a < d:  # and went on: what the target would have said past its end is not logged
                past_end += 1
                past_end_drafts += d - a
                if draft_rule == "vllm" and t + a >= max_tokens and not ended_eos:
                    a = d  # counted as vLLM counts a copy that runs on past the limit (module docstring)
        else:
            new = [*draft[:a], int(response[t + a])]
        new = new[: max_tokens - t]  # vLLM's rule drafts past the limit; the output stops at it
        emitted = len(new)
        for i, tok in enumerate(new):
            if tok in eos_ids:
                emitted = i + 1
                break
        steps.append(_step(d, a, emitted, proposer.forwards(d)))
    proposer.end()
    if reason != "eos" and t < max_tokens:
        reason = "interrupted"  # the response ended before its limit without EOS: cut short
    record = RequestRecord(
        id=request_id,
        category=category,
        prompt_tokens=len(prompt),
        output_tokens=t,
        latency_s=0.0,
        ttft_s=0.0,
        prefill_s=0.0,
        steps=tuple(steps),
        finish_reason=reason,
    )
    return Walk(record, past_end, past_end_drafts)
