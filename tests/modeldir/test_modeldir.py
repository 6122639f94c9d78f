"""The one reader of model directories: the same one-line error for compat, the native loader and vLLM's path,
file sizes checked against the safetensors headers, and memory facts from metrics.memory."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from specmeter.engine.loader import load_model
from specmeter.metrics.memory import kv_bytes_per_token
from specmeter.modeldir import (
    ModelDirError,
    ModelShape,
    inspect_model,
    model_info,
    read_model_config,
    read_weights,
)


def _copy(tiny: Any, tmp_path: Path) -> tuple[Path, Path]:
    model = tmp_path / "m"
    shutil.copytree(tiny.target, model)
    [weights] = sorted(model.glob("*.safetensors"))
    return model, weights


def _errors(model: Path) -> list[str]:
    """The message each reader gives for ``model``: compat's inspection, the native loader."""
    out = []
    for read in (inspect_model, lambda p: load_model(p, device="cpu")):
        with pytest.raises(ModelDirError) as e:
            read(model)
        out.append(str(e.value))
    return out


def test_truncated_weights_are_named_before_loading(tiny: Any, tmp_path: Path) -> None:
    model, weights = _copy(tiny, tmp_path)
    size = weights.stat().st_size
    with weights.open("r+b") as fh:
        fh.truncate(size - 10)
    messages = _errors(model)
    assert (
        messages[0]
        == messages[1]
        == (f"{weights}: truncated safetensors file ({size - 10:,} bytes; its header describes {size:,})")
    )


def test_trailing_bytes_are_refused_as_safetensors_does(tiny: Any, tmp_path: Path) -> None:
    model, weights = _copy(tiny, tmp_path)
    with weights.open("ab") as fh:
        fh.write(b"\0" * 3)
    assert len(set(_errors(model))) == 1 and "corrupt safetensors file" in _errors(model)[0]


@pytest.mark.parametrize(
    ("breakage", "needle"),
    [
        (lambda m: (m / "config.json").write_text("{ not json"), "config.json: unreadable config (Expecting"),
        (
            lambda m: (m / "config.json").write_text("[1]"),
            "config.json: unreadable config (expected a JSON object)",
        ),
        (lambda m: (m / "config.json").unlink(), "config.json: missing (not a Hugging Face model directory)"),
        (lambda m: (m / "tokenizer.json").unlink(), "no tokenizer (expected tokenizer.json)"),
    ],
    ids=["json", "not-object", "no-config", "no-tokenizer"],
)
def test_one_set_of_messages(tiny: Any, tmp_path: Path, breakage: Any, needle: str) -> None:
    model, _ = _copy(tiny, tmp_path)
    breakage(model)
    messages = _errors(model)
    assert messages[0] == messages[1] and needle in messages[0], messages


def test_shape_and_model_info_agree_with_the_loaded_model(tiny: Any) -> None:
    loaded = load_model(tiny.target, device="cpu").info
    shape = ModelShape.of(read_model_config(tiny.target))
    weights = read_weights(tiny.target)
    assert weights is not None
    info = model_info(loaded.name, tiny.target, shape, weights.params, "float32", "native")
    assert info == loaded
    expected = kv_bytes_per_token(shape.num_layers or 0, shape.num_kv_heads or 0, shape.head_dim or 0, 4)
    assert info.kv_bytes_per_token == expected > 0
    assert inspect_model(tiny.target).kv_bytes_per_token == kv_bytes_per_token(
        shape.num_layers or 0,
        shape.num_kv_heads or 0,
        shape.head_dim or 0,
        2 if shape.dtype != "float32" else 4,
    )


def test_shape_reads_nested_text_config_and_defaults() -> None:
    shape = ModelShape.of(
        {
            "architectures": ["LlavaForConditionalGeneration"],
            "model_type": "llava",
            "text_config": {
                "num_hidden_layers": 4,
                "num_attention_heads": 8,
                "hidden_size": 256,
                "n_ctx": 2048,
            },
        }
    )
    assert (shape.num_layers, shape.num_kv_heads, shape.head_dim) == (4, 8, 32)  # kv heads default to heads
    assert shape.max_positions == 2048 and shape.architecture == "LlavaForConditionalGeneration"
    assert ModelShape.of({"model_type": "llama"}).architecture == "llama"  # no architectures: the model type
