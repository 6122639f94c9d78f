"""Convert one bundled model directory to GGUF with llama.cpp's own converter (``make llamacpp-env``).

Usage: ``python convert_gguf.py LLAMA_CPP_DIR MODEL_DIR OUT.gguf [--outtype f32]``

llama.cpp's ``convert_hf_to_gguf.py`` names a BPE tokenizer's pre-tokenizer (``tokenizer.ggml.pre``) by
fingerprinting it: it encodes a fixed text and looks the hash of the ids up in a table of known published
vocabularies (``get_vocab_base_pre`` in ``conversion/base.py``). The bundled models' tokenizer is our own
2,048-token byte-level BPE, in no such table, so the converter refuses it ("BPE pre-tokenizer was not
recognized"). Its pre-tokenization is nevertheless exactly GPT-2's: no normalizer and a ``ByteLevel``
pre-tokenizer with ``use_regex`` (GPT-2's split pattern) and no prefix space — which is what llama.cpp's
``gpt-2`` pre-tokenizer implements. So this wrapper answers ``gpt-2`` for a tokenizer that has exactly that
configuration, checked field by field in its ``tokenizer.json``, and leaves every other tokenizer to the
converter's own table. Whether the answer is right is tested, not assumed: ``tests/real_llamacpp`` checks
that llama-server tokenizes every golden prompt to the same ids as the bundled tokenizer.

Everything else (tensor mapping, special tokens, ``add_bos_token`` from the tokenizer's post-processor) is
the unmodified converter. It imports ``sentencepiece`` while probing for a SentencePiece vocabulary, so
that package must be importable (the Makefile installs it beside, not into, the project's environment).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

GPT2_PRE_TOKENIZER = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}


def is_gpt2_byte_level(model_dir: Path) -> bool:
    """Whether ``model_dir``'s tokenizer pre-tokenizes exactly as GPT-2 does (llama.cpp's ``gpt-2``)."""
    path = model_dir / "tokenizer.json"
    if not path.is_file():
        return False
    spec = json.loads(path.read_text(encoding="utf-8"))
    pre = spec.get("pre_tokenizer") or {}
    model = spec.get("model") or {}
    return (
        spec.get("normalizer") is None
        and model.get("type") == "BPE"
        and all(pre.get(key) == value for key, value in GPT2_PRE_TOKENIZER.items())
    )


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    llama_dir, model_dir, out, *rest = (Path(argv[0]), Path(argv[1]), argv[2], *argv[3:])
    sys.path.insert(0, str(llama_dir / "gguf-py"))
    sys.path.insert(0, str(llama_dir))
    import convert_hf_to_gguf  # the vendored converter (llama.cpp's own code, unmodified)
    from conversion.base import TextModel

    upstream = TextModel.get_vocab_base_pre
    gpt2 = is_gpt2_byte_level(model_dir)

    def vocab_base_pre(self: Any, tokenizer: Any) -> str:
        return "gpt-2" if gpt2 else str(upstream(self, tokenizer))

    TextModel.get_vocab_base_pre = vocab_base_pre  # type: ignore[method-assign]
    sys.argv = ["convert_hf_to_gguf.py", str(model_dir), "--outfile", out, *(rest or ["--outtype", "f32"])]
    convert_hf_to_gguf.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
