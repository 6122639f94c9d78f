"""``specmeter bench``: baseline and every (draft, k) over a golden set, interleaved, with every metric.

Per-request rows go to CSV/JSONL the moment each request finishes; the whole-result JSON is written at the
end, or with ``complete: false`` when the run is interrupted (Ctrl-C keeps everything finished so far).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from specmeter.cli import options as opt
from specmeter.cli.common import console, fail, parse_int_list

if TYPE_CHECKING:
    from specmeter.engine.loader import LoadedModel
    from specmeter.engine.runner import ModelLike, PreparedPrompt, RunState
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
    threads: int | None = None  # torch CPU threads; None keeps torch's default
    kind: str = "bench"
    store: Path | None = None  # run store (SQLite) to record the run in; None records nothing
    backend: str = "native"  # "native" or "vllm"
    vllm: dict[str, Any] | None = None  # VllmSettings fields with --backend vllm
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
            "threads": self.threads,
            "backend": self.backend,
            **({"vllm": {k: v for k, v in self.vllm.items() if k != "seed"}} if self.vllm else {}),
            **self.extra,
        }


def load_models(cfg: BenchConfig) -> tuple[LoadedModel, list[LoadedModel]]:
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

    # Names label results and key cost curves, so they must be unique: fall back to the full path.
    names = [d.name for d in cfg.drafts]
    target = load(cfg.target, cfg.target.name)
    drafts = []
    for path, name in zip(cfg.drafts, names, strict=True):
        label = name if names.count(name) == 1 and name != cfg.target.name else str(path)
        d = load(path, label)
        reason = tokenizer_mismatch(target.tokenizer, d.tokenizer)
        if reason:
            fail(
                f"draft {path}: its tokenizer differs from the target's: {reason}; "
                "speculative decoding needs one tokenizer"
            )
        drafts.append(d)
    return target, drafts


def prepare_prompts(cfg: BenchConfig, target: ModelLike) -> list[PreparedPrompt]:
    from specmeter.engine.runner import PreparedPrompt
    from specmeter.workloads import WorkloadError, load_workload, render_prompt

    try:
        workload = load_workload(cfg.prompts)
    except WorkloadError as e:
        fail(str(e))
    if cfg.limit is not None:
        workload = workload.limit(cfg.limit)
    context = target.max_positions
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


def summarize_into(result: ResultFile, state: RunState[Any]) -> None:
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
    from specmeter.cli.measure import exit_if_interrupted, finish, report_recorded, run_candidates
    from specmeter.engine.runner import measure_costs

    m = run_candidates(
        cfg, measure=lambda state, ctx: measure_costs(state, ctx, repeats=cfg.cost_repeats), quiet=quiet
    )
    out = finish(m)
    if not quiet:
        from specmeter.report.console import render_result

        render_result(out, console)
    report_recorded(m, quiet)
    exit_if_interrupted(m)
    return out


def bench(
    target: opt.Target,
    prompts: opt.Prompts,
    draft: Annotated[
        list[Path] | None,
        typer.Option(
            "--draft", help="Draft model directory; repeat for several (none for vLLM's ngram/mtp)."
        ),
    ] = None,
    k: Annotated[str, typer.Option("--k", help="Draft length, or a list such as 1,2,4,8.")] = "4",
    temperature: opt.Temperature = 0.0,
    top_p: opt.TopP = 1.0,
    max_tokens: opt.MaxTokens = 128,
    limit: opt.Limit = None,
    seed: opt.Seed = 0,
    json_out: opt.JsonOut = None,
    csv_out: opt.CsvOut = None,
    log_out: opt.LogOut = None,
    dtype: opt.Dtype = "auto",
    device: opt.Device = "auto",
    implementation: opt.Implementation = "auto",
    trust_remote_code: opt.TrustRemoteCode = False,
    cost_repeats: opt.CostRepeats = 9,
    threads: opt.Threads = None,
    quiet: opt.Quiet = False,
    store: opt.Store = None,
    no_store: opt.NoStore = False,
    backend: opt.Backend = "native",
    method: opt.SpecMethod = "draft_model",
    tensor_parallel_size: opt.TensorParallel = 1,
    max_model_len: opt.MaxModelLen = None,
    gpu_memory_utilization: opt.GpuMemory = 0.9,
    enforce_eager: opt.EnforceEager = False,
) -> None:
    """Measure candidates on a golden set: α, β, τ, per-position rates, four speedups, latency, memory."""
    cfg = opt.measure_config(locals(), drafts=list(draft or []), k=parse_int_list(k, "--k"))
    execute_bench(cfg, quiet=quiet)
