"""The vLLM backend's own logic, without vLLM: configs, counters, and steps rebuilt from engine steps.

A fake engine plays vLLM's part: each ``step()`` fills the step log the way the stat logger does (the
step's ``SpecDecodingStats``) and returns DELTA outputs. The real engine is tested in tests/real_vllm
(``make test-vllm``).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from specmeter.engine.vllm_backend import (
    METHODS,
    SpecCounters,
    StepLog,
    VllmEngine,
    read_spec_counters,
    speculative_config,
)
from specmeter.engine.vllm_runner import reconcile
from specmeter.metrics.records import Emission, RequestRecord, StepRecord


def test_speculative_config_per_method() -> None:
    assert speculative_config("draft_model", "/d", 3) == {
        "method": "draft_model",
        "num_speculative_tokens": 3,
        "model": "/d",
    }
    ngram = speculative_config("ngram", None, 5)
    assert ngram["method"] == "ngram" and "model" not in ngram and ngram["num_speculative_tokens"] == 5
    assert "model" not in speculative_config("mtp", None, 1)
    assert speculative_config("eagle3", "/head", 2)["model"] == "/head"
    assert set(METHODS) == {"draft_model", "ngram", "eagle", "eagle3", "mtp"}


@pytest.mark.parametrize(
    ("method", "draft", "k", "needle"),
    [("medusa", "/d", 2, "unknown"), ("draft_model", None, 2, "needs a draft"), ("eagle", "/d", 0, "k")],
)
def test_speculative_config_refuses(method: str, draft: str | None, k: int, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        speculative_config(method, draft, k)


def _metric(name: str, value: float = 0, values: Sequence[int] = (), engine: str = "0") -> Any:
    return SimpleNamespace(name=name, value=value, values=list(values), labels={"engine": engine})


def test_counters_sum_engines_and_subtract() -> None:
    snapshot = [
        _metric("vllm:spec_decode_num_drafts", 10),
        _metric("vllm:spec_decode_num_drafts", 5, engine="1"),
        _metric("vllm:spec_decode_num_draft_tokens", 40),
        _metric("vllm:spec_decode_num_accepted_tokens", 25),
        _metric("vllm:spec_decode_num_accepted_tokens_per_pos", values=[9, 8, 5, 3]),
        _metric("vllm:spec_decode_num_accepted_tokens_per_pos", values=[1, 1], engine="1"),
        _metric("vllm:generation_tokens", 70),
        _metric("vllm:num_requests_running", 3),  # a gauge it must ignore
    ]
    c = read_spec_counters(snapshot)
    assert (c.drafts, c.draft_tokens, c.accepted_tokens, c.generation_tokens) == (15, 40, 25, 70)
    assert c.accepted_per_pos == (10, 9, 5, 3)
    before = SpecCounters(drafts=4, draft_tokens=16, accepted_tokens=10, accepted_per_pos=(4, 3))
    d = c.minus(before)
    assert (d.drafts, d.draft_tokens, d.accepted_tokens) == (11, 24, 15)
    assert d.accepted_per_pos == (6, 6, 5, 3)
    assert read_spec_counters([]) == SpecCounters()


class FakeEngine:
    """Plays LLMEngine: per step, the stats the stat logger would see and the request's DELTA output."""

    def __init__(self, log: StepLog, script: list[tuple[tuple[int, int, int] | None, list[int], str | None]]):
        self.log, self.script, self.rid = log, list(script), ""
        self.aborted: list[str] = []

    def add_request(self, rid: str, prompt: Any, params: Any) -> None:
        self.rid = rid

    def has_unfinished_requests(self) -> bool:
        return bool(self.script)

    def step(self) -> list[Any]:
        spec, tokens, finish = self.script.pop(0)
        if spec is not None:
            self.log.spec.append(spec)
        if not self.script:
            self.log.finished.append(
                SimpleNamespace(e2e_latency=0.5, prefill_time=0.1, decode_time=0.4, queued_time=0.0,
                                num_generation_tokens=9)
            )  # fmt: skip
        if not tokens:
            return []  # a step that showed nothing (vLLM has those around scheduling)
        out = SimpleNamespace(token_ids=tokens, finish_reason=finish)
        return [SimpleNamespace(request_id=self.rid, outputs=[out], finished=finish is not None)]

    def abort_request(self, ids: list[str]) -> None:
        self.aborted += ids


class OfflineEngine(VllmEngine):
    def _sampling_params(self, *args: Any) -> Any:
        return None


