"""Read what ``compat`` needs from a Hugging Face model directory without loading any weights.

``config.json`` and ``tokenizer_config.json`` are read as JSON, the tokenizer with the ``tokenizers``
library from ``tokenizer.json``, and parameter counts, dtypes and weight bytes from the *headers* of the
``*.safetensors`` files: a safetensors file starts with an 8-byte little-endian header length and a JSON
header giving every tensor's dtype, shape and byte range, so nothing past the header is read. A 70B
checkpoint is inspected in well under a second.

Problems a user must fix (no directory, no config, unreadable JSON or header, no tokenizer) raise
:class:`InspectError` with a one-line message naming the file.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from specmeter.metrics.memory import bytes_per_element, kv_bytes_per_token

__all__ = [
    "SPECIAL_ROLES",
    "InspectError",
    "ModelFacts",
    "TokenizerFacts",
    "WeightFacts",
    "inspect_model",
    "read_json",
    "read_tokenizer",
    "read_weights",
]

SPECIAL_ROLES = ("bos", "eos", "pad", "unk")
_MAX_HEADER = 100 * 2**20  # real headers are a few MB at most; anything larger is a corrupt length field
_POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx")
# safetensors dtype names -> the names the rest of specmeter uses
_ST_DTYPES = {
    "F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2", "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
    "BOOL": "bool",
}  # fmt: skip


class InspectError(ValueError):
    """A model directory cannot be inspected; the message is one line naming the file and the problem."""


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``, or :class:`InspectError` saying why not."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InspectError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InspectError(f"{path}: unreadable ({e})") from None
    except json.JSONDecodeError as e:
        raise InspectError(f"{path}: unreadable JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(data, dict):
        raise InspectError(f"{path}: expected a JSON object")
    return data


@dataclass(frozen=True)
class TokenizerFacts:
    """A tokenizer as compat compares it: the id→token map, special tokens, pipeline parts, template."""

    source: str
    tokenizer: Tokenizer
    vocab: dict[int, str]  # id -> token, added tokens included
    added: dict[int, tuple[str, bool]]  # id -> (content, special)
    special: dict[str, tuple[str | None, int | None]]  # role -> (token, id) from tokenizer_config.json
    parts: dict[str, Any]  # normalizer, pre_tokenizer, post_processor, decoder, model (JSON, vocab removed)
    chat_template: str | None


@dataclass(frozen=True)
class WeightFacts:
    files: int
    params: int  # stored elements (tied weights are stored once by save_pretrained)
    bytes: int
    dtype_bytes: dict[str, int]  # dtype -> bytes stored in it

    @property
    def dtype(self) -> str:
        """The dtype holding most bytes (e.g. float32, or bfloat16 with a few float32 norms)."""
        return max(self.dtype_bytes.items(), key=lambda item: item[1])[0] if self.dtype_bytes else "unknown"


@dataclass(frozen=True)
class ModelFacts:
    path: Path
    config: dict[str, Any]
    architecture: str
    model_type: str
    max_positions: int | None
    embedding_rows: int | None  # config vocab_size: rows of the embedding and the LM head
    num_layers: int | None
    num_kv_heads: int | None
    head_dim: int | None
    dtype: str | None  # stored dtype: config's, else the weights'
    weights: WeightFacts | None
    tokenizer: TokenizerFacts

    @property
    def kv_bytes_per_token(self) -> int | None:
        """2 · layers · kv_heads · head_dim · bytes at the stored dtype."""
        if not (self.num_layers and self.num_kv_heads and self.head_dim and self.dtype):
            return None
        try:
            elem = bytes_per_element(self.dtype)
        except ValueError:
            return None
        return kv_bytes_per_token(self.num_layers, self.num_kv_heads, self.head_dim, elem)


def _chat_template(path: Path, tok_config: dict[str, Any]) -> str | None:
    # transformers 5 writes the template to chat_template.jinja; older checkpoints keep it in the config,
    # sometimes as a list of named templates.
    jinja = path / "chat_template.jinja"
    if jinja.is_file():
        try:
            return jinja.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InspectError(f"{jinja}: unreadable ({e})") from None
    template = tok_config.get("chat_template")
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default", next(iter(named.values()), None))
    return template if isinstance(template, str) else None


def _special_token(value: Any) -> str | None:
    if isinstance(value, dict):  # {"content": "<s>", "lstrip": false, ...} in older configs
        value = value.get("content")
    return value if isinstance(value, str) else None


def _backend_tokenizer(path: Path) -> tuple[Tokenizer, str]:
    tj = path / "tokenizer.json"
    if tj.is_file():
        try:
            return Tokenizer.from_file(str(tj)), tj.name
        except Exception as e:  # the Rust side raises a bare Exception with the parse error
            raise InspectError(
                f"{tj}: unreadable tokenizer ({str(e).splitlines()[0] if str(e) else e!r})"
            ) from None
    legacy = [f for f in ("tokenizer.model", "vocab.json") if (path / f).is_file()]
    if not legacy:
        raise InspectError(f"{path}: no tokenizer (expected tokenizer.json)")
    # A SentencePiece or vocab.json tokenizer: let transformers convert it (slow, but still no weights).
    from transformers import AutoTokenizer

    try:
        fast = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        return fast.backend_tokenizer, f"{legacy[0]} (converted by transformers)"
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InspectError(f"{path}: tokenizer cannot be loaded ({first})") from None


def read_tokenizer(path: Path) -> TokenizerFacts:
    tokenizer, source = _backend_tokenizer(path)
    cfg_file = path / "tokenizer_config.json"
    tok_config = read_json(cfg_file) if cfg_file.is_file() else {}
    vocab = {i: t for t, i in tokenizer.get_vocab(with_added_tokens=True).items()}
    data = json.loads(tokenizer.to_str())
    added = {
        int(a["id"]): (str(a["content"]), bool(a.get("special"))) for a in data.get("added_tokens") or []
    }
    model = {k: v for k, v in (data.get("model") or {}).items() if k != "vocab"}
    parts = {key: data.get(key) for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder")}
    parts["model"] = model
    special: dict[str, tuple[str | None, int | None]] = {}
    for role in SPECIAL_ROLES:
        token = _special_token(tok_config.get(f"{role}_token"))
        special[role] = (token, tokenizer.token_to_id(token) if token is not None else None)
    return TokenizerFacts(source, tokenizer, vocab, added, special, parts, _chat_template(path, tok_config))


def _read_header(file: Path) -> dict[str, Any]:
    try:
        with file.open("rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                raise InspectError(f"{file}: unreadable safetensors header (file shorter than 8 bytes)")
            (length,) = struct.unpack("<Q", raw)
            if length > _MAX_HEADER:
                raise InspectError(f"{file}: unreadable safetensors header (length field {length})")
            header = json.loads(fh.read(length).decode("utf-8"))
    except OSError as e:
        raise InspectError(f"{file}: unreadable ({e})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InspectError(f"{file}: unreadable safetensors header ({e})") from None
    if not isinstance(header, dict):
        raise InspectError(f"{file}: unreadable safetensors header (not a JSON object)")
    return header


def read_weights(path: Path) -> WeightFacts | None:
    """Parameter count, bytes and dtypes from the safetensors headers; None without safetensors files."""
    files = sorted(path.glob("*.safetensors"))
    if not files:
        return None
    params = total = 0
    dtype_bytes: dict[str, int] = {}
    for file in files:
        for name, entry in _read_header(file).items():
            if name == "__metadata__":
                continue
            try:
                start, end = entry["data_offsets"]
                count = math.prod(int(d) for d in entry["shape"])
                dtype = _ST_DTYPES.get(entry["dtype"], str(entry["dtype"]).lower())
            except (KeyError, TypeError, ValueError):
                raise InspectError(f"{file}: unreadable safetensors header (tensor {name!r})") from None
            params += count
            total += int(end) - int(start)
            dtype_bytes[dtype] = dtype_bytes.get(dtype, 0) + int(end) - int(start)
    return WeightFacts(files=len(files), params=params, bytes=total, dtype_bytes=dtype_bytes)


def _int(config: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def inspect_model(path: Path) -> ModelFacts:
    """Everything compat compares, from config, tokenizer files and safetensors headers only."""
    if not path.exists():
        raise InspectError(f"{path}: no such directory")
    if not path.is_dir():
        raise InspectError(f"{path}: not a directory (expected a Hugging Face model directory)")
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise InspectError(f"{cfg_file}: missing (not a Hugging Face model directory)")
    config = read_json(cfg_file)
    # Multimodal checkpoints nest the language model's settings.
    nested = config.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else config
    tokenizer = read_tokenizer(path)
    weights = read_weights(path)
    heads = _int(text, "num_attention_heads", "n_head")
    hidden = _int(text, "hidden_size", "n_embd")
    head_dim = _int(text, "head_dim") or (hidden // heads if hidden and heads else None)
    stored = config.get("torch_dtype") or config.get("dtype") or text.get("torch_dtype") or text.get("dtype")
    archs = config.get("architectures")
    return ModelFacts(
        path=path,
        config=config,
        architecture=str(archs[0]) if isinstance(archs, list) and archs else "unknown",
        model_type=str(config.get("model_type", "unknown")),
        max_positions=_int(text, *_POSITION_KEYS),
        embedding_rows=_int(text, "vocab_size"),
        num_layers=_int(text, "num_hidden_layers", "n_layer"),
        num_kv_heads=_int(text, "num_key_value_heads") or heads,
        head_dim=head_dim,
        dtype=stored if isinstance(stored, str) else (weights.dtype if weights else None),
        weights=weights,
        tokenizer=tokenizer,
    )
