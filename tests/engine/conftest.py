"""Engine test fixtures: a word-level 8-token vocabulary for exact distribution tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiny_models import TinyConfig, build_random_llama


@pytest.fixture(scope="module")
def small_vocab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    root = tmp_path_factory.mktemp("small_vocab")
    words = ["<unk>", "<s>", "</s>", "<pad>", "a", "b", "c", "d"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )
    target = build_random_llama(root / "target", fast, TinyConfig(hidden=32, layers=2, init_std=0.6), seed=21)
    draft = build_random_llama(root / "draft", fast, TinyConfig(hidden=16, layers=1, init_std=0.6), seed=22)
    return target, draft
