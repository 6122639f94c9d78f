"""The measuring core: baseline and every (draft, k) over a golden set, from models to result file.

:func:`run_candidates` loads the models (``measuring.models``; for ``--backend vllm`` handles only,
``measuring.vllm``), prepares the prompts, measures the cost curve, then runs the baseline and every
candidate — interleaved prompt by prompt natively (``engine.runner``), one engine per run with vLLM —
streaming each request to CSV/JSONL and the run store the moment it exists, and summarises into the result
file. :func:`close` is the one ending every measuring command shares.

Hygiene: a low-rate sampler (``specmeter.hygiene``) watches the machine from the cost curve to the end of
the runs; the result gets a ``hygiene`` section (verdict quiet / busy / unusable, the figures, each
candidate's drift test), :func:`close` repeats a busy verdict as a warning when the command renders nothing
itself, and with ``cfg.strict`` a busy or unusable machine ends the command with exit code 4.

Durability: the JSON exists (``complete: false``) from the moment the models are known, the run store
holds the run as partial from the start, and Ctrl-C during the runs keeps everything finished so far; the
run is then closed as partial with exit code 130. Ctrl-C before any request was measured (loading the
models, the cost curve) raises :class:`MeasureInterrupted` and leaves no run in the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from specmeter.measuring.errors import (
    EXIT_INTERRUPTED,
    EXIT_NOISY_MACHINE,
    EXIT_OK,
    MeasureError,
    MeasureInterrupted,
)
from specmeter.metrics.records import BASELINE, ModelInfo, RequestRecord, run_label

if TYPE_CHECKING:
    from specmeter.engine.runner import ModelLike, PreparedPrompt, RunState
    from specmeter.hygiene.section import MachineWatch
    from specmeter.measuring.config import MeasureConfig
    from specmeter.measuring.progress import Reporter
    from specmeter.report.files import ResultFile
    from specmeter.store import RunRecorder

__all__ = ["Measurement", "Outcome", "candidate_method", "close", "run_candidates"]

Measure = Callable[["RunState[Any]", Sequence[int]], None]
# A native runner other than prompt-by-prompt interleaving (bench --batch: waves of B): it gets the state,
# the prompts, the per-record callback and a progress callback counting prompts done.
Runner = Callable[
    [
        "RunState[Any]",
        "Sequence[PreparedPrompt]",
        Callable[[int | None, RequestRecord], None],
        Callable[[int], None],
    ],
    None,
]


@dataclass
class Measurement:
    """A run in progress or done: what was loaded, the records so far, and where they are written."""

    cfg: MeasureConfig
    target: ModelLike
    drafts: list[Any]  # LoadedModel or MethodModel (native), or ModelHandle (vLLM)
    prompts: list[PreparedPrompt]
    state: RunState[Any]
    result: ResultFile
    recorder: RunRecorder
    reporter: Reporter
    interrupted: bool = False
    hygiene: dict[str, Any] | None = None  # the result's ``hygiene`` section, once the runs are over

    def records(self) -> dict[str, list[RequestRecord]]:
        """Every run's records so far, keyed by run label (``baseline``, ``draft@k=4``)."""
        out = {BASELINE: list(self.state.baseline)}
        for i, c in enumerate(self.state.candidates):
            out[c.label] = list(self.state.per_candidate.get(i, []))
        return out

    def progress_text(self) -> str:
        """How far the runs got: prompts (interleaved) or requests (vLLM runs one after another)."""
        s, n = self.state, len(self.prompts)
        if s.per_candidate and len(s.baseline) == n:
            finished = len(s.baseline) + sum(len(r) for r in s.per_candidate.values())
            return f"{finished} of {n * (len(s.candidates) + 1)} requests"
        return f"{len(s.baseline)} of {n} prompts"


@dataclass(frozen=True)
class Outcome:
    """The result dict as written, and the exit code a command should end with (0, or 130 interrupted)."""

    result: dict[str, Any]
    exit_code: int


def measure_costs_for(cfg: MeasureConfig) -> Measure:
    """bench's and select's cost curve: the target up to max k + 1, t_D(1) per draft."""

    def measure(state: RunState[Any], context: Sequence[int]) -> None:
        from specmeter.engine.runner import measure_costs

        measure_costs(state, context, repeats=cfg.cost_repeats)

    return measure


def stamp_copy_bandwidth(state: RunState[Any]) -> None:
    """Measure the device's copy bandwidth beside the cost curves and keep it on each of them: the
    reference of ``bandwidth_fraction`` (engine.membw, docs/metrics.md "achieved bandwidth")."""
    from dataclasses import replace

    from specmeter.engine.membw import measure_copy_bandwidth

    if not state.cost_curves:
        return
    copy = measure_copy_bandwidth(state.target.model.device)
    for name, curve in list(state.cost_curves.items()):
        state.cost_curves[name] = replace(curve, copy_bytes_per_s=copy)


