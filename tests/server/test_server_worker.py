"""The generation worker: first come first served, cancellation before and during a run, failures.

Every behaviour is checked one request at a time (``max_batch=1``) and under continuous batching.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from specmeter.metrics.records import Emission, FinishReason, StepRecord
from specmeter.server.engine import Decoding, Emit, GenerationResult
from specmeter.server.worker import GenerationWorker, Job


@dataclass(frozen=True)
class _Result:
    output_ids: tuple[int, ...]
    steps: tuple[StepRecord, ...]
    emissions: tuple[Emission, ...]
    ttft_s: float
    latency_s: float
    prefill_s: float
    finish_reason: FinishReason


class FakeEngine:
    """Emits `max_tokens` tokens, one per step, `step_s` apart; records the order prompts were started in."""

    model_name, k, draft_name, context_length, target_info = "fake", 0, None, None, None

    def __init__(self, step_s: float = 0.002, fail_on: int | None = None) -> None:
        self.started: list[int] = []
        self.step_s, self.fail_on = step_s, fail_on

    def generate(self, prompt_ids: Sequence[int], decoding: Decoding, on_emit: Emit) -> GenerationResult:
        self.started.append(prompt_ids[0])
        if prompt_ids[0] == self.fail_on:
            raise RuntimeError("boom")
        out: list[int] = []
        reason: FinishReason = "length"
        for i in range(decoding.max_tokens):
            time.sleep(self.step_s)
            out.append(i)
            if on_emit([i]):
                reason = "interrupted"
                break
        emissions = tuple(Emission(0.001 * (j + 1), 1) for j in range(len(out)))
        return _Result(tuple(out), (), emissions, 0.001, 0.001 * len(out), 0.0, reason)

    def open_batch(self, max_batch: int) -> FakeBatch:
        return FakeBatch(self, max_batch)


@dataclass
class _Seq:
    prompt: int
    max_tokens: int
    on_emit: Callable[[list[int]], bool | None]
    tag: Any
    out: list[int] = field(default_factory=list)


class FakeBatch:
    """Every step emits one token for each live sequence, ``step_s`` apart; records the largest batch."""

    def __init__(self, engine: FakeEngine, max_batch: int) -> None:
        self.engine, self.max_batch = engine, max_batch
        self.seqs: list[_Seq] = []
        self.largest = 0

    @property
    def live(self) -> int:
        return len(self.seqs)

    def add(self, prompt_ids: Sequence[int], decoding: Decoding, on_emit: Emit, tag: Any) -> None:
        assert len(self.seqs) < self.max_batch
        self.engine.started.append(prompt_ids[0])
        self.seqs.append(_Seq(prompt_ids[0], decoding.max_tokens, on_emit, tag))

    def step(self) -> list[tuple[Any, _Result]]:
        time.sleep(self.engine.step_s)
        self.largest = max(self.largest, len(self.seqs))
        if any(s.prompt == self.engine.fail_on for s in self.seqs):
            raise RuntimeError("boom")
        done = []
        for s in list(self.seqs):
            s.out.append(len(s.out))
            stop = s.on_emit([s.out[-1]])
            if stop or len(s.out) >= s.max_tokens:
                self.seqs.remove(s)
                emissions = tuple(Emission(0.001 * (j + 1), 1) for j in range(len(s.out)))
                reason: FinishReason = "interrupted" if stop and len(s.out) < s.max_tokens else "length"
                done.append((s.tag, _Result(tuple(s.out), (), emissions, 0.001, 0.001, 0.0, reason)))
        return done


def _job(
    prompt: int, max_tokens: int, done: list[tuple[int, object, object]], tokens: list[int] | None = None
) -> Job:
    event = threading.Event()

    def on_done(result: object, error: object) -> None:
        done.append((prompt, result, error))
        event.set()

    job = Job(
        f"r{prompt}",
        "completion",
        (prompt,),
        Decoding(max_tokens, 0.0, 1.0),
        on_tokens=lambda t: tokens.extend(t) if tokens is not None else None,
        on_done=on_done,
    )
    job.finished = event  # type: ignore[attr-defined]
    return job


@pytest.mark.parametrize("max_batch", [1, 3])
def test_jobs_run_in_arrival_order_and_cancelled_queued_jobs_never_start(max_batch: int) -> None:
    engine = FakeEngine(step_s=0.005)
    worker = GenerationWorker(engine, max_batch=max_batch)  # type: ignore[arg-type]
    done: list[tuple[int, object, object]] = []
    jobs = [_job(p, 3, done) for p in range(6)]
    jobs[3].cancelled.set()  # the client left while it was still queued
    worker.start()
    try:
        for job in jobs:
            assert worker.submit(job)
        for job in jobs:
            assert job.finished.wait(10)  # type: ignore[attr-defined]
    finally:
        worker.stop()
    assert engine.started == [0, 1, 2, 4, 5]
    skipped = [d for d in done if d[0] == 3]
    assert skipped == [(3, None, None)]
    assert worker.waiting == 0


@pytest.mark.parametrize("max_batch", [1, 3])
def test_cancelling_a_running_job_stops_it_after_the_current_step(max_batch: int) -> None:
    engine = FakeEngine(step_s=0.01)
    worker = GenerationWorker(engine, max_batch=max_batch)  # type: ignore[arg-type]
    done: list[tuple[int, object, object]] = []
    tokens: list[int] = []
    job = _job(1, 1000, done, tokens)
    worker.start()
    try:
        worker.submit(job)
        while len(tokens) < 3:
            time.sleep(0.005)
        job.cancelled.set()
        assert job.finished.wait(10)  # type: ignore[attr-defined]
    finally:
        worker.stop()
    result = done[0][1]
    assert isinstance(result, _Result)
    assert result.finish_reason == "interrupted"
    assert len(result.output_ids) < 1000


def test_engine_failure_reaches_the_job_and_the_worker_survives() -> None:
    engine = FakeEngine(fail_on=1)
    worker = GenerationWorker(engine)  # type: ignore[arg-type]
    done: list[tuple[int, object, object]] = []
    jobs = [_job(1, 2, done), _job(2, 2, done)]
    worker.start()
    try:
        for job in jobs:
            worker.submit(job)
        for job in jobs:
            assert job.finished.wait(10)  # type: ignore[attr-defined]
    finally:
        worker.stop()
    by_prompt = {p: (r, e) for p, r, e in done}
    assert by_prompt[1][0] is None and isinstance(by_prompt[1][1], RuntimeError)
    assert isinstance(by_prompt[2][0], _Result)


def test_full_queue_refuses_and_stop_releases_queued_jobs() -> None:
    engine = FakeEngine(step_s=0.02)
    worker = GenerationWorker(engine, max_waiting=2)  # type: ignore[arg-type]
    done: list[tuple[int, object, object]] = []
    worker.start()
    jobs = [_job(p, 50, done) for p in range(5)]
    accepted = [worker.submit(j) for j in jobs]
    assert accepted.count(False) >= 1  # at most two wait while one runs
    worker.stop()
    for job, ok in zip(jobs, accepted, strict=True):
        if ok:
            assert job.finished.wait(10)  # type: ignore[attr-defined]
    assert not worker.submit(_job(9, 1, done))  # a stopped worker takes nothing


def test_batches_fill_free_rows_in_arrival_order_and_gauges_follow() -> None:
    from specmeter.server.prom import ServerMetrics

    engine = FakeEngine(step_s=0.01)
    metrics = ServerMetrics("fake", 0)
    worker = GenerationWorker(engine, metrics, max_batch=3)  # type: ignore[arg-type]
    done: list[tuple[int, object, object]] = []
    jobs = [_job(p, 5 + 3 * (p % 2), done) for p in range(8)]
    seen_running, seen_waiting = set(), set()
    worker.start()
    try:
        for job in jobs:
            assert worker.submit(job)
        while not all(j.finished.is_set() for j in jobs):  # type: ignore[attr-defined]
            seen_running.add(metrics.running._value.get())
            seen_waiting.add(metrics.waiting._value.get())
            time.sleep(0.002)
    finally:
        worker.stop()
    assert engine.started == list(range(8))  # rows are filled first come, first served
    assert max(seen_running) == 3 and max(seen_waiting) >= 1  # a full batch and a queue behind it
    assert metrics.running._value.get() == 0 and metrics.waiting._value.get() == 0
    assert all(isinstance(r, _Result) and len(r.output_ids) == 5 + 3 * (p % 2) for p, r, _ in done)


def test_a_failing_batch_step_fails_its_requests_and_the_worker_goes_on() -> None:
    engine = FakeEngine(step_s=0.005, fail_on=1)
    worker = GenerationWorker(engine, max_batch=4)  # type: ignore[arg-type]
    done: list[tuple[int, object, object]] = []
    first = [_job(1, 3, done), _job(2, 3, done)]
    worker.start()
    try:
        for job in first:
            worker.submit(job)
        for job in first:
            assert job.finished.wait(10)  # type: ignore[attr-defined]
        later = _job(3, 2, done)
        worker.submit(later)
        assert later.finished.wait(10)  # type: ignore[attr-defined]
    finally:
        worker.stop()
    by_prompt = {p: (r, e) for p, r, e in done}
    assert by_prompt[1][0] is None and isinstance(by_prompt[1][1], RuntimeError)
    assert isinstance(by_prompt[3][0], _Result)


def test_stop_interrupts_a_running_batch_and_releases_the_queue() -> None:
    engine = FakeEngine(step_s=0.01)
    worker = GenerationWorker(engine, max_batch=2, max_waiting=2)  # type: ignore[arg-type]
    done: list[tuple[int, object, object]] = []
    jobs = [_job(p, 500, done) for p in range(6)]
    worker.start()
    accepted = [worker.submit(j) for j in jobs]
    assert accepted.count(False) >= 2  # two rows and two places in the queue at most
    time.sleep(0.05)
    worker.stop()
    for job, ok in zip(jobs, accepted, strict=True):
        if ok:
            assert job.finished.wait(10)  # type: ignore[attr-defined]
    results = [r for _, r, _ in done if r is not None]
    assert results and all(r.finish_reason == "interrupted" for r in results)  # type: ignore[attr-defined]
