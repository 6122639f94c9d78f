"""A new byte-level BPE tokenizer for ``specmeter train`` when no ``--tokenizer`` is given."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<pad>"]


def build_tokenizer(out: Path, texts: Iterable[str], vocab_size: int = 512) -> Any:
    """Train a byte-level BPE on ``texts`` and save it as a transformers fast tokenizer in ``out``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out))
    return fast
