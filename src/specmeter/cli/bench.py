"""``specmeter bench``: baseline and every (draft, k) over a golden set, interleaved, with every metric.

Per-request rows go to CSV/JSONL the moment each request finishes; the whole-result JSON is written at the
end, or with ``complete: false`` when the run is interrupted (Ctrl-C keeps everything finished so far).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from specmeter.cli.common import EXIT_INTERRUPTED, console, fail, parse_int_list

if TYPE_CHECKING:
    from specmeter.engine.loader import LoadedModel
    from specmeter.engine.runner import PreparedPrompt, RunState
    from specmeter.report.files import ResultFile


@dataclass
class BenchConfig:
    target: Path
    drafts: list[Path]
    prompts: Path
    k: list[int]
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 128
    limit: int | None = None
    seed: int = 0
    json_out: Path | None = None
    csv_out: Path | None = None
    log_out: Path | None = None
    dtype: str = "auto"
    device: str = "auto"
    implementation: str = "auto"
    trust_remote_code: bool = False
    cost_repeats: int = 9
    kind: str = "bench"
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": str(self.target),
            "drafts": [str(d) for d in self.drafts],
            "prompts": str(self.prompts),
            "k": self.k,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "limit": self.limit,
            "seed": self.seed,
            "dtype": self.dtype,
            "device": self.device,
            "implementation": self.implementation,
            **self.extra,
        }


def _load_models(cfg: BenchConfig) -> tuple[LoadedModel, list[LoadedModel]]:
    from specmeter.engine.loader import ModelLoadError, load_model, tokenizer_mismatch

    def load(path: Path, name: str) -> LoadedModel:
        try:
            return load_model(
                path, name=name, dtype=cfg.dtype, device=cfg.device,
                implementation=cfg.implementation,  # type: ignore[arg-type]
                trust_remote_code=cfg.trust_remote_code,
            )  # fmt: skip
        except ModelLoadError as e:
            fail(str(e))

    names = [d.name for d in cfg.drafts]
    target = load(cfg.target, cfg.target.name)
    drafts = []
    for path, name in zip(cfg.drafts, names, strict=True):
        label = name if names.count(name) == 1 else str(path)
        d = load(path, label)
        reason = tokenizer_mismatch(target.tokenizer, d.tokenizer)
        if reason:
            fail(
                f"draft {path}: its tokenizer differs from the target's: {reason}; "
                "speculative decoding needs one tokenizer"
            )
        drafts.append(d)
    return target, drafts


def _prepare_prompts(cfg: BenchConfig, target: LoadedModel) -> list[PreparedPrompt]:
    from specmeter.engine.runner import PreparedPrompt
    from specmeter.workloads import WorkloadError, load_workload, render_prompt

    try:
        workload = load_workload(cfg.prompts)
    except WorkloadError as e:
        fail(str(e))
    if cfg.limit is not None:
        workload = workload.limit(cfg.limit)
    context = getattr(target.model, "max_positions", None)
    prepared, problems = [], []
    for p in workload.prompts:
        ids = render_prompt(p, target.tokenizer)
        max_tokens = p.max_tokens or cfg.max_tokens
        need = len(ids) + max_tokens + max(cfg.k) + 1
        if not ids:
            problems.append(f"{cfg.prompts}:{p.line}: prompt {p.id!r} renders to no tokens")
        elif context is not None and need > context:
            problems.append(
                f"{cfg.prompts}:{p.line}: prompt {p.id!r} has {len(ids)} tokens; "
                f"with max_tokens {max_tokens} it needs {need} positions, the target has {context}"
            )
        prepared.append(PreparedPrompt(id=p.id, category=p.category, ids=tuple(ids), max_tokens=max_tokens))
    if problems:
        fail("\n".join(problems))
    return prepared


def summarize_into(result: ResultFile, state: RunState) -> None:
    from specmeter.metrics import summarize, summarize_by_category

    base_run = state.baseline_run()
    result.set_baseline(summarize(base_run, None), summarize_by_category(base_run, None))
    for i, c in enumerate(state.candidates):
        run = state.candidate_run(i)
        result.add_candidate(
            c.draft.info.name, c.k, summarize(run, base_run), summarize_by_category(run, base_run)
        )


def execute_bench(cfg: BenchConfig, *, quiet: bool = False) -> dict[str, Any]:
    """Run the whole bench; returns the result dict (also written to ``cfg.json_out`` when set)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from specmeter.engine.runner import Candidate, RunState, measure_costs, run_interleaved
    from specmeter.engine.sampling import SamplingParams
    from specmeter.report.files import RequestSink, ResultFile

    try:
        params = SamplingParams(cfg.temperature, cfg.top_p)
    except ValueError as e:
        fail(f"--temperature/--top-p: {e}")
    if cfg.max_tokens < 1:
        fail("--max-tokens must be >= 1")
    if cfg.limit is not None and cfg.limit < 1:
        fail("--limit must be >= 1")
    target, drafts = _load_models(cfg)
    prompts = _prepare_prompts(cfg, target)
    candidates = [Candidate(d, k) for d in drafts for k in cfg.k]
    state = RunState(target=target, candidates=candidates, params=params)
    result = ResultFile(cfg.json_out, kind=cfg.kind, config=cfg.as_dict())
    result.set_models(target.info, {d.info.name: d.info for d in drafts})

    with console.status("measuring the cost curve t_T(n) and t_D(1) on warm caches…", spinner="dots"):
        measure_costs(state, prompts[0].ids, repeats=cfg.cost_repeats)

    labels: dict[int | None, str] = {None: "baseline", **{i: c.label for i, c in enumerate(candidates)}}
    interrupted = False
    with RequestSink(cfg.csv_out, cfg.log_out) as sink:

        def on_record(slot: int | None, rec: Any) -> None:
            c = None if slot is None else candidates[slot]
            sink.write(labels[slot], None if c is None else c.draft.info.name, 0 if c is None else c.k, rec)

        progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, disable=quiet, transient=True,
        )  # fmt: skip
        with progress:
            task = progress.add_task(f"{len(candidates) + 1} runs × prompts", total=len(prompts))
            try:
                run_interleaved(
                    state, prompts, seed=cfg.seed, on_record=on_record,
                    on_prompt_done=lambda n: progress.advance(task),
                )  # fmt: skip
            except KeyboardInterrupt:
                interrupted = True
    summarize_into(result, state)
    if interrupted:
        result.save()
    else:
        result.finish()
    out = result.to_dict()
    if not quiet:
        from specmeter.report.console import render_result

        render_result(out, console)
    if interrupted:
        console.print(
            f"[yellow]Interrupted after {len(state.baseline)} of {len(prompts)} prompts; "
            "everything finished so far is on disk.[/]"
        )
        raise typer.Exit(EXIT_INTERRUPTED)
    return out


