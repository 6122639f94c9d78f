"""MeasureConfig validates itself once, when built: every bad field is a MeasureError naming its option."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from specmeter.measuring import MeasureConfig, MeasureError, VllmOptions


def config(tmp_path: Path, **fields: Any) -> MeasureConfig:
    base: dict[str, Any] = {
        "target": tmp_path / "t",
        "prompts": tmp_path / "p.jsonl",
        "drafts": [tmp_path / "d"],
    }
    return MeasureConfig(**{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"k": []}, "--k: give at least one"),
        ({"k": [2, 0]}, "--k: 0 is not a positive integer"),
        ({"k": [True]}, "--k: True"),
        ({"max_tokens": 0}, "--max-tokens must be >= 1, got 0"),
        ({"temperature": -0.1}, "--temperature: temperature must be >= 0"),
        ({"temperature": math.nan}, "--temperature"),
        ({"temperature": math.inf}, "--temperature"),
        ({"top_p": 0.0}, "--top-p: top_p must be in (0, 1]"),
        ({"top_p": 1.5}, "--top-p"),
        ({"top_p": math.nan}, "--top-p"),
        ({"limit": 0}, "--limit must be >= 1"),
        ({"limit": 4, "top_up": {"legal/redline": 0}}, "top-up of 'legal/redline' must be >= 1"),
        ({"threads": 0}, "--threads must be >= 1"),
        ({"cost_repeats": 0}, "--cost-repeats must be >= 1"),
        ({"device": "gpu"}, "--device: 'gpu'"),
        ({"device": "cuda:x"}, "--device"),
        ({"dtype": "int4"}, "--dtype: 'int4'"),
        ({"implementation": "magic"}, "--implementation: 'magic'"),
        ({"backend": "tensorrt"}, "--backend: 'tensorrt'"),
        ({"drafts": []}, "--draft: give at least one"),
        ({"vllm": VllmOptions(method="ngram")}, "--method: only --backend vllm"),
    ],
)
def test_bad_field_is_one_line_naming_the_option(tmp_path: Path, fields: dict[str, Any], needle: str) -> None:
    with pytest.raises(MeasureError) as e:
        config(tmp_path, **fields)
    assert needle in str(e.value)
    assert len(e.value.lines) == 1


@pytest.mark.parametrize("device", ["auto", "cpu", "cuda", "cuda:1", "mps"])
def test_devices_torch_names_are_accepted(tmp_path: Path, device: str) -> None:
    assert config(tmp_path, device=device).device == device


def test_normalised_and_frozen(tmp_path: Path) -> None:
    cfg = config(tmp_path, k=[4, 1, 4], drafts=[str(tmp_path / "d")], extra={"domain": "legal"})
    assert cfg.k == (1, 4)
    assert cfg.drafts == (tmp_path / "d",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.max_tokens = 3  # type: ignore[misc]
    data = cfg.as_dict()
    assert data["k"] == [1, 4] and data["drafts"] == [str(tmp_path / "d")] and data["domain"] == "legal"
    assert "vllm" not in data


def test_vllm_options_are_checked_only_for_vllm(tmp_path: Path) -> None:
    pytest.importorskip("torch")  # the method list lives with the vLLM backend, which imports torch
    bad = VllmOptions(tensor_parallel_size=0)
    assert config(tmp_path, vllm=bad).backend == "native"  # not used, not checked
    with pytest.raises(MeasureError, match="--tensor-parallel-size must be >= 1"):
        config(tmp_path, backend="vllm", vllm=bad)
    with pytest.raises(MeasureError, match="--gpu-memory-utilization must be in"):
        config(tmp_path, backend="vllm", vllm=VllmOptions(gpu_memory_utilization=0.0))
    with pytest.raises(MeasureError, match="vLLM picks its own device"):
        config(tmp_path, backend="vllm", device="cpu")
    cfg = config(tmp_path, backend="vllm", drafts=[], vllm=VllmOptions(method="ngram", max_model_len=64))
    assert cfg.as_dict()["vllm"]["method"] == "ngram" and "seed" not in cfg.as_dict()["vllm"]
    assert cfg.vllm_settings()["seed"] == cfg.seed


def test_output_paths_are_checked_when_built(tmp_path: Path) -> None:
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("{}\n")
    with pytest.raises(MeasureError, match=r"--csv: .* is --prompts"):
        config(tmp_path, csv_out=prompts)
    with pytest.raises(MeasureError, match=r"--log: .* is also --json"):
        config(tmp_path, json_out=tmp_path / "r.json", log_out=tmp_path / "x" / ".." / "r.json")
