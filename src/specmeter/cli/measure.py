"""The measuring core shared by ``bench``, ``tune``, ``select`` and ``demo``.

Load, prepare prompts, measure the cost curve, run baseline and candidates interleaved with per-request rows
streamed to CSV/JSONL and to the run store, summarise into a result file whose optional extra section
(``tune``/``select``) the caller fills in. The JSON exists from the moment the cost curve is measured, the
run store holds the run as partial from the start, and an interrupted run keeps everything finished so far.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from specmeter.cli.bench import BenchConfig, load_models, prepare_prompts, summarize_into
from specmeter.cli.common import EXIT_INTERRUPTED, console, fail
from specmeter.report.files import ResultFile

if TYPE_CHECKING:
    from specmeter.engine.runner import ModelLike, PreparedPrompt, RunState
    from specmeter.store import RunRecorder


class SectionedResult(ResultFile):
    """The bench result file plus one top-level section named after the kind (``tune``, ``select``)."""

    def __init__(self, path: Path | None, *, kind: str, config: Mapping[str, Any]) -> None:
        super().__init__(path, kind=kind, config=config)
        self._section: dict[str, Any] | None = None
        self._extra: dict[str, Any] = {}

    def set_section(self, section: dict[str, Any] | None) -> None:
        self._section = section
        self.save()

    def set_extra(self, name: str, section: dict[str, Any]) -> None:
        """Another top-level section (``vllm``: the engine's own counters beside specmeter's)."""
        self._extra[name] = section
        self.save()

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data.update(self._extra)
        if self._section is not None:
            data[self.kind] = self._section
        return data


@dataclass
class Measurement:
    target: ModelLike
    drafts: list[Any]  # LoadedModel (native) or ModelHandle (vLLM)
    prompts: list[PreparedPrompt]
    state: RunState[Any]
    result: SectionedResult
    recorder: RunRecorder
    interrupted: bool


def run_candidates(
    cfg: BenchConfig,
    *,
    measure: Callable[[RunState[Any], Sequence[int]], None],
    on_costs: Callable[[Measurement], None] | None = None,
    after_runs: Callable[[Measurement], None] | None = None,
    quiet: bool = False,
) -> Measurement:
    """Every (draft, k) of ``cfg`` plus the baseline over the prompts, interleaved; summaries in the result.

    ``measure(state, context_ids)`` fills ``state.cost_curves``; ``on_costs`` runs right after it, so a
    caller can put the curve on disk before the long part starts. With ``--backend vllm`` neither runs (vLLM
    exposes no forward timings); ``after_runs`` runs before the summaries, where a curve can be derived.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from specmeter.engine.runner import Candidate, RunState, run_interleaved
    from specmeter.engine.sampling import SamplingParams
    from specmeter.report.files import RequestSink
    from specmeter.store import RunRecorder, StoreError

    if cfg.threads is not None:
        if cfg.threads < 1:
            fail("--threads must be >= 1")
        import torch

        torch.set_num_threads(cfg.threads)
    try:
        params = SamplingParams(cfg.temperature, cfg.top_p)
    except ValueError as e:
        fail(f"--temperature/--top-p: {e}")
    if cfg.max_tokens < 1:
        fail("--max-tokens must be >= 1")
    if cfg.limit is not None and cfg.limit < 1:
        fail("--limit must be >= 1")
    vllm = cfg.backend == "vllm"
    target: Any
    drafts: list[Any]
    if vllm:
        from specmeter.cli.measure_vllm import load_handles

        target, drafts = load_handles(cfg)
    else:
        target, drafts = load_models(cfg)
    prompts = prepare_prompts(cfg, target)
    candidates: list[Candidate[Any]] = [Candidate(d, k) for d in drafts for k in cfg.k]
    state: RunState[Any] = RunState(target=target, candidates=candidates, params=params)
    result = SectionedResult(cfg.json_out, kind=cfg.kind, config=cfg.as_dict())
    result.set_models(target.info, {d.info.name: d.info for d in drafts})
    try:  # a partial run from here on; it becomes complete only in finish()
        recorder = RunRecorder.start(cfg.store, result.to_dict())
    except StoreError as e:
        fail(f"--store: {e}")
    m = Measurement(target, drafts, prompts, state, result, recorder, interrupted=False)
    if not vllm:
        with console.status("measuring the cost curve t_T(n) and t_D(1) on warm caches…", spinner="dots"):
            measure(state, prompts[0].ids)
        if on_costs is not None:
            on_costs(m)

    labels: dict[int | None, str] = {None: "baseline", **{i: c.label for i, c in enumerate(candidates)}}
    with RequestSink(cfg.csv_out, cfg.log_out) as sink:

        def on_record(slot: int | None, rec: Any) -> None:
            c = None if slot is None else candidates[slot]
            name, k = (None, 0) if c is None else (c.draft.info.name, c.k)
            sink.write(labels[slot], name, k, rec)
            recorder.add_request(labels[slot], name, k, rec)

        progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, disable=quiet, transient=True,
        )  # fmt: skip
        with progress:
            task = progress.add_task(f"{len(candidates) + 1} runs × prompts", total=len(prompts))
            try:
                if vllm:
                    from specmeter.cli.measure_vllm import run_vllm

                    run_vllm(cfg, m, on_record, progress, task)
                else:
                    run_interleaved(
                        state, prompts, seed=cfg.seed, on_record=on_record,
                        on_prompt_done=lambda n: progress.advance(task),
                    )  # fmt: skip
            except KeyboardInterrupt:
                m.interrupted = True
    if after_runs is not None:
        after_runs(m)
    summarize_into(result, state)
    return m


def finish(m: Measurement, section: dict[str, Any] | None = None) -> dict[str, Any]:
    """Store the section, mark file and store run complete unless interrupted; return the result dict."""
    if section is not None:
        m.result.set_section(section)
    if not m.interrupted:
        m.result.finish()
    out = m.result.to_dict()
    m.recorder.finish(out, complete=not m.interrupted)
    return out


def report_recorded(m: Measurement, quiet: bool) -> None:
    if m.recorder.recorded and not quiet:
        console.print(f"Recorded as run {m.recorder.run_id} in {m.recorder.path}", soft_wrap=True)


def exit_if_interrupted(m: Measurement) -> None:
    if m.interrupted:
        done = f"{len(m.state.baseline)} of {len(m.prompts)} prompts"
        if m.state.per_candidate and len(m.state.baseline) == len(m.prompts):  # vLLM: runs one after another
            finished = len(m.state.baseline) + sum(len(r) for r in m.state.per_candidate.values())
            done = f"{finished} of {len(m.prompts) * (len(m.state.candidates) + 1)} requests"
        console.print(f"[yellow]Interrupted after {done}; everything finished so far is on disk.[/]")
        raise typer.Exit(EXIT_INTERRUPTED)
