"""Everything specmeter knows about a model directory without loading it; the ModelInfo of a loaded one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmeter.metrics.memory import bytes_per_element, kv_bytes_per_token
from specmeter.metrics.records import ModelInfo
from specmeter.modeldir.files import ModelShape, read_model_config
from specmeter.modeldir.tokenizer import TokenizerFacts, read_tokenizer
from specmeter.modeldir.weights import WeightFacts, read_weights

__all__ = ["ModelFacts", "inspect_model", "model_info", "shape_kv_bytes_per_token"]


def shape_kv_bytes_per_token(shape: ModelShape, dtype: str | None) -> int | None:
    """KV bytes per token of ``shape`` at ``dtype`` (metrics.memory); None when config.json lacks a factor."""
    if not (shape.num_layers and shape.num_kv_heads and shape.head_dim and dtype):
        return None
    try:
        elem = bytes_per_element(dtype)
    except ValueError:
        return None
    return kv_bytes_per_token(shape.num_layers, shape.num_kv_heads, shape.head_dim, elem)


@dataclass(frozen=True)
class ModelFacts(ModelShape):
    """The shape (``dtype``: config's, else the weights'), plus the files it was read from."""

    path: Path
    config: dict[str, Any]
    weights: WeightFacts | None
    tokenizer: TokenizerFacts

    @property
    def kv_bytes_per_token(self) -> int | None:
        """2 · layers · kv_heads · head_dim · bytes at the stored dtype."""
        return shape_kv_bytes_per_token(self, self.dtype)


def inspect_model(path: Path) -> ModelFacts:
    """Everything compat compares, from config, tokenizer files and safetensors headers only."""
    config = read_model_config(path)
    shape = ModelShape.of(config)
    tokenizer = read_tokenizer(path)
    weights = read_weights(path)
    fields = {f.name: getattr(shape, f.name) for f in dataclasses.fields(ModelShape)}
    fields["dtype"] = shape.dtype or (weights.dtype if weights else None)
    return ModelFacts(**fields, path=path, config=config, weights=weights, tokenizer=tokenizer)


def model_info(
    name: str, path: Path, shape: ModelShape, params: int, dtype: str, implementation: str
) -> ModelInfo:
    """The static facts the memory metrics need, for ``params`` parameters held at ``dtype``."""
    elem = bytes_per_element(dtype)
    return ModelInfo(
        name=name,
        path=str(path),
        architecture=shape.architecture,
        params=params,
        weight_bytes=params * elem,
        kv_bytes_per_token=shape_kv_bytes_per_token(shape, dtype) or 0,
        dtype=dtype,
        num_layers=shape.num_layers or 0,
        num_kv_heads=shape.num_kv_heads or 0,
        head_dim=shape.head_dim or 0,
        implementation=implementation,
    )
