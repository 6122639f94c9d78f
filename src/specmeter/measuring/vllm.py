"""The ``--backend vllm`` half of the measuring core: model handles without loading weights, sequential runs.

specmeter never loads the models itself here (a 70B target is vLLM's to shard): the tokenizer renders the
prompts, config.json and the safetensors headers give the static facts the memory metrics need, and
``engine.vllm_runner`` runs baseline and candidates through vLLM one engine at a time. The result file gets
a ``vllm`` section: engine settings, the sequential schedule, and per run vLLM's own counters beside the
totals of specmeter's records.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specmeter.measuring.errors import MeasureError, MeasureInterrupted
from specmeter.measuring.models import draft_names, tokenizer_refusal
from specmeter.metrics.records import BASELINE

if TYPE_CHECKING:
    from specmeter.engine.runner import PreparedPrompt, RunState
    from specmeter.engine.vllm_runner import ModelHandle
    from specmeter.measuring.config import MeasureConfig
    from specmeter.measuring.progress import Task
    from specmeter.metrics.records import RequestRecord
    from specmeter.report.files import ResultFile

__all__ = ["load_handles", "one_line", "run_vllm"]


def _handle(path: Path, name: str, cfg: MeasureConfig, tokenizer: Any = None) -> ModelHandle:
    """``tokenizer`` given: use it (an EAGLE head ships none and speaks the target's)."""
    from specmeter.engine.loader import DTYPES, load_tokenizer
    from specmeter.engine.vllm_runner import ModelHandle
    from specmeter.modeldir import (
        ModelDirError,
        ModelShape,
        eos_ids,
        model_info,
        read_model_config,
        read_weights,
    )

    try:
        config = read_model_config(path)
        if tokenizer is None:
            tokenizer = load_tokenizer(path, cfg.trust_remote_code)
        weights = read_weights(path)
    except ModelDirError as e:
        raise MeasureError(str(e)) from None
    shape = ModelShape.of(config)
    # What vLLM will hold the weights in: --dtype, else the stored dtype it supports, else bfloat16.
    stored = shape.dtype if shape.dtype in DTYPES else "bfloat16"
    dtype = stored if cfg.dtype == "auto" else cfg.dtype
    info = model_info(name, path, shape, weights.params if weights else 0, dtype, "vllm")
    return ModelHandle(path, tokenizer, eos_ids(path, config, tokenizer), info, shape.max_positions)


def _proposer(method: str) -> ModelHandle:
    """A stand-in draft for proposers without a directory; their weights (if any) are the target's."""
    from specmeter.engine.vllm_runner import ModelHandle
    from specmeter.metrics.records import ModelInfo

    info = ModelInfo(
        name=method, path="", architecture=method, params=0, weight_bytes=0, kv_bytes_per_token=0,
        dtype="none", num_layers=0, num_kv_heads=0, head_dim=0, implementation="vllm",
    )  # fmt: skip
    return ModelHandle(None, None, frozenset(), info)


def load_handles(cfg: MeasureConfig) -> tuple[ModelHandle, list[ModelHandle]]:
    """Target and drafts as vLLM will load them; checks vLLM is importable before anything slow."""
    from specmeter.engine.loader import tokenizer_mismatch
    from specmeter.engine.vllm_backend import NEEDS_DRAFT_DIR, VllmUnavailable, import_vllm

    # vLLM logs every engine start at INFO; a measuring tool's output is its progress bar and tables. Read
    # when vLLM is imported, and inherited by its engine processes.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("TQDM_DISABLE", "1")  # vLLM's weight-loading bars, printed by its workers
    try:
        import_vllm()
    except VllmUnavailable as e:
        raise MeasureError(str(e)) from None
    except KeyboardInterrupt:
        raise MeasureInterrupted("Interrupted while importing vLLM; nothing was measured.") from None
    method = cfg.vllm.method
    if method in NEEDS_DRAFT_DIR and not cfg.draft_dirs:
        raise MeasureError(f"--draft: --method {method} needs a draft model directory")
    if method == "ngram" and cfg.draft_dirs:
        raise MeasureError("--draft: --method ngram looks drafts up in the prompt; it takes no draft model")
    target = _handle(cfg.target, cfg.target.name, cfg)
    if not cfg.draft_dirs:
        return target, [_proposer(method)]
    drafts = []
    for path, name in zip(cfg.draft_dirs, draft_names(cfg.target, cfg.draft_dirs), strict=True):
        d = _handle(path, name, cfg, None if method == "draft_model" else target.tokenizer)
        if method == "draft_model":
            reason = tokenizer_mismatch(target.tokenizer, d.tokenizer)
            if reason:
                raise tokenizer_refusal(path, reason)
        drafts.append(d)
    return target, drafts


def run_vllm(
    cfg: MeasureConfig,
    state: RunState[ModelHandle],
    prompts: list[PreparedPrompt],
    result: ResultFile,
    on_record: Callable[[int | None, RequestRecord], None],
    task: Task,
) -> None:
    """Every run through vLLM; the ``vllm`` section is saved after each run so nothing finished is lost."""
    from specmeter.engine.vllm_backend import VllmSettings, import_vllm
    from specmeter.engine.vllm_runner import run_sequential

    settings = VllmSettings(**cfg.vllm_settings())
    runs = len(state.candidates) + 1
    task.update(total=runs * len(prompts))
    section: dict[str, Any] = {
        "version": str(getattr(import_vllm(), "__version__", "unknown")),
        "schedule": "sequential: one engine per run (baseline first), each warmed up on one short request",
        "settings": settings.as_dict(),
        "runs": {},
    }

    def started(label: str) -> None:
        task.update(description=f"vLLM: {label} (starting the engine)")

    def done(label: str, reconciled: dict[str, Any]) -> None:
        section["runs"][label] = reconciled
        result.set_section("vllm", section)

    def recorded(slot: int | None, rec: RequestRecord) -> None:
        label = BASELINE if slot is None else state.candidates[slot].label
        task.update(description=f"vLLM: {label}")
        on_record(slot, rec)

    result.set_section("vllm", section)
    try:
        run_sequential(
            state, prompts, settings, seed=cfg.seed, on_record=recorded,
            on_request_done=task.advance, on_run_start=started, on_run_done=done,
        )  # fmt: skip
    except (ValueError, RuntimeError, OSError) as e:
        # vLLM refuses configurations with exceptions of these types (unsupported model, too little memory).
        raise MeasureError(f"vLLM could not run {cfg.target}: {one_line(e)}") from None


def one_line(e: Exception) -> str:
    """vLLM's message on one line; a pydantic error's header ("1 validation error for X") says nothing."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    if "validation error" in lines[0] and len(lines) > 1:
        text = lines[1].removeprefix("Value error, ").split(" [type=")[0]
        return f"{lines[0]}: {text}"
    return lines[0]
