"""Load a local Hugging Face causal-LM directory into a ``CausalLM`` plus its tokenizer.

Llama-family checkpoints in safetensors go to the native engine; everything else (or ``implementation=
"transformers"``) goes through ``AutoModelForCausalLM``. Nothing is ever downloaded: paths must be local
directories, and ``trust_remote_code`` stays off unless the user asks for it.

The directory is read first by ``specmeter.modeldir`` (config.json, tokenizer files, safetensors headers
and sizes), so a broken directory fails with the same one-line ``ModelDirError`` as ``compat`` gives,
before transformers or safetensors see it; the model's static facts (``ModelInfo``) come from there too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from specmeter.engine.base import CausalLM
from specmeter.metrics.records import ModelInfo
from specmeter.modeldir import (
    ModelDirError,
    ModelShape,
    eos_ids,
    first_line,
    model_info,
    read_model_config,
    read_weights,
    require_tokenizer_files,
)

__all__ = [
    "DTYPES",
    "LoadedModel",
    "load_model",
    "load_tokenizer",
    "read_config",
    "resolve_device",
    "tokenizer_mismatch",
]

Implementation = Literal["auto", "native", "transformers"]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class LoadedModel:
    model: CausalLM
    tokenizer: Any
    eos_ids: frozenset[int]
    info: ModelInfo

    @property
    def max_positions(self) -> int | None:
        """The context the engine will allow (both native and transformers models record it)."""
        return getattr(self.model, "max_positions", None)


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise ModelDirError(f"unknown device {device!r}") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelDirError(f"device {device!r} requested but CUDA is not available")
    return dev


def resolve_dtype(dtype: str, device: torch.device, config: Any) -> torch.dtype:
    if dtype == "auto":
        if device.type == "cpu":
            # Half-precision matmuls are slow on most CPUs; float32 is what a CPU user wants to measure.
            return torch.float32
        stored = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
        return stored if stored in (torch.bfloat16, torch.float16) else torch.bfloat16
    if dtype not in DTYPES:
        raise ModelDirError(f"unknown dtype {dtype!r}; choose one of auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


def read_config(path: Path, trust_remote_code: bool = False) -> Any:
    """The transformers config of a local model directory, with a one-line error on any problem."""
    read_model_config(path)  # the directory and its config.json, checked with modeldir's messages
    return _auto_config(path, trust_remote_code)


def _auto_config(path: Path, trust_remote_code: bool) -> Any:
    from transformers import AutoConfig

    cfg_file = path / "config.json"
    try:
        return AutoConfig.from_pretrained(
            str(path), trust_remote_code=trust_remote_code, local_files_only=True
        )
    except Exception as e:  # transformers raises many types for a bad config; the user needs one line
        raise ModelDirError(f"{cfg_file}: cannot be loaded by transformers ({first_line(e)})") from e


def load_tokenizer(path: Path, trust_remote_code: bool = False) -> Any:
    require_tokenizer_files(path)
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(
            str(path), trust_remote_code=trust_remote_code, local_files_only=True
        )
    except Exception as e:
        raise ModelDirError(f"{path}: tokenizer cannot be loaded ({first_line(e)})") from e


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    state: dict[str, torch.Tensor] = {}
    for f in sorted(path.glob("*.safetensors")):
        try:
            state.update(load_file(str(f)))
        except Exception as e:
            raise ModelDirError(f"{f}: unreadable safetensors file ({e})") from e
    return state


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _native_blocker(config: Any) -> str | None:
    from specmeter.engine.llama import NATIVE_ARCHITECTURES

    if config.model_type not in NATIVE_ARCHITECTURES:
        return (
            f"architecture {config.model_type!r} is not in the native engine ({sorted(NATIVE_ARCHITECTURES)})"
        )
    if getattr(config, "mlp_bias", False):
        return "MLP bias"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"activation {config.hidden_act!r}"
    return None


def load_model(
    path: str | Path,
    *,
    name: str | None = None,
    dtype: str = "auto",
    device: str = "auto",
    implementation: Implementation = "auto",
    trust_remote_code: bool = False,
) -> LoadedModel:
    path = Path(path).expanduser()
    raw = read_model_config(path)
    config = _auto_config(path, trust_remote_code)
    shape = ModelShape.of(raw)
    tokenizer = load_tokenizer(path, trust_remote_code)
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev, config)
    label = name or path.name
    blocker = _native_blocker(config)
    if implementation == "native" and blocker:
        raise ModelDirError(f"{path}: the native engine cannot run this model ({blocker})")

    model: CausalLM | None = None
    if implementation != "transformers" and blocker is None:
        from specmeter.engine.llama import NativeLlama, NativeUnsupported

        weights = read_weights(path)  # headers and file sizes, before anything is loaded
        if weights is None and implementation == "native":
            raise ModelDirError(
                f"{path}: no *.safetensors weights (the native engine reads safetensors only)"
            )
        if weights is not None:
            state = _read_safetensors(path)
            try:
                info = model_info(label, path, shape, weights.params, _dtype_name(torch_dtype), "native")
                model = NativeLlama(config, state, info, dev, torch_dtype)
            except KeyError as e:
                raise ModelDirError(f"{path}: weights lack tensor {e.args[0]!r}") from e
            except NativeUnsupported as e:
                if implementation == "native":
                    raise ModelDirError(f"{path}: the native engine cannot run this model ({e})") from e
    if model is None:
        model = _load_transformers(path, label, shape, torch_dtype, dev, trust_remote_code)
    return LoadedModel(
        model=model, tokenizer=tokenizer, eos_ids=eos_ids(path, raw, tokenizer), info=model.info
    )


def _load_transformers(
    path: Path,
    label: str,
    shape: ModelShape,
    dtype: torch.dtype,
    device: torch.device,
    trust_remote_code: bool,
) -> CausalLM:
    from transformers import AutoModelForCausalLM

    from specmeter.engine.hf import HFCausalLM

    try:
        hf = AutoModelForCausalLM.from_pretrained(
            str(path), dtype=dtype, trust_remote_code=trust_remote_code, local_files_only=True
        )
    except Exception as e:
        raise ModelDirError(f"{path}: transformers cannot load the weights ({first_line(e)})") from e
    hf.to(device)  # type: ignore[arg-type]  # transformers' stubs mistype nn.Module.to
    hf.eval()
    params = sum(p.numel() for p in hf.parameters())  # parameters() yields tied weights once
    info = model_info(label, path, shape, params, _dtype_name(dtype), "transformers")
    return HFCausalLM(hf, info, device)


def tokenizer_mismatch(target: Any, draft: Any) -> str | None:
    """Why a draft's tokenizer cannot serve the target, or None when the id->token maps are identical."""
    tv, dv = target.get_vocab(), draft.get_vocab()
    if tv != dv:
        differing = sum(1 for tok, i in tv.items() if dv.get(tok) != i)
        return (
            f"vocabularies differ ({len(tv)} vs {len(dv)} entries, {differing} target tokens map elsewhere)"
        )
    for attr in ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id"):
        a, b = getattr(target, attr, None), getattr(draft, attr, None)
        if a != b:
            return f"{attr} differs ({a} vs {b})"
    return None
