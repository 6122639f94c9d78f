"""``specmeter whatif``: the speedup of acceptance rates you do not have yet, measured on the real target.

For every batch size B the golden set runs in waves of B concurrent sequences (``engine.batch_runner``),
through the baseline and through one *synthetic* run per (α, k): the verifier accepts draft position i with
the unconditional rate r_i of the α's profile (``metrics.synthetic``; vLLM's ``rejection_sample_method:
"synthetic"`` semantics), while every forward a real run does still runs — the draft's proposals (a real
draft, or a stand-in made of the target's first layers, ``engine.standin``), the catch-up after full
accepts, the target's verification of d + 1 positions. Runs are interleaved wave by wave, the order
rotating, as ``bench --batch`` does, so a shared machine's drift hits all of them alike.

Two choices make E a pure time ratio here. Every request runs to its token limit (EOS ignored in every
run), so the baseline and each synthetic run emit the same number of tokens whatever was "accepted". And
the outputs are not the target's text (forced acceptance keeps draft tokens the target would not have
chosen), so they are never compared with the baseline's, never enter a quality check, and the result says
so (``whatif.synthetic``).

The cost curve at batch 1 is measured first (t_T(n), t_D(1)): its c = t_D(1) / t_T(1) is the cost ratio
the surface was measured at, printed beside the draft (or the stand-in's layer fraction). The analysis of
the surface — E at any α, break-even α, best k, the overlay of real domains — is ``selection.whatif_surface``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specmeter import jsonsafe
from specmeter.measuring.errors import MeasureError, MeasureInterrupted
from specmeter.measuring.outputs import check_output_paths
from specmeter.measuring.run import Measurement, Outcome, close, start_watch
from specmeter.metrics.records import BASELINE, RequestRecord
from specmeter.metrics.synthetic import (
    SyntheticProfile,
    geometric_profile,
    profile_from_length,
    profile_from_rates,
)

if TYPE_CHECKING:
    from specmeter.measuring.config import MeasureConfig
    from specmeter.measuring.progress import Reporter

__all__ = [
    "WHATIF_ALPHAS",
    "WHATIF_BATCHES",
    "WhatifConfig",
    "WhatifMeasurement",
    "baseline_label",
    "cell_label",
    "draft_facts",
    "read_overlays",
    "run_whatif",
    "whatif_section",
]

WHATIF_ALPHAS = (0.2, 0.4, 0.6, 0.8)
WHATIF_BATCHES = (1,)
OUTPUTS_NOTE = (
    "synthetic acceptance: the verifier accepted draft positions at the forced rates, so the outputs are "
    "not the target's text; speeds are real, texts and quality checks are not"
)


def cell_label(alpha: float, k: int, batch: int) -> str:
    """The run label of one synthetic cell (CSV, log, store): ``α=0.60@k=4 B=8``."""
    return f"α={alpha:.2f}@k={k} B={batch}"


def baseline_label(batch: int) -> str:
    return f"{BASELINE} B={batch}"


@dataclass(frozen=True)
class WhatifConfig:
    """What a what-if run is asked: the measuring options (``measure``) plus the grid; validated once.

    ``alphas`` are acceptance rates of full drafts, one geometric profile per (α, k); ``rates`` are explicit
    profiles (vLLM's ``synthetic_acceptance_rates``), each at its own k = its length; ``lengths`` are mean
    acceptance lengths (vLLM's ``synthetic_acceptance_length``), one profile per (L, k) by vLLM's rule
    (``metrics.synthetic.profile_from_length``), not combined with either. ``overlay`` are result files
    whose measured domains are placed on the surface.
    """

    measure: MeasureConfig
    alphas: Sequence[float] = WHATIF_ALPHAS
    rates: Sequence[Sequence[float]] = ()
    lengths: Sequence[float] = ()
    batches: Sequence[int] = WHATIF_BATCHES
    overlay: Sequence[Path] = ()
    at_alpha: float | None = None  # the α the overlay is also read at ("at α 0.65: 1.9× at B=1")
    alpha_from: Path | None = None  # a replay (or bench) result: its candidate's rates per domain, measured
    candidate: str | None = None  # the candidate of ``alpha_from`` (None: its only one)
    profiles: tuple[SyntheticProfile, ...] = field(init=False)
    overlays: tuple[tuple[str, Mapping[str, Any]], ...] = field(init=False)  # (path, validated JSON)
    replayed: tuple[dict[str, Any], ...] = field(init=False)  # alpha_from's domains, as overlay points

    def __post_init__(self) -> None:
        from specmeter.measuring.config import BATCH_MAX

        if len(self.measure.drafts) > 1:
            raise MeasureError("--draft: whatif times one draft's proposals (give one, or --standin)")
        for spec in self.measure.methods:
            if spec.model_free:
                raise MeasureError(
                    f"--draft {spec.label}: a model-free method proposes only where its lookup matches, so "
                    "forced acceptance has nothing to act on; whatif times a draft model or layers:n"
                )
        alphas = tuple(self.alphas)
        for a in alphas:
            if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0.0 <= a <= 1.0:
                raise MeasureError(f"--alpha: {a!r} is not an acceptance rate in [0, 1]")
        profiles: list[SyntheticProfile] = []
        for k in self.measure.k:
            profiles += [geometric_profile(float(a), k) for a in sorted(set(alphas))]
        for given in self.rates:
            try:
                p = profile_from_rates(given)
            except ValueError as e:
                raise MeasureError(f"--rates: {e}") from None
            if p.k not in self.measure.k:
                raise MeasureError(
                    f"--rates: {len(p.rates)} rates give k = {p.k}, which is not among --k "
                    f"{','.join(map(str, self.measure.k))}"
                )
            profiles.append(p)
        replayed, points = self._replayed()
        profiles += replayed
        object.__setattr__(self, "replayed", tuple(points))
        lengths = tuple(sorted(set(self.lengths)))
        if lengths and (alphas or self.rates or replayed):
            raise MeasureError(
                "--length: give mean acceptance lengths or --alpha/--rates/--alpha-from, not both"
            )
        for length in lengths:
            for k in self.measure.k:
                try:
                    profiles.append(profile_from_length(float(length), k))
                except (ValueError, TypeError) as e:
                    raise MeasureError(f"--length: {e}") from None
        object.__setattr__(self, "lengths", lengths)
        if not profiles:
            raise MeasureError(
                "--alpha/--rates/--length/--alpha-from: give at least one acceptance rate or length"
            )
        object.__setattr__(self, "profiles", tuple(profiles))
        batches = tuple(sorted(set(self.batches)))
        if not batches:
            raise MeasureError("--batch: give at least one batch size")
        for b in batches:
            if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= BATCH_MAX:
                raise MeasureError(f"--batch: {b!r} is not a batch size from 1 to {BATCH_MAX}")
        object.__setattr__(self, "batches", batches)
        object.__setattr__(self, "alphas", alphas)
        if self.at_alpha is not None and not 0.0 <= self.at_alpha <= 1.0:
            raise MeasureError(f"--at-alpha: {self.at_alpha!r} is not an acceptance rate in [0, 1]")
        for path in self.overlay:
            if not Path(path).is_file():
                raise MeasureError(f"--overlay: {path} is not a file")
        check_output_paths(self.measure.outputs, self.inputs)
        # Read and checked now, before any model loads: a bad overlay costs a second, not a measurement.
        object.__setattr__(self, "overlays", tuple(read_overlays(self.overlay)))

    @property
    def inputs(self) -> dict[str, Path | Sequence[Path] | None]:
        """Every file the run reads: the measuring inputs, the ``--overlay`` files and ``--alpha-from``."""
        return {
            **self.measure.inputs,
            "--overlay": [Path(p) for p in self.overlay],
            "--alpha-from": self.alpha_from,
        }

    def _replayed(self) -> tuple[list[SyntheticProfile], list[dict[str, Any]]]:
        """``--alpha-from``: per domain of the candidate (every category, and all of them together), its
        unconditional per-position rates P_1 … P_k (vLLM's ``synthetic_acceptance_rates``) at every ``--k``
        up to the candidate's own (the first positions' rates are those of a shorter k: docs/metrics.md,
        "choosing k"), each with the overlay point that reads the surface at exactly that cell. A domain
        whose rates stop short (a position no step reached) is left out."""
        if self.alpha_from is None:
            if self.candidate is not None:
                raise MeasureError(
                    "--candidate: names the candidate of --alpha-from RESULT; give --alpha-from"
                )
            return [], []
        from specmeter.selection.acceptance_source import AcceptanceSourceError, read_source

        try:
            source = read_source(Path(self.alpha_from), "--alpha-from")
            c = source.candidate(self.candidate)
        except AcceptanceSourceError as e:
            raise MeasureError(str(e)) from None
        ks = [k for k in self.measure.k if k <= c.k]
        if not ks:
            raise MeasureError(
                f"--alpha-from: {c.name} drafted to position {c.k}, short of --k "
                f"{','.join(map(str, self.measure.k))}: give --k {c.k} (or a candidate with a longer k)"
            )
        domains = {"all": c.overall, **c.categories} if len(c.categories) != 1 else dict(c.categories)
        profiles: dict[tuple[float, ...], SyntheticProfile] = {}
        points: list[dict[str, Any]] = []
        for k in ks:
            for name, figures in domains.items():
                rates = figures.rates(k)
                if rates is None:
                    continue
                p = profiles.setdefault(tuple(rates), profile_from_rates(rates))
                points.append({
                    "source": f"{self.alpha_from} ({c.name})", "domain": name, "draft": c.draft, "k": k,
                    "alpha": p.alpha, "measured_e": None, "requests": figures.requests,
                })  # fmt: skip
        if not points:
            raise MeasureError(
                f"--alpha-from: {c.name} in {self.alpha_from} has no per-position rates to position {ks[0]}"
            )
        return list(profiles.values()), points


@dataclass
class WhatifMeasurement(Measurement):
    """A measurement whose progress counts requests over the whole grid."""

    total: int = 0
    done: int = 0

    def progress_text(self) -> str:
        return f"{self.done} of {self.total} requests"


def run_whatif(
    cfg: WhatifConfig, reporter: Reporter, *, render: Callable[[dict[str, Any]], None] | None = None
) -> Outcome:
    """Measure the surface E(α, k, B), analyse it, close like every measuring command."""
    m = cfg.measure
    if m.backend != "native":
        raise MeasureError("--backend: this runs the native engine; measuring.whatif_run_vllm runs vLLM's")
    from specmeter.engine.runner import Candidate, RunState, measure_costs
    from specmeter.engine.sampling import SamplingParams
    from specmeter.measuring.models import load_models
    from specmeter.measuring.prompts import prepare_prompts
    from specmeter.report.files import ResultFile
    from specmeter.store import RunRecorder, StoreError

    if m.threads is not None:
        import torch

        torch.set_num_threads(m.threads)
    overlays = cfg.overlays
    try:
        target, drafts = load_models(m)
        prompts = prepare_prompts(m, target)
    except KeyboardInterrupt:
        raise MeasureInterrupted("Interrupted while loading the models; nothing was measured.") from None
    draft = drafts[0]
    params = SamplingParams(m.temperature, m.top_p)
    state: RunState[Any] = RunState(
        target=target, candidates=[Candidate(draft, k) for k in m.k], params=params
    )
    result = ResultFile(m.json_out, kind="whatif", config={**m.as_dict(), **_grid(cfg)})
    result.set_models(target.info, {draft.info.name: draft.info})
    result.set_section("whatif", {"synthetic": True, "note": OUTPUTS_NOTE, "complete": False})
    try:
        recorder = RunRecorder.start(m.store, result.to_dict())
    except StoreError as e:
        raise MeasureError(f"--store: {e}") from None
    meas = WhatifMeasurement(m, target, drafts, prompts, state, result, recorder, reporter)
    meas.total = len(prompts) * len(cfg.batches) * (1 + len(cfg.profiles))
    records: dict[tuple[int, int | None], list[RequestRecord]] = {}  # (B, profile index | None)
    watch = start_watch(m)
    try:
        try:
            with reporter.status("measuring the cost curve t_T(n) and t_D(1) on warm caches…"):
                measure_costs(state, prompts[0].ids, repeats=m.cost_repeats)
        except KeyboardInterrupt:
            recorder.discard()
            raise MeasureInterrupted(
                "Interrupted while measuring the cost curve; nothing was measured (no run recorded)."
            ) from None
        _run_grid(cfg, meas, draft, records)
    finally:
        meas.hygiene = _finish_watch(watch, records, cfg)
    if meas.hygiene is not None:
        result.set_section("hygiene", meas.hygiene)
    from specmeter.metrics.speedup import cost_ratio

    section = whatif_section(
        cfg, records, overlays, draft=draft_facts(cfg, draft, target),
        cost_ratio=cost_ratio(state.cost_curves.get(draft.info.name)), interrupted=meas.interrupted,
    )  # fmt: skip
    return close(meas, section, render=render)


def _grid(cfg: WhatifConfig) -> dict[str, Any]:
    return {
        "alphas": list(cfg.alphas),
        "rates": [list(r) for r in cfg.rates],
        "lengths": list(cfg.lengths),
        "batches": list(cfg.batches),
        "standin": cfg.measure.standin,
        "ignore_eos": True,
        "alpha_from": None if cfg.alpha_from is None else str(cfg.alpha_from),
        "candidate": cfg.candidate,
    }


def _run_grid(
    cfg: WhatifConfig,
    meas: WhatifMeasurement,
    draft: Any,
    records: dict[tuple[int, int | None], list[RequestRecord]],
) -> None:
    """Every batch size: the waves through the baseline and every profile, records streamed as they come."""
    from specmeter.engine.batch_runner import WaveSlot, run_waves
    from specmeter.engine.runner import make_record
    from specmeter.report.files import RequestSink

    m, state, prompts = meas.cfg, meas.state, meas.prompts
    profiles = cfg.profiles
    slots = [WaveSlot(), *(WaveSlot(draft, p.k, tuple(p.rates)) for p in profiles)]
    task_cm = meas.reporter.task("synthetic runs × prompts", meas.total)
    with RequestSink(m.csv_out, m.log_out) as sink, task_cm as task:
        try:
            for batch in cfg.batches:
                task.update(description=f"B={batch}: baseline + {len(profiles)} synthetic runs × prompts")

                def on_outputs(i: int, prompt: Any, g: Any, base: Any, batch: int = batch) -> None:
                    rec = make_record(prompt, g, None)
                    slot = None if i == 0 else i - 1
                    records.setdefault((batch, slot), []).append(rec)
                    if slot is None:
                        label, name, k = baseline_label(batch), None, 0
                    else:
                        p = profiles[slot]
                        label, name, k = cell_label(p.alpha, p.k, batch), draft.info.name, p.k
                    sink.write(label, name, k, rec)
                    meas.recorder.add_request(label, name, k, rec)
                    meas.done += 1
                    task.advance()

                run_waves(
                    state.target, slots, prompts, batch, params=state.params, seed=m.seed, ignore_eos=True,
                    on_outputs=on_outputs,
                )  # fmt: skip
        except KeyboardInterrupt:
            meas.interrupted = True


def _finish_watch(
    watch: Any, records: Mapping[tuple[int, int | None], Sequence[RequestRecord]], cfg: WhatifConfig
) -> dict[str, Any] | None:
    """Stop sampling; each cell's drift test against the baseline at its batch size."""
    from specmeter.hygiene.section import stability_by_candidate

    stability: dict[str, Any] = {}
    for b in cfg.batches:
        base = records.get((b, None), [])
        cells = {
            cell_label(p.alpha, p.k, b): records.get((b, i), [])
            for i, p in enumerate(cfg.profiles)
            if records.get((b, i))
        }
        stability.update(stability_by_candidate(base, cells))
    section: dict[str, Any] | None = watch.finish(stability)
    return section


def whatif_section(
    cfg: WhatifConfig,
    records: Mapping[tuple[int, int | None], Sequence[RequestRecord]],
    overlays: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    draft: dict[str, Any],
    cost_ratio: float | None,
    interrupted: bool,
    backend: str = "native",
) -> dict[str, Any]:
    """The ``whatif`` section: the grid, every cell's E and measured acceptance, and what they say."""
    from specmeter.selection.whatif_surface import (
        baseline_summary,
        best_k,
        break_even,
        cell_summary,
        overlay,
        overlay_points,
    )

    cells, baselines = [], []
    for b in cfg.batches:
        base = records.get((b, None), [])
        if base:
            baselines.append({"batch": b, **baseline_summary(base)})
        for i, p in enumerate(cfg.profiles):
            recs = records.get((b, i), [])
            if recs:
                cells.append({"batch": b, **cell_summary(p, recs, base)})
    kinds = sorted({p.profile for p in cfg.profiles}, key=("geometric", "given", "length").index)
    section: dict[str, Any] = {
        "synthetic": True,
        "note": OUTPUTS_NOTE,
        "complete": not interrupted,
        "backend": backend,
        "draft": draft,
        "cost_ratio": cost_ratio,
        "profile": " and ".join(kinds),
        "alphas": sorted(set(cfg.alphas)),
        "lengths": list(cfg.lengths),
        "ks": list(cfg.measure.k),
        "batches": list(cfg.batches),
        "ignore_eos": True,
        "baselines": baselines,
        "cells": cells,
    }
    section["break_even"] = break_even(section)
    section["best_k"] = best_k(section)
    points = [pt for name, result in overlays for pt in overlay_points(result, name)]
    section["overlay"] = overlay(section, [*points, *cfg.replayed], at_alpha=cfg.at_alpha)
    return section


def draft_facts(cfg: WhatifConfig, draft: Any, target: Any) -> dict[str, Any]:
    """The draft (or stand-in) the surface was measured with."""
    standin = None
    if cfg.measure.standin is not None:
        standin = {
            "fraction": cfg.measure.standin,
            "layers": draft.info.num_layers,
            "of_layers": target.info.num_layers,
        }
    return {
        "name": draft.info.name, "path": draft.info.path, "standin": standin,
        # What it adds to accelerator memory (docs/methods.md): a method's honest extra memory.
        "method": draft.info.method, "extra_weight_bytes": draft.info.added_weight_bytes,
        "kv_bytes_per_token": draft.info.kv_bytes_per_token,
    }  # fmt: skip


def read_overlays(paths: Sequence[Path]) -> list[tuple[str, Mapping[str, Any]]]:
    """Each ``--overlay`` file as JSON, checked field by field (``report.validate.validate_overlay``: the
    candidates' summaries of a bench-like result, a monitor file's windows); one error line naming the file
    (and the field) otherwise."""
    import json

    from specmeter.report.validate import validate_overlay

    out: list[tuple[str, Mapping[str, Any]]] = []
    for path in paths:
        try:
            data = jsonsafe.loads(Path(path).read_text(encoding="utf-8"), surrogates=True)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise MeasureError(f"--overlay {path}: not a result file ({e})") from None
        if not isinstance(data, dict):
            raise MeasureError(f"--overlay {path}: not a result file (a JSON object is expected)")
        problems = validate_overlay(data)
        if problems:
            raise MeasureError("\n".join(f"--overlay {path}: {p}" for p in problems))
        out.append((str(path), data))
    return out
