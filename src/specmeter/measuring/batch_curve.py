"""Speculation across batch sizes: ``bench --batch B`` at several B side by side, and the predicted curve.

Where speculation stops paying is read from two sources, and this module puts them next to each other:

* **measured** — :func:`bench_at_batches` runs ``bench --batch B`` (``measuring.batch_run``, the very code
  the command runs: waves of B concurrent sequences, baseline and candidates interleaved wave by wave, the
  cost surface timed between the waves) once per B, and :func:`batch_rows` reads each result into one row
  per (B, candidate): E_meas end-to-end and decode-only with their paired intervals, the surface's wave
  prediction and its relative error, the steady-state E(B, k), and how many greedy outputs equalled the
  baseline's (from the run's per-request log). Each B is its own run, so every ratio is measured side by
  side within that run; nothing is compared across runs but ratios.
* **predicted** — :func:`predict_curve` times the surface t_step(B, k) for every B and k = 0 … k_max in the
  loop's rhythm at the per-position acceptance of a run already measured, and analyses it as ``tune
  --batch`` does (``selection.batch_analysis.analyse_batch_tune``): E(B, k), the best k per B, the crossover
  and the schedule (vLLM's ``num_speculative_tokens_per_batch_size`` and ``serve --k-schedule``).

:func:`best_k_by_batch` and :func:`crossover` are the same rule for both: per B the k with the highest E
(k = 0, plain decoding, counts as 1.0; ties go to the smaller k), and the crossover is the smallest B whose
best k is 0. ``specmeter demo`` ("where speculation stops paying") and ``benchmarks/batched_spec.py`` and
``benchmarks/crossover.py`` use them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specmeter import jsonsafe
from specmeter.measuring.errors import EXIT_OK, MeasureInterrupted
from specmeter.metrics.records import run_label

if TYPE_CHECKING:
    from specmeter.engine.loader import LoadedModel
    from specmeter.measuring.config import MeasureConfig
    from specmeter.measuring.progress import Reporter
    from specmeter.metrics.records import RunRecord

__all__ = [
    "BatchRun",
    "batch_rows",
    "bench_at_batches",
    "best_k_by_batch",
    "crossover",
    "outputs_matched",
    "predict_curve",
    "predicted_speedups",
]


@dataclass(frozen=True)
class BatchRun:
    """One ``bench --batch B`` run: its result dict, its rows (:func:`batch_rows`) and its exit code."""

    batch: int
    result: dict[str, Any]
    rows: list[dict[str, Any]]
    exit_code: int


def outputs_matched(log: Path | None) -> dict[str, list[int]]:
    """Per run label (``draft@k=4``), [greedy outputs equal to the baseline's, outputs compared], read from
    a per-request log (``--log``); empty without one or when nothing was compared (sampling)."""
    out: dict[str, list[int]] = {}
    if log is None or not log.is_file():
        return out
    for line in log.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        entry = jsonsafe.loads(line, surrogates=True)
        same = entry.get("matches_baseline")
        if same is None:
            continue
        counts = out.setdefault(str(entry.get("run")), [0, 0])
        counts[0] += bool(same)
        counts[1] += 1
    return out


def batch_rows(
    result: Mapping[str, Any], matched: Mapping[str, list[int]] | None = None
) -> list[dict[str, Any]]:
    """One row per candidate of a ``bench --batch B`` result: measured beside predicted at B."""
    section = (result.get(str(result.get("kind"))) or {}).get("batch") or {}
    summaries = {(c["draft"], c["k"]): c["summary"] for c in result.get("candidates", [])}
    verdict = (result.get("hygiene") or {}).get("verdict")
    rows = []
    for c in section.get("candidates", []):
        s = summaries.get((c["draft"], c["k"]), {})
        rows.append(
            {
                "batch": section["batch"],
                "draft": c["draft"],
                "k": c["k"],
                "requests": s.get("requests"),
                "acceptance_rate": s.get("acceptance_rate"),
                "acceptance_length": c["acceptance_length"],
                "speedup_measured": s.get("speedup_measured"),
                "speedup_measured_ci": s.get("speedup_measured_ci"),
                "speedup_measured_decode": c["speedup_measured_decode"],
                "speedup_measured_decode_ci": c["speedup_measured_decode_ci"],
                "speedup_predicted_waves": c["speedup_predicted_waves"],
                "error": c["error"],
                "speedup_predicted": c["speedup_predicted"],
                "outputs_matched": (matched or {}).get(run_label(c["draft"], c["k"])),
                "machine": verdict,
            }
        )
    return rows


def bench_at_batches(
    cfg: MeasureConfig,
    batches: Iterable[int],
    reporter: Reporter,
    *,
    out: Path | None = None,
    stem: str = "batch",
) -> list[BatchRun]:
    """``bench --batch B`` with ``cfg`` once per B, in the order given; stops after an interrupted run.

    With ``out``, run B writes ``{stem}-B.json`` and its per-request log ``{stem}-B.jsonl`` there (the log
    gives the greedy output check); without it, the log goes to a temporary file, removed afterwards.
    """
    import tempfile

    from specmeter.measuring.bench_run import run_bench

    runs: list[BatchRun] = []
    with tempfile.TemporaryDirectory(prefix="specmeter-batch-") as tmp:
        for b in batches:
            where = out if out is not None else Path(tmp)
            log = where / f"{stem}-{b}.jsonl"
            json_out = None if out is None else where / f"{stem}-{b}.json"
            outcome = run_bench(replace(cfg, batch=(b,), json_out=json_out, log_out=log), reporter)
            rows = batch_rows(outcome.result, outputs_matched(log))
            runs.append(BatchRun(b, outcome.result, rows, outcome.exit_code))
            if outcome.exit_code != EXIT_OK:
                break
    return runs


def best_k_by_batch(speedups: Mapping[int, Mapping[int, float | None]]) -> dict[int, int]:
    """Per batch size the k with the highest E among those given (k = 0 is 1.0; None is skipped; ties go
    to the smaller k) — the rule ``tune --batch`` picks its best k by."""
    best: dict[int, int] = {}
    for b, by_k in speedups.items():
        scored = [(1.0, 0)] + [(float(e), -k) for k, e in by_k.items() if k > 0 and e is not None]
        best[b] = -max(scored)[1]
    return best


def crossover(best: Mapping[int, int]) -> int | None:
    """The smallest batch size whose best k is 0 (speculation no longer pays), None if every one pays."""
    return next((b for b in sorted(best) if best[b] == 0), None)


def predicted_speedups(
    section: Mapping[str, Any], ks: Iterable[int] | None = None
) -> dict[int, dict[int, float | None]]:
    """{B: {k: E(B, k)}} from a ``tune --batch`` section's table (``ks``: only those draft lengths)."""
    keep = None if ks is None else set(ks)
    return {
        row["batch"]: {c["k"]: c["speedup_predicted"] for c in row["by_k"] if keep is None or c["k"] in keep}
        for row in section["table"]
    }


def predict_curve(
    target: LoadedModel,
    draft: LoadedModel,
    source: RunRecord,
    prompts: Sequence[Sequence[int]],
    *,
    batches: Sequence[int],
    k_max: int,
    max_tokens: int,
    repeats: int,
    reporter: Reporter,
) -> dict[str, Any]:
    """``tune --batch``'s analysis of the surface at ``batches`` × k = 0 … ``k_max``, timed now on ``prompts``
    (token ids, reused in turn) at the per-position acceptance of ``source`` (a run of ``draft``); positions
    beyond the source's k decay by 0.9 per position, as ``tune --batch`` extends them."""
    from specmeter.engine.surface import measure_cost_surface
    from specmeter.measuring.batch_run import measured_rates, surface_steps
    from specmeter.selection.batch_analysis import analyse_batch_tune

    # Native and transformers models both batch (as engine.batch_runner relies on).
    target_model: Any = target.model
    draft_model: Any = draft.model
    rates = measured_rates(source.requests, source.k)
    rates += [rates[-1] * 0.9 ** (i + 1) for i in range(k_max - len(rates))]
    try:
        with reporter.status("timing the cost surface t_step(B, k) in the loop's rhythm…"):
            surface = measure_cost_surface(
                target_model, draft_model, prompts, batches=batches, ks=range(k_max + 1), rates=rates,
                max_tokens=max_tokens, repeats=surface_steps(repeats),
            )  # fmt: skip
    except KeyboardInterrupt:
        raise MeasureInterrupted(
            "Interrupted while timing the cost surface; the runs before it are on disk."
        ) from None
    return analyse_batch_tune(source, surface, k_max=k_max, draft_path=str(draft.info.path))