def run_candidates(
    cfg: MeasureConfig,
    reporter: Reporter,
    *,
    measure: Measure | None = None,
    on_costs: Callable[[Measurement], None] | None = None,
    after_runs: Callable[[Measurement], None] | None = None,
    runner: Runner | None = None,
) -> Measurement:
    """Every (draft, k) of ``cfg`` plus the baseline over the prompts; summaries in the result file.

    ``measure(state, context_ids)`` fills ``state.cost_curves`` (default: :func:`measure_costs_for`);
    ``on_costs`` runs right after it, so a caller can put the curve on disk before the long part starts.
    With ``--backend vllm`` neither runs (vLLM exposes no forward timings); ``after_runs`` runs before the
    summaries, where a curve can be derived. Raises MeasureError before anything is measured; Ctrl-C during
    the runs sets ``interrupted`` and returns what was measured.
    """
    from specmeter.engine.runner import Candidate, RunState
    from specmeter.engine.sampling import SamplingParams
    from specmeter.measuring.models import MethodModel, load_models
    from specmeter.measuring.prompts import prepare_prompts
    from specmeter.report.files import ResultFile
    from specmeter.store import RunRecorder, StoreError

    if cfg.threads is not None:
        import torch

        torch.set_num_threads(cfg.threads)
    vllm = cfg.backend == "vllm"
    target: Any
    drafts: list[Any]
    try:  # Ctrl-C before the first measurement: one line, exit 130, nothing left behind
        if vllm:
            from specmeter.measuring.vllm import load_handles

            target, drafts = load_handles(cfg)
        else:
            target, drafts = load_models(cfg)
        prompts = prepare_prompts(cfg, target)
    except KeyboardInterrupt:
        raise MeasureInterrupted("Interrupted while loading the models; nothing was measured.") from None
    conversations = sum(1 for p in prompts if p.turns > 1)
    if conversations and vllm:
        reporter.warn(
            f"{conversations} multi-turn conversation(s): --backend vllm measures their first turn only "
            "(the native backend and `load` replay every turn)"
        )
    # A method's proposer holds a run's state (suffix decoding's cache): one per (method, k) candidate.
    candidates: list[Candidate[Any]] = [
        Candidate(d.fresh() if i and isinstance(d, MethodModel) else d, k)
        for d in drafts
        for i, k in enumerate(cfg.k)
    ]
    params = SamplingParams(cfg.temperature, cfg.top_p)  # the config checked both
    state: RunState[Any] = RunState(target=target, candidates=candidates, params=params)
    result = ResultFile(cfg.json_out, kind=cfg.kind, config=cfg.as_dict())
    result.set_models(target.info, {d.info.name: d.info for d in drafts})
    try:  # a partial run from here on; it becomes complete only in close()
        recorder = RunRecorder.start(cfg.store, result.to_dict())
    except StoreError as e:
        raise MeasureError(f"--store: {e}") from None
    m = Measurement(cfg, target, drafts, prompts, state, result, recorder, reporter)
    watch = start_watch(cfg)
    try:
        _measure(m, watch, measure, on_costs, runner)
    except KeyboardInterrupt:  # during the cost curve: no request was measured, so there is no run
        recorder.discard()
        raise MeasureInterrupted(
            "Interrupted while measuring the cost curve; nothing was measured (no run recorded)."
        ) from None
    finally:  # an error mid-run must not leave the sampler's thread behind
        m.hygiene = finish_watch(m, watch)
    if m.hygiene is not None:
        result.set_section("hygiene", m.hygiene)
    if after_runs is not None:
        after_runs(m)
    summarize_into(m)
    return m


def start_watch(cfg: MeasureConfig) -> MachineWatch:
    """The machine sampler for one run; it knows how many threads the measurement itself uses."""
    from specmeter.hygiene.section import MachineWatch

    threads = None
    if cfg.backend == "native":
        import torch

        threads = torch.get_num_threads()
    return MachineWatch.start(threads=threads) if cfg.hygiene else MachineWatch.disabled()


def finish_watch(m: Measurement, watch: MachineWatch) -> dict[str, Any] | None:
    """Stop sampling; the verdict plus each candidate's drift test over its records so far."""
    from specmeter.hygiene.section import stability_by_candidate

    records = m.records()
    baseline = records.pop(BASELINE)
    return watch.finish(stability_by_candidate(baseline, records))


