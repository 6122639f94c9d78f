"""The walk records the live loop's steps: accepted + bonus per step, d capped near the limit, EOS cuts."""

from __future__ import annotations

from collections.abc import Sequence

from specmeter.replay.walk import walk


class Fixed:
    """Proposes the given tokens at every step (a stand-in whose drafts are easy to reason about)."""

    name = "fixed"
    learns = False

    def __init__(self, drafts: dict[int, list[int]]) -> None:
        self.drafts = drafts  # context length -> draft
        self.committed: list[list[int]] = []

    def begin(self, prompt: Sequence[int], capacity: int = 0) -> None:
        self.committed = []

    def propose(self, context: Sequence[int], d: int) -> list[int]:
        return self.drafts.get(len(context), [])

    def commit(self, tokens: Sequence[int]) -> None:
        self.committed.append(list(tokens))

    def end(self) -> None:
        pass

    def absorb(self, prompt: Sequence[int], response: Sequence[int]) -> None:
        pass

    def forwards(self, d: int) -> int:
        return 0


def _steps(w: object) -> list[tuple[int, int, int]]:
    return [(s.drafted, s.accepted, s.emitted) for s in w.record.steps]  # type: ignore[attr-defined]


def test_accepted_prefix_then_the_bonus_token() -> None:
    # prompt 2 tokens; response 10 11 12 13 14 15 (ended by length, max_tokens 6).
    p = Fixed({3: [11, 12, 99], 7: [14]})
    w = walk(
        p, [1, 2], [10, 11, 12, 13, 14, 15], k=3, max_tokens=6, eos_ids={0}, request_id="r", category="c"
    )
    # after the prefill's 10 (context 3): draft 11 12 99 -> 2 accepted + bonus 13 (context 6); no draft at
    # context 6: a target-only step gives 14; at context 7, d = min(3, 6 - 5 - 1) = 0: a target-only step.
    assert _steps(w) == [(3, 2, 3), (0, 0, 1), (0, 0, 1)]
    assert p.committed == [[10], [11, 12, 13], [14], [15]]
    assert w.record.output_tokens == 6 and w.record.finish_reason == "length" and w.past_end == 0


def test_draft_length_capped_near_the_limit() -> None:
    p = Fixed({3: [11, 12, 13, 14]})
    w = walk(p, [1, 2], [10, 11, 12, 13], k=4, max_tokens=4, eos_ids={0}, request_id="r", category="c")
    # d = min(4, 4 - 1 - 1) = 2: the draft is cut to 11 12, both accepted, bonus 13.
    assert _steps(w) == [(2, 2, 3)]


def test_eos_cuts_and_ends() -> None:
    p = Fixed({3: [11, 0, 7]})
    w = walk(p, [1, 2], [10, 11, 0], k=3, max_tokens=50, eos_ids={0}, request_id="r", category="c")
    # 11 and EOS match; the draft goes on past the response's end: acceptance stops at EOS (a lower bound).
    assert _steps(w) == [(3, 2, 2)]
    assert w.past_end == 1 and w.record.finish_reason == "eos" and w.record.output_tokens == 3


def test_a_draft_that_ends_exactly_at_eos_is_exact() -> None:
    # issue 37: the draft 11 EOS matches through the response's end and stops there: nothing past EOS was
    # proposed, so the live verifier accepted exactly these two; not a lower-bound step
    p = Fixed({3: [11, 0]})
    w = walk(p, [1, 2], [10, 11, 0], k=3, max_tokens=50, eos_ids={0}, request_id="r", category="c")
    assert _steps(w) == [(2, 2, 2)]
    assert w.past_end == 0 and w.record.finish_reason == "eos"


def test_eos_as_the_bonus_token() -> None:
    p = Fixed({3: [11, 5]})
    w = walk(p, [1, 2], [10, 11, 0], k=2, max_tokens=50, eos_ids={0}, request_id="r", category="c")
    assert _steps(w) == [(2, 1, 2)]
    assert w.record.finish_reason == "eos" and w.past_end == 0


def test_a_response_cut_short_is_interrupted() -> None:
    p = Fixed({})
    w = walk(p, [1], [10, 11], k=2, max_tokens=9, eos_ids={0}, request_id="r", category="c")
    assert _steps(w) == [(0, 0, 1)]
    assert w.record.finish_reason == "interrupted"


def test_vllm_rule_drafts_k_up_to_the_limit_and_stops_the_output_there() -> None:
    """``--draft-rule vllm``: vLLM drafts k at every step, near max_tokens too, verifies all k and counts
    those accepted; the output stops at max_tokens. The log ends there: a draft that matched through the
    last logged token is counted accepted in full, as vLLM counts a copy that runs on (``past_end``, and
    the tokens past the end in ``past_end_drafts``)."""
    drafts = {3: [11, 12, 13, 14]}
    response = [10, 11, 12, 13]
    live = walk(Fixed(drafts), [1, 2], response, k=4, max_tokens=4, eos_ids={0}, request_id="r", category="c")
    vllm = walk(Fixed(drafts), [1, 2], response, k=4, max_tokens=4, eos_ids={0}, request_id="r", category="c",
                draft_rule="vllm")  # fmt: skip
    assert _steps(live) == [(2, 2, 3)]  # d = min(4, 4 − 1 − 1) = 2: 11 12 accepted, bonus 13
    assert _steps(vllm) == [(4, 4, 3)]  # k = 4 drafted: 11 12 13 logged, 14 past the limit; output cut at 4
    assert (vllm.past_end, vllm.past_end_drafts) == (1, 1) and (live.past_end, live.past_end_drafts) == (0, 0)
    assert vllm.record.output_tokens == live.record.output_tokens == 4


def test_vllm_rule_drafts_where_specmeter_takes_a_target_only_step() -> None:
    # After the prefill's 10 nothing is drafted (context 3): a target-only step gives 11 (context 4). One
    # token is then left: specmeter drafts min(3, 3 − 2 − 1) = 0, vLLM drafts 12 13 99 (12 accepted).
    p = Fixed({4: [12, 13, 99]})
    response = [10, 11, 12]
    live = walk(p, [1, 2], response, k=3, max_tokens=3, eos_ids={0}, request_id="r", category="c")
    vllm = walk(p, [1, 2], response, k=3, max_tokens=3, eos_ids={0}, request_id="r", category="c",
                draft_rule="vllm")  # fmt: skip
    assert _steps(live) == [(0, 0, 1), (0, 0, 1)]
    assert _steps(vllm) == [(0, 0, 1), (3, 3, 1)]  # 12 logged, 13 99 past the limit: counted accepted
    assert vllm.past_end_drafts == 2
    assert vllm.record.output_tokens == live.record.output_tokens == 3


def test_vllm_rule_keeps_the_lower_bound_at_eos() -> None:
    """Past EOS the target copies nothing: a draft that matched through EOS and went on stays a lower bound
    under either rule."""
    p = Fixed({3: [11, 0, 5, 6]})
    response = [10, 11, 0]
    for rule in ("specmeter", "vllm"):
        w = walk(p, [1, 2], response, k=4, max_tokens=9, eos_ids={0}, request_id="r", category="c",
                 draft_rule=rule)  # fmt: skip
        assert _steps(w) == [(4, 2, 2)], rule  # 11 EOS accepted, 5 6 unknown and not counted
        assert (w.past_end, w.past_end_drafts, w.record.finish_reason) == (1, 2, "eos")
