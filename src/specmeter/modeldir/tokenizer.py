"""A tokenizer as compat compares it, read with the ``tokenizers`` library (transformers for old formats).

``tokenizer.json`` is read directly; a SentencePiece ``tokenizer.model`` or a ``vocab.json`` is converted by
transformers (slow, but still no weights). Special tokens come from ``tokenizer_config.json``, the chat
template from ``chat_template.jinja`` or that config.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from specmeter.modeldir.files import (
    TOKENIZER_FILES,
    ModelDirError,
    first_line,
    read_json,
    require_tokenizer_files,
)

__all__ = ["SPECIAL_ROLES", "TokenizerFacts", "read_tokenizer"]

SPECIAL_ROLES = ("bos", "eos", "pad", "unk")


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


def _chat_template(path: Path, tok_config: dict[str, Any]) -> str | None:
    # transformers 5 writes the template to chat_template.jinja; older checkpoints keep it in the config,
    # sometimes as a list of named templates.
    jinja = path / "chat_template.jinja"
    if jinja.is_file():
        try:
            return jinja.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ModelDirError(f"{jinja}: unreadable ({e})") from None
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
            raise ModelDirError(f"{tj}: unreadable tokenizer ({first_line(e)})") from None
    require_tokenizer_files(path)
    legacy = [f for f in TOKENIZER_FILES[1:] if (path / f).is_file()]
    # A SentencePiece or vocab.json tokenizer: let transformers convert it (slow, but still no weights).
    from transformers import AutoTokenizer

    try:
        fast = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        return fast.backend_tokenizer, f"{legacy[0]} (converted by transformers)"
    except Exception as e:
        raise ModelDirError(f"{path}: tokenizer cannot be loaded ({first_line(e)})") from None


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
