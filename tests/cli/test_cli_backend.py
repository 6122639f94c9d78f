"""``--backend`` and the vLLM options of bench and tune: every mistake is one line, before anything slow.

Without vLLM installed, ``--backend vllm`` must say how to install it. The option checks run before vLLM is
imported, so they behave the same with or without it. Runs against a real vLLM are in tests/real_vllm.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner, Result

from specmeter.cli.app import app

runner = CliRunner()


def run(tiny: Any, tmp_path: Path, command: str, *extra: str | Path, draft: bool = True) -> Result:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "a", "prompt": "The Supplier shall"}\n')
    args = [command, "--target", tiny.target, "--prompts", prompts, "--max-tokens", "4", "--no-store"]
    if draft:
        args += ["--draft", tiny.draft]
    return runner.invoke(app, [str(a) for a in [*args, *extra]])


@pytest.mark.parametrize("command", ["bench", "tune"])
def test_vllm_missing_says_how_to_install(
    tiny: Any, tmp_path: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # importing it now raises ImportError
    line = assert_usage_error(run(tiny, tmp_path, command, "--backend", "vllm"), "pip install vllm")
    assert "README" in line


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--backend", "tensorrt"], ["--backend", "'tensorrt'"]),
        (["--method", "ngram"], ["--method", "--backend vllm"]),
        (["--backend", "vllm", "--method", "medusa"], ["--method", "'medusa'"]),
        (["--backend", "vllm", "--tensor-parallel-size", "0"], ["--tensor-parallel-size"]),
        (["--backend", "vllm", "--gpu-memory-utilization", "1.5"], ["--gpu-memory-utilization"]),
        (["--backend", "vllm", "--max-model-len", "1"], ["--max-model-len"]),
        (["--backend", "vllm", "--device", "cpu"], ["--device", "vLLM picks"]),
        (["--backend", "vllm", "--dtype", "int4"], ["--dtype", "'int4'"]),
    ],
    ids=["backend", "method-native", "method", "tp", "memory", "max-model-len", "device", "dtype"],
)
def test_bad_backend_options(tiny: Any, tmp_path: Path, extra: list[str], needles: list[str]) -> None:
    assert_usage_error(run(tiny, tmp_path, "bench", *extra), *needles)


def test_native_needs_a_draft(tiny: Any, tmp_path: Path) -> None:
    assert_usage_error(run(tiny, tmp_path, "bench", draft=False), "--draft")
    assert_usage_error(run(tiny, tmp_path, "tune", "--k-max", "2", draft=False), "--draft")


@pytest.mark.parametrize(
    ("method", "draft", "needle"), [("draft_model", False, "needs a draft"), ("ngram", True, "no draft")]
)
def test_vllm_method_and_draft_must_agree(
    tiny: Any, tmp_path: Path, method: str, draft: bool, needle: str
) -> None:
    pytest.importorskip("vllm")  # the check follows the import check
    result = run(tiny, tmp_path, "bench", "--backend", "vllm", "--method", method, draft=draft)
    assert_usage_error(result, "--draft", needle)


def test_vllm_errors_become_one_informative_line() -> None:
    from specmeter.measuring.vllm import one_line as _one_line

    pydantic_like = ValueError(
        "1 validation error for ModelConfig\n  Value error, max_model_len (5000) is greater than 1024. "
        "[type=value_error, input_value=ArgsKwargs(...)]\n    For further information visit https://x"
    )
    assert _one_line(pydantic_like) == (
        "1 validation error for ModelConfig: max_model_len (5000) is greater than 1024."
    )
    assert _one_line(RuntimeError("Engine core initialization failed.\nsee above")) == (
        "Engine core initialization failed."
    )
    assert _one_line(RuntimeError("")) == "RuntimeError"
