"""An EAGLE head replayed proposes, token for token, what it proposed in the live loop.

The head drafts from the target's hidden states, which no log holds: replay (``engine.speculative.
KnownContinuation`` behind ``replay.proposers.EngineProposer``) runs the live loop's target forwards for
them. The bundled target and its trained head (``eagle-legal``): its drafts are often accepted, so every
path is taken (the states of the catch-up token alone, and of the accepted drafts after it). The drafts
themselves are compared, step by step; `bench` and `load` are compared in test_replay_vs_commands.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from specmeter.bundled.models import bundled_model
from specmeter.bundled.names import resolve_bundled
from specmeter.engine.loader import load_model
from specmeter.engine.proposers.candidate import make_proposer
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import KnownContinuation, speculative_decode
from specmeter.replay.proposers import EngineProposer
from specmeter.replay.walk import walk
from specmeter.workloads import load_workloads

K, MAX = 3, 16


def _recording(proposer: Any) -> list[list[int]]:
    """Every draft ``proposer`` makes from now on, in order."""
    drafts: list[list[int]] = []
    propose: Callable[..., Any] = proposer.propose

    def record(contexts: Sequence[Sequence[int]], *args: Any) -> Any:
        out = propose(contexts, *args)
        drafts.append(list(out.rows[0].tokens))
        return out

    proposer.propose = record
    return drafts


def test_replayed_head_proposes_what_it_proposed_live() -> None:
    target = load_model(bundled_model("target"))
    spec = f"eagle:head={bundled_model('eagle-legal')}"
    live, replayed = make_proposer(spec, target), make_proposer(spec, target)
    live_drafts, replay_drafts = _recording(live), _recording(replayed)
    row = EngineProposer(KnownContinuation(replayed, target.model), spec, lambda: 1 << 12)
    accepted = drafted = 0
    for p in load_workloads([resolve_bundled("legal"), resolve_bundled("general")], 1).prompts:
        prompt = target.tokenizer(p.text)["input_ids"]
        gen = speculative_decode(
            target.model, live, prompt, k=K, params=SamplingParams(), max_tokens=MAX, eos_ids=target.eos_ids
        )
        w = walk(row, prompt, gen.output_ids, k=K, max_tokens=MAX, eos_ids=target.eos_ids, request_id=p.id,
                 category="")  # fmt: skip
        # A draft that matched through EOS: the live loop counts its acceptance past EOS, replay stops at EOS
        # (docs/metrics.md, "EOS inside a step" and "A draft that matches through the response's EOS"), so
        # replay accepts min(a, emitted) there: live (3, 2, 1) -> replay (3, 1, 1), drafts [EOS, x, y]. The
        # step counts in past_end when drafts went on past EOS.
        assert [(s.drafted, s.accepted, s.emitted) for s in w.record.steps] == [
            (s.drafted, min(s.accepted, s.emitted), s.emitted) for s in gen.steps
        ]
        assert w.past_end == sum(1 for s in gen.steps if s.emitted <= s.accepted and s.drafted > s.emitted)
        accepted += sum(s.accepted for s in gen.steps)
        drafted += sum(s.drafted for s in gen.steps)
    assert replay_drafts == live_drafts and len(live_drafts) > 5
    assert 0 < accepted < drafted  # steps that accepted drafts and steps that did not