def _measure(
    m: Measurement,
    watch: MachineWatch,
    measure: Measure | None,
    on_costs: Callable[[Measurement], None] | None,
    runner: Runner | None = None,
) -> None:
    from specmeter.engine.runner import run_interleaved
    from specmeter.report.files import RequestSink

    cfg, state, prompts, result, recorder, reporter = (
        m.cfg,
        m.state,
        m.prompts,
        m.result,
        m.recorder,
        m.reporter,
    )
    candidates = state.candidates
    vllm = cfg.backend == "vllm"
    if not vllm:
        with reporter.status("measuring the cost curve t_T(n) and t_D(1) on warm caches…"):
            (measure or measure_costs_for(cfg))(state, prompts[0].ids)
            stamp_copy_bandwidth(state)
        if on_costs is not None:
            on_costs(m)

    with RequestSink(cfg.csv_out, cfg.log_out) as sink:

        def on_record(slot: int | None, rec: RequestRecord) -> None:
            c = None if slot is None else candidates[slot]
            name, k = (None, 0) if c is None else (c.draft.info.name, c.k)
            label = run_label(name, k)
            sink.write(label, name, k, rec)
            recorder.add_request(label, name, k, rec)

        with reporter.task(f"{len(candidates) + 1} runs × prompts", len(prompts)) as task:
            try:
                if vllm:
                    from specmeter.measuring.vllm import run_vllm

                    run_vllm(cfg, state, prompts, result, on_record, task)
                elif runner is not None:
                    runner(state, prompts, on_record, task.advance)
                else:
                    run_interleaved(
                        state, prompts, seed=cfg.seed, on_record=on_record,
                        on_prompt_done=lambda n: task.advance(),
                    )  # fmt: skip
            except KeyboardInterrupt:
                m.interrupted = True
    if state.cut_turns:
        reporter.warn(
            f"{state.cut_turns} conversation turn(s) not run: the conversation outgrew the target's context"
        )


def summarize_into(m: Measurement) -> None:
    """The baseline's and every candidate's summaries (overall and per category) into the result file."""
    from specmeter.metrics.summary import summarize, summarize_by_category

    base_run = m.state.baseline_run()
    m.result.set_baseline(summarize(base_run, None), summarize_by_category(base_run, None))
    for i, c in enumerate(m.state.candidates):
        run = m.state.candidate_run(i)
        m.result.add_candidate(
            c.draft.info.name, c.k, summarize(run, base_run), summarize_by_category(run, base_run),
            method=candidate_method(m.cfg, c.draft.info),
        )  # fmt: skip


def candidate_method(cfg: MeasureConfig, info: ModelInfo) -> dict[str, Any]:
    """A candidate's ``method`` entry (docs/results.md): its spec, a draft model, or vLLM's ``--method``."""
    from specmeter.methods import method_entry

    entry = method_entry(info.method)
    if cfg.backend == "vllm":
        # vLLM names the method itself (draft_model, ngram, eagle, ...); its n-gram lookup is model-free.
        entry["name"] = cfg.vllm.method
        entry["deterministic"] = entry["model_free"] = cfg.vllm.method == "ngram"
    return entry


def close(
    m: Measurement,
    section: dict[str, Any] | None = None,
    *,
    render: Callable[[dict[str, Any]], None] | None = None,
) -> Outcome:
    """The ending every measuring command shares.

    Stores ``section`` (the command's own part, under ``cfg.kind``), marks the result file and the store's
    run complete unless interrupted, hands the result to ``render`` (every renderer prints a busy machine's
    line above and below the result; without one it is printed here, once), says where the run was
    recorded, and returns the exit code: 0; 130 after an interruption (saying how far it got); 4 with
    ``cfg.strict`` when the machine was busy or unusable (everything is written all the same).
    """
    from specmeter.hygiene.verdict import is_flagged

    if section is not None:
        m.result.set_section(m.cfg.kind, section)
    if not m.interrupted:
        m.result.finish()
    out = m.result.to_dict()
    m.recorder.finish(out, complete=not m.interrupted)
    if render is not None:
        render(out)
    elif m.hygiene is not None and m.hygiene.get("message"):
        m.reporter.warn(str(m.hygiene["message"]))
    if m.recorder.recorded:
        m.reporter.note(f"Recorded as run {m.recorder.run_id} in {m.recorder.path}")
    if m.interrupted:
        m.reporter.warn(f"Interrupted after {m.progress_text()}; everything finished so far is on disk.")
        return Outcome(out, EXIT_INTERRUPTED)
    if m.cfg.strict and is_flagged(m.hygiene):
        verdict = (m.hygiene or {}).get("verdict")
        m.reporter.warn(
            f"--strict: the machine was {verdict} during the run; exit code {EXIT_NOISY_MACHINE} "
            "(the results are written, with the verdict in their hygiene section)"
        )
        return Outcome(out, EXIT_NOISY_MACHINE)
    return Outcome(out, EXIT_OK)
