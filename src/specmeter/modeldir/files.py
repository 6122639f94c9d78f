"""config.json and the other small files of a Hugging Face model directory, read as JSON (no transformers).

Every problem a user must fix raises :class:`ModelDirError` with one line naming the path and what is wrong;
these are the only messages about model directories anywhere in specmeter.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmeter import inputs, jsonsafe

__all__ = [
    "TOKENIZER_FILES",
    "ModelDirError",
    "ModelShape",
    "check_model_files",
    "eos_ids",
    "first_line",
    "read_json",
    "read_model_config",
    "require_tokenizer_files",
]

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json")
_POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx")


class ModelDirError(ValueError):
    """A model directory cannot be read, or loaded as asked; the message is one line naming the path."""


def first_line(e: BaseException) -> str:
    """The first line of an exception's message, or its type when it has none (transformers' are long)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def read_json(path: Path, what: str = "JSON") -> dict[str, Any]:
    """A JSON object from ``path``; ``what`` names the file in the message (``unreadable config (...)``)."""
    try:
        data = jsonsafe.loads(inputs.read_text(path))
    except FileNotFoundError:
        raise ModelDirError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ModelDirError(f"{path}: unreadable {what} ({e})") from None
    except json.JSONDecodeError as e:
        raise ModelDirError(
            f"{path}: unreadable {what} ({e.msg} at line {e.lineno} column {e.colno})"
        ) from None
    if not isinstance(data, dict):
        raise ModelDirError(f"{path}: unreadable {what} (expected a JSON object)")
    return data


def read_model_config(path: Path) -> dict[str, Any]:
    """``config.json`` of the model directory ``path``, after checking that ``path`` is one."""
    if not path.exists():
        raise ModelDirError(f"{path}: no such directory")
    if not path.is_dir():
        raise ModelDirError(f"{path}: not a directory (expected a Hugging Face model directory)")
    check_model_files(path)
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise ModelDirError(f"{cfg_file}: missing (not a Hugging Face model directory)")
    return read_json(cfg_file, "config")


def check_model_files(path: Path) -> None:
    """ModelDirError when a file of the directory ``path`` is a FIFO, a device or a socket: the libraries
    that read model files (tokenizers, safetensors) would block on a FIFO or read a device without end."""
    try:
        entries = sorted(path.iterdir())
    except OSError:
        return  # the reader says what it cannot read
    for entry in entries:
        try:
            inputs.check_input(entry)
        except inputs.InputError as e:
            raise ModelDirError(f"{entry}: unreadable ({e})") from None


def require_tokenizer_files(path: Path) -> None:
    check_model_files(path)
    if not any((path / f).is_file() for f in TOKENIZER_FILES):
        raise ModelDirError(f"{path}: no tokenizer (expected tokenizer.json)")


def _int(config: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


@dataclass(frozen=True)
class ModelShape:
    """The layout facts of config.json the memory metrics and checks need (None where it does not say)."""

    architecture: str
    model_type: str
    max_positions: int | None
    embedding_rows: int | None  # vocab_size: rows of the embedding and the LM head
    num_layers: int | None
    num_kv_heads: int | None
    head_dim: int | None
    dtype: str | None  # the stored dtype config.json names

    @classmethod
    def of(cls, config: dict[str, Any]) -> ModelShape:
        # Multimodal checkpoints nest the language model's settings.
        nested = config.get("text_config")
        text: dict[str, Any] = nested if isinstance(nested, dict) else config
        heads = _int(text, "num_attention_heads", "n_head")
        hidden = _int(text, "hidden_size", "n_embd")
        head_dim = _int(text, "head_dim") or (hidden // heads if hidden and heads else None)
        stored = (
            config.get("torch_dtype") or config.get("dtype") or text.get("torch_dtype") or text.get("dtype")
        )
        archs = config.get("architectures")
        model_type = str(config.get("model_type", "unknown"))
        return cls(
            architecture=str(archs[0]) if isinstance(archs, list) and archs else model_type,
            model_type=model_type,
            max_positions=_int(text, *_POSITION_KEYS),
            embedding_rows=_int(text, "vocab_size"),
            num_layers=_int(text, "num_hidden_layers", "n_layer"),
            num_kv_heads=_int(text, "num_key_value_heads") or heads,
            head_dim=head_dim,
            dtype=stored.removeprefix("torch.") if isinstance(stored, str) else None,
        )


def eos_ids(path: Path, config: dict[str, Any], tokenizer: Any) -> frozenset[int]:
    """Every end-of-sequence id: config.json's, the tokenizer's and generation_config.json's."""
    candidates: list[Any] = [config.get("eos_token_id"), getattr(tokenizer, "eos_token_id", None)]
    gen_file = path / "generation_config.json"
    if gen_file.is_file():
        # An unreadable generation config only loses extra EOS ids.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            candidates.append(jsonsafe.loads(gen_file.read_text(encoding="utf-8")).get("eos_token_id"))
    ids: set[int] = set()
    for c in candidates:
        if isinstance(c, int):
            ids.add(c)
        elif isinstance(c, list):
            ids.update(x for x in c if isinstance(x, int))
    return frozenset(ids)