def test_steps_come_from_the_engine_steps_and_their_stats() -> None:
    log = StepLog()
    script: list[tuple[tuple[int, int, int] | None, list[int], str | None]] = [
        (None, [], None),  # scheduling only
        (None, [5], None),  # prefill: the first token, no verification
        ((1, 3, 3), [6, 7, 8, 9], None),  # all three accepted + bonus
        ((1, 3, 1), [10, 11], None),  # one accepted + correction
        ((1, 3, 3), [12, 2], "stop"),  # the third token was EOS: two emitted although three accepted
    ]
    engine = OfflineEngine(FakeEngine(log, script), log, draft_forwards_per_token=1)
    g, stats = engine.generate([1, 2, 3], max_tokens=16, temperature=0.0, top_p=1.0, eos_ids={2})
    assert g.output_ids == (5, 6, 7, 8, 9, 10, 11, 12, 2)
    assert [e.tokens for e in g.emissions] == [1, 4, 2, 2]
    assert [(s.drafted, s.accepted, s.emitted, s.draft_forwards) for s in g.steps] == [
        (3, 3, 4, 3),
        (3, 1, 2, 3),
        (3, 3, 2, 3),
    ]
    assert g.finish_reason == "eos"
    assert g.ttft_s == g.emissions[0].t and g.latency_s == g.emissions[-1].t
    assert g.prefill_s == pytest.approx(0.1)  # vLLM's own prefill time
    assert stats.generation_tokens == 9 and stats.e2e_s == pytest.approx(0.5)


def test_baseline_steps_draft_nothing_and_ngram_costs_no_forwards() -> None:
    log = StepLog()
    base = OfflineEngine(
        FakeEngine(log, [(None, [5], None), (None, [6], None), (None, [7], "length")]), log,
        draft_forwards_per_token=0,
    )  # fmt: skip
    g, _ = base.generate([1], max_tokens=3, temperature=0.0, top_p=1.0, eos_ids={2})
    assert [(s.drafted, s.accepted, s.emitted) for s in g.steps] == [(0, 0, 1), (0, 0, 1)]
    assert g.finish_reason == "length"
    ngram = OfflineEngine(FakeEngine(log, [(None, [5], None), ((1, 2, 2), [6, 7, 8], "length")]), log,
                          draft_forwards_per_token=0)  # fmt: skip
    g, _ = ngram.generate([1], max_tokens=4, temperature=0.0, top_p=1.0, eos_ids={2})
    assert g.steps[0].draft_forwards == 0 and g.steps[0].drafted == 2


def test_an_interrupted_request_is_aborted_in_the_engine() -> None:
    log = StepLog()
    fake = FakeEngine(log, [(None, [5], None), ((1, 2, 2), [6, 7, 8], None)])

    def boom() -> list[Any]:
        raise KeyboardInterrupt

    fake.step = boom  # type: ignore[method-assign]
    engine = OfflineEngine(fake, log, draft_forwards_per_token=1)
    with pytest.raises(KeyboardInterrupt):
        engine.generate([1], max_tokens=4, temperature=0.0, top_p=1.0, eos_ids={2})
    assert fake.aborted == ["specmeter-1"]


def _request(steps: list[tuple[int, int, int]], output: int, matches: bool | None = True) -> RequestRecord:
    return RequestRecord(
        id="r", category="c", prompt_tokens=4, output_tokens=output, latency_s=0.2, ttft_s=0.05,
        prefill_s=0.04, steps=tuple(StepRecord(d, a, e, 0.0, 0.01, d) for d, a, e in steps),
        emissions=(Emission(0.05, 1),), matches_baseline=matches,
    )  # fmt: skip


def test_reconcile_compares_every_counter() -> None:
    records = [_request([(3, 3, 4), (3, 1, 2)], 7), _request([(3, 0, 1)], 2, matches=False)]
    vllm = SpecCounters(
        drafts=3, draft_tokens=9, accepted_tokens=4, accepted_per_pos=(2, 1, 1), generation_tokens=9
    )
    out = reconcile(vllm, records, [], 3)
    assert out["counts_match"] and out["tokens_match"]
    assert out["recorded"]["num_accepted_tokens_per_pos"] == [2, 1, 1]
    assert out["greedy_matches_baseline"] == [1, 2]
    off_by_one = SpecCounters(drafts=3, draft_tokens=9, accepted_tokens=5, accepted_per_pos=(2, 2, 1))
    assert not reconcile(off_by_one, records, [], 3)["counts_match"]
    assert not reconcile(vllm, records[:1], [], 3)["tokens_match"]


def test_engine_start_runs_beside_the_main_thread_and_hands_back_errors() -> None:
    import threading

    from specmeter.engine.vllm_backend import _start_interruptibly

    seen: list[str] = []

    def make() -> str:
        seen.append(threading.current_thread().name)
        return "engine"

    assert _start_interruptibly(make) == "engine" and seen == ["vllm-engine-start"]

    def refuses() -> str:
        raise RuntimeError("Engine core initialization failed")

    with pytest.raises(RuntimeError, match="initialization failed"):
        _start_interruptibly(refuses)

    def needs_main_thread() -> str:
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("signal only works in main thread of the main interpreter")
        return "engine"

    assert _start_interruptibly(needs_main_thread) == "engine"


def test_ctrl_c_during_a_deferred_block_is_raised_after_it() -> None:
    import os
    import signal

    from specmeter.engine.vllm_backend import ctrl_c_deferred

    finished = []
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), ctrl_c_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        finished.append(True)  # the block runs to its end
    assert finished == [True]
    assert signal.getsignal(signal.SIGINT) is handler
    with ctrl_c_deferred():  # no Ctrl-C, nothing raised
        finished.append(True)
    assert finished == [True, True]
