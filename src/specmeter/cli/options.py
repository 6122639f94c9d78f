"""Options shared by the measuring commands (bench, tune, select), defined once.

Each alias is an ``Annotated`` type typer reads as an option; a command lists them with its own defaults and
hands its locals to :func:`measure_config`, which validates them and builds the ``BenchConfig``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from specmeter.cli.common import fail, resolve_store

if TYPE_CHECKING:  # cli.bench imports this module for its own options
    from specmeter.cli.bench import BenchConfig

Target = Annotated[Path, typer.Option("--target", help="Target model directory (Hugging Face format).")]
Prompts = Annotated[
    Path, typer.Option("--prompts", help="Golden set: specmeter JSONL or Spec-Bench question.jsonl.")
]
Temperature = Annotated[float, typer.Option("--temperature", help="0 = greedy (exact-match verification).")]
TopP = Annotated[float, typer.Option("--top-p", help="Nucleus filtering applied to target and draft alike.")]
MaxTokens = Annotated[
    int, typer.Option("--max-tokens", help="Output tokens per request (unless the prompt says).")
]
Limit = Annotated[int | None, typer.Option("--limit", help="Only the first N prompts.")]
Seed = Annotated[int, typer.Option("--seed", help="Seed for sampling (and the bootstrap).")]
JsonOut = Annotated[Path | None, typer.Option("--json", help="Write the whole result as JSON.")]
CsvOut = Annotated[Path | None, typer.Option("--csv", help="Write one CSV row per request.")]
LogOut = Annotated[
    Path | None, typer.Option("--log", help="Per-request JSONL log (tokens, latency, accepted).")
]
Dtype = Annotated[str, typer.Option("--dtype", help="auto, float32, bfloat16 or float16.")]
Device = Annotated[str, typer.Option("--device", help="auto, cpu, cuda or cuda:N.")]
Implementation = Annotated[
    str, typer.Option("--implementation", help="auto, native (Llama family) or transformers.")
]
TrustRemoteCode = Annotated[bool, typer.Option("--trust-remote-code", help="Allow custom model code.")]
CostRepeats = Annotated[int, typer.Option("--cost-repeats", help="Repeats per point of the cost curve.")]
Threads = Annotated[
    int | None,
    typer.Option(
        "--threads", help="CPU threads for torch (default: torch's choice; 1 is steadier on shared hosts)."
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar and no tables.")]
Store = Annotated[
    Path | None,
    typer.Option(
        "--store", help="Run store to record this run in (default: $SPECMETER_STORE or the user data dir)."
    ),
]
NoStore = Annotated[bool, typer.Option("--no-store", help="Do not record this run in the run store.")]
Backend = Annotated[
    str, typer.Option("--backend", help="native (specmeter's engine) or vllm (vLLM's offline engine).")
]
SpecMethod = Annotated[
    str,
    typer.Option(
        "--method", help="vLLM speculative method: draft_model, ngram, eagle, eagle3 or mtp (--backend vllm)."
    ),
]
TensorParallel = Annotated[
    int, typer.Option("--tensor-parallel-size", "--tp", help="vLLM tensor parallel size (--backend vllm).")
]
MaxModelLen = Annotated[
    int | None,
    typer.Option("--max-model-len", help="vLLM context length (default: what the workload needs)."),
]
GpuMemory = Annotated[
    float,
    typer.Option("--gpu-memory-utilization", help="Share of accelerator memory vLLM may take (0-1]."),
]
EnforceEager = Annotated[
    bool, typer.Option("--enforce-eager", help="vLLM without torch.compile and CUDA graphs (fast start).")
]

# Options that map one-to-one onto BenchConfig fields.
_FIELDS = (
    "target", "prompts", "temperature", "top_p", "max_tokens", "limit", "seed", "json_out", "csv_out",
    "log_out", "dtype", "device", "implementation", "trust_remote_code", "cost_repeats", "threads",
)  # fmt: skip


def measure_config(options: dict[str, Any], **fields: Any) -> BenchConfig:
    """A BenchConfig from a command's locals (the shared options) plus its own ``fields``."""
    if options["implementation"] not in ("auto", "native", "transformers"):
        fail(f"--implementation: {options['implementation']!r} is not one of auto, native, transformers")
    if options["cost_repeats"] < 1:
        fail("--cost-repeats must be >= 1")
    from specmeter.cli.bench import BenchConfig

    shared = {name: options[name] for name in _FIELDS}
    backend = options.get("backend", "native")
    if backend not in ("native", "vllm"):
        fail(f"--backend: {backend!r} is not one of native, vllm")
    vllm: dict[str, Any] | None = None
    if backend == "vllm":
        vllm = vllm_options(options)
    elif options.get("method", "draft_model") != "draft_model":
        fail("--method: only --backend vllm runs ngram, eagle, eagle3 or mtp proposers")
    if backend == "native" and not fields.get("drafts"):
        fail("--draft: give at least one draft model directory")
    store = resolve_store(options["store"], options["no_store"])
    return BenchConfig(**shared, store=store, backend=backend, vllm=vllm, **fields)


def vllm_options(options: dict[str, Any]) -> dict[str, Any]:
    """The vLLM engine settings from a command's options, validated (VllmSettings' fields)."""
    from specmeter.engine.vllm_backend import METHODS

    method = options["method"]
    if method not in METHODS:
        fail(f"--method: {method!r} is not one of {', '.join(METHODS)}")
    if options["tensor_parallel_size"] < 1:
        fail("--tensor-parallel-size must be >= 1")
    if not 0 < options["gpu_memory_utilization"] <= 1:
        fail("--gpu-memory-utilization must be in (0, 1]")
    if options["max_model_len"] is not None and options["max_model_len"] < 2:
        fail("--max-model-len must be >= 2")
    if options["implementation"] != "auto" or options["device"] != "auto":
        fail("--implementation/--device: not used with --backend vllm (vLLM picks its own device)")
    if options["dtype"] not in ("auto", "float32", "bfloat16", "float16"):
        fail(f"--dtype: {options['dtype']!r} is not one of auto, float32, bfloat16, float16")
    return {
        "method": method,
        "tensor_parallel_size": options["tensor_parallel_size"],
        "dtype": options["dtype"],
        "max_model_len": options["max_model_len"],
        "gpu_memory_utilization": options["gpu_memory_utilization"],
        "enforce_eager": options["enforce_eager"],
        "seed": options["seed"],
        "trust_remote_code": options["trust_remote_code"],
    }
