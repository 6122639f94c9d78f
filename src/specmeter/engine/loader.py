"""Load a local Hugging Face causal-LM directory into a ``CausalLM`` plus its tokenizer.

Llama-family checkpoints in safetensors go to the native engine; everything else (or ``implementation=
"transformers"``) goes through ``AutoModelForCausalLM``. Nothing is ever downloaded: paths must be local
directories, and ``trust_remote_code`` stays off unless the user asks for it.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from specmeter.engine.base import CausalLM
from specmeter.metrics.records import ModelInfo

Implementation = Literal["auto", "native", "transformers"]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class ModelLoadError(ValueError):
    """A user-facing problem with a model directory; the message names the path and what is wrong."""


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
        raise ModelLoadError(f"unknown device {device!r}") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(f"device {device!r} requested but CUDA is not available")
    return dev


def resolve_dtype(dtype: str, device: torch.device, config: Any) -> torch.dtype:
    if dtype == "auto":
        if device.type == "cpu":
            # Half-precision matmuls are slow on most CPUs; float32 is what a CPU user wants to measure.
            return torch.float32
        stored = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
        return stored if stored in (torch.bfloat16, torch.float16) else torch.bfloat16
    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}; choose one of auto, {', '.join(DTYPES)}")
    return DTYPES[dtype]


def read_config(path: Path, trust_remote_code: bool = False) -> Any:
    """The transformers config of a local model directory, with a one-line error on any problem."""
    if not path.exists():
        raise ModelLoadError(f"{path}: no such directory")
    if not path.is_dir():
        raise ModelLoadError(f"{path}: not a directory (expected a Hugging Face model directory)")
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise ModelLoadError(f"{cfg_file}: missing (not a Hugging Face model directory)")
    try:
        json.loads(cfg_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelLoadError(f"{cfg_file}: unreadable config ({e})") from e
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(
            str(path), trust_remote_code=trust_remote_code, local_files_only=True
        )
    except Exception as e:  # transformers raises many types for a bad config; the user needs one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(f"{cfg_file}: cannot be loaded by transformers ({first})") from e


def load_tokenizer(path: Path, trust_remote_code: bool = False) -> Any:
    if not any((path / f).is_file() for f in ("tokenizer.json", "tokenizer.model", "vocab.json")):
        raise ModelLoadError(f"{path}: no tokenizer (expected tokenizer.json)")
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(
            str(path), trust_remote_code=trust_remote_code, local_files_only=True
        )
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(f"{path}: tokenizer cannot be loaded ({first})") from e


def eos_ids(path: Path, config: Any, tokenizer: Any) -> frozenset[int]:
    ids: set[int] = set()
    gen_file = path / "generation_config.json"
    candidates: list[Any] = [getattr(config, "eos_token_id", None), tokenizer.eos_token_id]
    if gen_file.is_file():
        # An unreadable generation config only loses extra EOS ids.
        with contextlib.suppress(OSError, json.JSONDecodeError, AttributeError):
            candidates.append(json.loads(gen_file.read_text(encoding="utf-8")).get("eos_token_id"))
    for c in candidates:
        if isinstance(c, int):
            ids.add(c)
        elif isinstance(c, list):
            ids.update(x for x in c if isinstance(x, int))
    return frozenset(ids)


def _read_safetensors(path: Path) -> dict[str, torch.Tensor] | None:
    from safetensors.torch import load_file

    files = sorted(path.glob("*.safetensors"))
    if not files:
        return None
    state: dict[str, torch.Tensor] = {}
    for f in files:
        try:
            state.update(load_file(str(f)))
        except Exception as e:
            raise ModelLoadError(f"{f}: unreadable safetensors file ({e})") from e
    return state


def _count_params(state: dict[str, torch.Tensor]) -> int:
    seen: set[int] = set()
    total = 0
    for t in state.values():
        if t.data_ptr() in seen:
            continue
        seen.add(t.data_ptr())
        total += t.numel()
    return total


def model_info(
    name: str, path: Path, config: Any, params: int, dtype: torch.dtype, implementation: str
) -> ModelInfo:
    layers = int(getattr(config, "num_hidden_layers", 0) or 0)
    heads = int(getattr(config, "num_attention_heads", 0) or 0)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    hidden = int(getattr(config, "hidden_size", 0) or 0)
    head_dim = int(getattr(config, "head_dim", None) or (hidden // heads if heads else 0))
    elem = torch.empty((), dtype=dtype).element_size()
    archs = getattr(config, "architectures", None) or [getattr(config, "model_type", "unknown")]
    return ModelInfo(
        name=name,
        path=str(path),
        architecture=str(archs[0]),
        params=params,
        weight_bytes=params * elem,
        kv_bytes_per_token=2 * layers * kv_heads * head_dim * elem,
        dtype=str(dtype).removeprefix("torch."),
        num_layers=layers,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        implementation=implementation,
    )


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
    config = read_config(path, trust_remote_code)
    tokenizer = load_tokenizer(path, trust_remote_code)
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev, config)
    label = name or path.name
    blocker = _native_blocker(config)
    if implementation == "native" and blocker:
        raise ModelLoadError(f"{path}: the native engine cannot run this model ({blocker})")

    model: CausalLM | None = None
    if implementation != "transformers" and blocker is None:
        from specmeter.engine.llama import NativeLlama, NativeUnsupported

        state = _read_safetensors(path)
        if state is None and implementation == "native":
            raise ModelLoadError(
                f"{path}: no *.safetensors weights (the native engine reads safetensors only)"
            )
        if state is not None:
            try:
                info = model_info(label, path, config, _count_params(state), torch_dtype, "native")
                model = NativeLlama(config, state, info, dev, torch_dtype)
            except KeyError as e:
                raise ModelLoadError(f"{path}: weights lack tensor {e.args[0]!r}") from e
            except NativeUnsupported as e:
                if implementation == "native":
                    raise ModelLoadError(f"{path}: the native engine cannot run this model ({e})") from e
    if model is None:
        model = _load_transformers(path, label, config, torch_dtype, dev, trust_remote_code)
    return LoadedModel(
        model=model, tokenizer=tokenizer, eos_ids=eos_ids(path, config, tokenizer), info=model.info
    )


def _load_transformers(
    path: Path, label: str, config: Any, dtype: torch.dtype, device: torch.device, trust_remote_code: bool
) -> CausalLM:
    from transformers import AutoModelForCausalLM

    from specmeter.engine.hf import HFCausalLM

    try:
        hf = AutoModelForCausalLM.from_pretrained(
            str(path), dtype=dtype, trust_remote_code=trust_remote_code, local_files_only=True
        )
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelLoadError(f"{path}: transformers cannot load the weights ({first})") from e
    hf.to(device)  # type: ignore[arg-type]  # transformers' stubs mistype nn.Module.to
    hf.eval()
    params = sum(p.numel() for p in hf.parameters())  # parameters() yields tied weights once
    info = model_info(label, path, config, params, dtype, "transformers")
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
