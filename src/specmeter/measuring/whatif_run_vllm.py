"""``whatif --backend vllm``: the same surface through vLLM's own synthetic mode (B = 1, one engine per cell).

vLLM 0.32 has the engine half of a what-if: ``speculative_config.rejection_sample_method: "synthetic"`` with
``synthetic_acceptance_rates`` (per-position, unconditional, non-increasing; ``vllm/config/speculative.py``),
the semantics ``metrics.synthetic`` defines for the native engine too. Each cell is one vLLM engine with that
config (a draft model proposing, the target verifying, acceptance forced), the baseline one engine without
speculation; runs follow one another (``engine.vllm_runner.run_sequential``, as ``bench --backend vllm``),
every request alone and to its token limit (``ignore_eos``). vLLM's own counters over each run sit beside the
records in the ``vllm`` section, so the drawn acceptance is checked against vLLM's own count.

Batched what-ifs through vLLM are a server's job: ``sweep`` with a launch template whose
``--speculative-config`` carries the synthetic fields. vLLM's CPU build refuses synthetic mode (its
rejection kernels assert "Synthetic acceptance not supported with CPU sampling"); that refusal is one error
line before any engine starts (``engine.vllm_backend.synthetic_unsupported``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from specmeter.measuring.errors import MeasureError, MeasureInterrupted
from specmeter.measuring.run import Outcome, close, start_watch

if TYPE_CHECKING:
    from specmeter.measuring.progress import Reporter
    from specmeter.measuring.whatif_run import WhatifConfig
    from specmeter.metrics.records import RequestRecord

__all__ = ["run_whatif_vllm"]


def run_whatif_vllm(
    cfg: WhatifConfig, reporter: Reporter, *, render: Callable[[dict[str, Any]], None] | None = None
) -> Outcome:
    from specmeter.engine.runner import Candidate, RunState
    from specmeter.engine.sampling import SamplingParams
    from specmeter.engine.vllm_backend import VllmSettings, import_vllm, synthetic_unsupported
    from specmeter.engine.vllm_runner import run_sequential
    from specmeter.measuring.prompts import prepare_prompts
    from specmeter.measuring.vllm import load_handles, one_line
    from specmeter.measuring.whatif_run import (
        WhatifMeasurement,
        baseline_label,
        cell_label,
        draft_facts,
        read_overlays,
        whatif_section,
    )
    from specmeter.report.files import RequestSink, ResultFile
    from specmeter.store import RunRecorder, StoreError

    m = cfg.measure
    if cfg.batches != (1,):
        raise MeasureError(
            "--batch: --backend vllm runs each request alone (B = 1); batched what-ifs through vLLM: sweep "
            "with a --launch template whose --speculative-config sets rejection_sample_method synthetic"
        )
    overlays = read_overlays(cfg.overlay)
    target, drafts = load_handles(m)
    refusal = synthetic_unsupported()
    if refusal is not None:
        raise MeasureError(refusal)
    prompts = prepare_prompts(m, target)
    draft = drafts[0]
    profiles = cfg.profiles
    state: RunState[Any] = RunState(
        target=target, candidates=[Candidate(draft, p.k) for p in profiles],
        params=SamplingParams(m.temperature, m.top_p),
    )  # fmt: skip
    result = ResultFile(m.json_out, kind="whatif", config={**m.as_dict(), "alphas": list(cfg.alphas),
                                                          "batches": [1], "ignore_eos": True})  # fmt: skip
    result.set_models(target.info, {draft.info.name: draft.info})
    try:
        recorder = RunRecorder.start(m.store, result.to_dict())
    except StoreError as e:
        raise MeasureError(f"--store: {e}") from None
    meas = WhatifMeasurement(m, target, drafts, prompts, state, result, recorder, reporter)
    meas.total = len(prompts) * (1 + len(profiles))
    labels = [cell_label(p.alpha, p.k, 1) for p in profiles]
    vllm: dict[str, Any] = {"version": str(getattr(import_vllm(), "__version__", "unknown")), "runs": {}}
    watch = start_watch(m)
    try:
        with (
            RequestSink(m.csv_out, m.log_out) as sink,
            reporter.task("vLLM synthetic runs", meas.total) as task,
        ):

            def on_record(slot: int | None, rec: RequestRecord) -> None:
                label = baseline_label(1) if slot is None else labels[slot]
                name, k = (None, 0) if slot is None else (draft.info.name, profiles[slot].k)
                sink.write(label, name, k, rec)
                recorder.add_request(label, name, k, rec)
                meas.done += 1

            def on_run_done(label: str, reconciled: dict[str, Any]) -> None:
                vllm["runs"][label] = reconciled
                result.set_section("vllm", vllm)

            try:
                run_sequential(
                    state, prompts, VllmSettings(**m.vllm_settings()), seed=m.seed, on_record=on_record,
                    on_request_done=task.advance, on_run_done=on_run_done,
                    synthetic=[p.rates for p in profiles], ignore_eos=True, labels=labels,
                )  # fmt: skip
            except KeyboardInterrupt:
                meas.interrupted = True
            except (ValueError, RuntimeError, OSError) as e:
                raise MeasureError(f"vLLM could not run the what-if: {one_line(e)}") from None
    except KeyboardInterrupt:
        raise MeasureInterrupted("Interrupted before any request was measured.") from None
    finally:
        meas.hygiene = watch.finish()
    if meas.hygiene is not None:
        result.set_section("hygiene", meas.hygiene)
    records: dict[tuple[int, int | None], list[RequestRecord]] = {(1, None): list(state.baseline)}
    for i in range(len(profiles)):
        records[(1, i)] = list(state.per_candidate.get(i, []))
    section = whatif_section(
        cfg, records, overlays, draft=draft_facts(cfg, draft, target), cost_ratio=None,
        interrupted=meas.interrupted, backend="vllm",
    )  # fmt: skip
    return close(meas, section, render=render)
