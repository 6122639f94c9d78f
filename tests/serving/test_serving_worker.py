"""The generation worker: first come first served, cancellation before and during a run, failures."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from specmeter.metrics.records import Emission, FinishReason, StepRecord
from specmeter.serving.engine import GenerationResult
from specmeter.serving.worker import GenerationWorker, Job


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

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        temperature: float,
        top_p: float,
        seed: int | None,
        on_emit: Callable[[list[int]], bool | None],
    ) -> GenerationResult:
        self.started.append(prompt_ids[0])
        if prompt_ids[0] == self.fail_on:
            raise RuntimeError("boom")
        out: list[int] = []
        reason: FinishReason = "length"
        for i in range(max_tokens):
            time.sleep(self.step_s)
            out.append(i)
            if on_emit([i]):
                reason = "interrupted"
                break
        emissions = tuple(Emission(0.001 * (j + 1), 1) for j in range(len(out)))
        return _Result(tuple(out), (), emissions, 0.001, 0.001 * len(out), 0.0, reason)


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
        max_tokens,
        0.0,
        1.0,
        None,
        on_tokens=lambda t: tokens.extend(t) if tokens is not None else None,
        on_done=on_done,
    )
    job.finished = event  # type: ignore[attr-defined]
    return job


def test_jobs_run_in_arrival_order_and_cancelled_queued_jobs_never_start() -> None:
    engine = FakeEngine(step_s=0.005)
    worker = GenerationWorker(engine)  # type: ignore[arg-type]
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


def test_cancelling_a_running_job_stops_it_after_the_current_step() -> None:
    engine = FakeEngine(step_s=0.01)
    worker = GenerationWorker(engine)  # type: ignore[arg-type]
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