def bench(
    target: Path = typer.Option(..., "--target", help="Target model directory (Hugging Face format)."),
    draft: list[Path] = typer.Option(..., "--draft", help="Draft model directory; repeat for several."),
    prompts: Path = typer.Option(
        ..., "--prompts", help="Golden set: specmeter JSONL or Spec-Bench question.jsonl."
    ),
    k: str = typer.Option("4", "--k", help="Draft length, or a list such as 1,2,4,8."),
    temperature: float = typer.Option(0.0, help="0 = greedy (exact-match verification)."),
    top_p: float = typer.Option(1.0, "--top-p", help="Nucleus filtering applied to target and draft alike."),
    max_tokens: int = typer.Option(
        128, "--max-tokens", help="Output tokens per request (unless the prompt says)."
    ),
    limit: int | None = typer.Option(None, help="Only the first N prompts."),
    seed: int = typer.Option(0, help="Seed for sampling."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the whole result as JSON."),
    csv_out: Path | None = typer.Option(None, "--csv", help="Write one CSV row per request."),
    log_out: Path | None = typer.Option(
        None, "--log", help="Per-request JSONL log (tokens, latency, accepted)."
    ),
    dtype: str = typer.Option("auto", help="auto, float32, bfloat16 or float16."),
    device: str = typer.Option("auto", help="auto, cpu, cuda or cuda:N."),
    implementation: str = typer.Option("auto", help="auto, native (Llama family) or transformers."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Allow custom model code."),
    cost_repeats: int = typer.Option(9, "--cost-repeats", help="Repeats per point of the cost curve."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no tables."),
) -> None:
    """Measure candidates on a golden set: α, β, τ, per-position rates, four speedups, latency, memory."""
    if implementation not in ("auto", "native", "transformers"):
        fail(f"--implementation: {implementation!r} is not one of auto, native, transformers")
    cfg = BenchConfig(
        target=target, drafts=list(draft), prompts=prompts, k=parse_int_list(k, "--k"),
        temperature=temperature, top_p=top_p, max_tokens=max_tokens, limit=limit, seed=seed,
        json_out=json_out, csv_out=csv_out, log_out=log_out, dtype=dtype, device=device,
        implementation=implementation, trust_remote_code=trust_remote_code, cost_repeats=cost_repeats,
    )  # fmt: skip
    execute_bench(cfg, quiet=quiet)
