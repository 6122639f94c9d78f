"""Shared fixtures: tiny Llama-family checkpoints built once per test session (no downloads)."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
import transformers

from tiny_models import TinyConfig, build_layer_skip_draft, build_random_llama, build_tokenizer

# pytest-xdist's workers (make test runs two) start with COLUMNS=80 in their environment, which a serial run
# does not have; the CLI's console reads it at import (cli.common: 120 columns off a terminal), so a worker
# would wrap output that the same test sees unwrapped when run alone. Workers see what a serial run sees.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)

# Tiny models gain nothing from a second thread, and on a shared 2-core machine OpenMP threads that spin
# while another process holds the other core make each forward ~10x slower.
torch.set_num_threads(1)
transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()

# A test run started in the background of a non-interactive shell (`make test-vllm &`, nohup) inherits SIGINT
# ignored, every child process inherits that, and the tests that press Ctrl-C on a command (SIGINT to its
# process group) would see it ignored: put Python's default handler back so children start with SIGINT live.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _isolated_run_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands record runs in a store under the user's data dir by default; tests must never touch it."""
    monkeypatch.setenv("SPECMETER_STORE", str(tmp_path_factory.mktemp("store") / "runs.sqlite"))


@dataclass(frozen=True)
class TinyModels:
    root: Path
    tokenizer: Any
    target: Path  # llama, embedding-dominated so drafts agree often
    draft: Path  # layer-skip draft of `target`
    random_draft: Path  # independent tiny llama, same tokenizer: acceptance near zero
    qwen2: Path  # qkv bias, tied embeddings
    mistral: Path
    qwen3: Path  # per-head q/k RMSNorm, no qkv bias
    other_tokenizer_draft: Path  # a draft with a different tokenizer


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    root = tmp_path_factory.mktemp("tiny")
    tok = build_tokenizer(root / "tokenizer")
    target = build_random_llama(
        root / "target",
        tok,
        TinyConfig(hidden=64, layers=6, heads=4, kv_heads=2, intermediate=172, init_std=0.05, embed_scale=30),
    )
    draft = build_layer_skip_draft(target, root / "draft", [0, 1, 2, 5])
    random_draft = build_random_llama(root / "random_draft", tok, TinyConfig(hidden=32, layers=1), seed=7)
    qwen2 = build_random_llama(
        root / "qwen2",
        tok,
        TinyConfig(
            hidden=64, layers=2, heads=4, kv_heads=1, model_type="qwen2", tie_embeddings=True, init_std=0.1
        ),
        seed=3,
    )
    mistral = build_random_llama(
        root / "mistral", tok, TinyConfig(hidden=64, layers=2, model_type="mistral", init_std=0.1), seed=4
    )
    qwen3 = build_random_llama(
        root / "qwen3",
        tok,
        TinyConfig(
            hidden=64, layers=2, heads=4, kv_heads=2, model_type="qwen3", init_std=0.1, random_norms=True
        ),
        seed=6,
    )
    other_tok = build_tokenizer(
        root / "other_tokenizer", ["completely different words here"] * 50, vocab_size=300
    )
    other = build_random_llama(root / "other_draft", other_tok, TinyConfig(hidden=32, layers=1), seed=5)
    return TinyModels(root, tok, target, draft, random_draft, qwen2, mistral, qwen3, other)
