"""Corpus files -> token streams and batches for language-model training.

A corpus is a JSONL file of ``{"text": ...}`` objects (other keys such as ``register`` and ``category`` may
be used to filter) or a plain text file with one document per line. Documents are tokenized as
BOS + text + EOS and concatenated, so every window of the stream is a valid training example; the last
``heldout`` share of documents is kept apart for evaluation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from specmeter import jsonsafe


class CorpusError(ValueError):
    """A problem with a corpus file; the message names the file and line."""


def corpus_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 file; CorpusError naming the file, line and byte that is not UTF-8."""
    if not path.is_file():
        raise CorpusError(f"{path}: no such file")
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise CorpusError(
                    f"{path}:{n}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1}); "
                    "convert the corpus to UTF-8 (iconv -f ENCODING -t UTF-8)"
                ) from None
            yield n, text.removeprefix("\ufeff") if n == 1 else text


def read_documents(path: Path, where: dict[str, str] | None = None) -> list[str]:
    """Texts of ``path``; with ``where``, only JSONL records whose fields equal the given values."""
    docs: list[str] = []
    jsonl = path.suffix == ".jsonl"
    for n, line in corpus_lines(path):
        line = line.strip()
        if not line:
            continue
        if not jsonl:
            docs.append(line)
            continue
        try:
            obj = jsonsafe.loads(line)
        except json.JSONDecodeError as e:
            raise CorpusError(f"{path}:{n}: invalid JSON ({e.msg} at column {e.colno})") from e
        if not isinstance(obj, dict) or not isinstance(obj.get("text") or obj.get("prompt"), str):
            raise CorpusError(f"{path}:{n}: field 'text': missing or not a string")
        if where and any(obj.get(k) != v for k, v in where.items()):
            continue
        docs.append(obj.get("text") or obj["prompt"])
    if not docs:
        raise CorpusError(f"{path}: no documents" + (f" matching {where}" if where else ""))
    return docs


def parse_filter(spec: str | None) -> dict[str, str] | None:
    """``"register=legal"`` -> {"register": "legal"}; None stays None."""
    if not spec:
        return None
    out = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise CorpusError(f"--filter: {part!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


@dataclass
class TokenStream:
    train: torch.Tensor  # [n_train] int64
    heldout: torch.Tensor  # [n_heldout] int64


def tokenize_corpus(docs: list[str], tokenizer: Any, heldout: float = 0.02) -> TokenStream:
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    n_held = max(1, int(len(docs) * heldout)) if len(docs) > 1 else 0
    encoded = tokenizer(docs, add_special_tokens=False)["input_ids"]

    def pack(seqs: list[list[int]]) -> torch.Tensor:
        flat: list[int] = []
        for ids in seqs:
            flat.extend([bos, *ids, eos])
        return torch.tensor(flat, dtype=torch.long)

    return TokenStream(train=pack(encoded[: len(docs) - n_held]), heldout=pack(encoded[len(docs) - n_held :]))


def random_windows(
    stream: torch.Tensor, batch: int, seq_len: int, generator: torch.Generator
) -> Iterator[torch.Tensor]:
    """Endless batches [batch, seq_len + 1] of random windows of the stream."""
    if stream.numel() <= seq_len + 1:
        raise CorpusError(f"corpus too small: {stream.numel()} tokens for windows of {seq_len + 1}")
    offsets = torch.arange(seq_len + 1)
    while True:
        starts = torch.randint(0, stream.numel() - seq_len - 1, (batch,), generator=generator)
        yield stream[starts[:, None] + offsets]


def sequential_windows(stream: torch.Tensor, batch: int, seq_len: int) -> Iterator[torch.Tensor]:
    """Non-overlapping windows covering the stream once (for held-out loss)."""
    n = (stream.numel() - 1) // seq_len
    windows = [stream[i * seq_len : i * seq_len + seq_len + 1] for i in range(n)]
    for i in range(0, len(windows), batch):
        yield torch.stack(windows[i : i + batch])


# The copying curriculum (issue 40, an experiment; docs/methods.md "Per-category acceptance on the bundled
# target"): strings of random tokens repeated, so the only way to predict a repeat is to find the earlier
# occurrence and copy what followed it (an induction head). Each row draws its tokens from the first ``v``
# ordinary ids, ``v`` log-uniform between COPY_MIN_VOCAB and the whole vocabulary, and its string's length
# uniform in [COPY_MIN_SPAN, COPY_MAX_SPAN]. With one length for every row (32, measured 2026-12-05) the
# bundled target's shape learned in 200 steps to copy "the token 32 back", a positional head: 65% of a
# repeat at that distance, 0-1% at 21 or 40, and no more copying in text than before. With lengths that
# vary it stays on the loss plateau (ln v) far longer: 1,100 steps on 256-id strings, then an induction
# head formed within 100 (COPY_WARMUP_VOCAB).
COPY_ROW = 128  # tokens per row after BOS: the string repeated to fill it
COPY_MIN_SPAN, COPY_MAX_SPAN = 8, 48
COPY_MIN_VOCAB = 128
# The warm-up's strings: 256 ids. The target's shape trained on these alone (16 rows a step, lr 1e-3) sat on
# the plateau for 1,100 steps, then within 100 predicted 66% of a repeat at a length it had not been given.
COPY_WARMUP_VOCAB = 256


def copy_rows(
    ordinary: torch.Tensor,
    rows: int,
    bos: int,
    generator: torch.Generator,
    max_vocab: int | None = None,
    min_vocab: int = COPY_MIN_VOCAB,
) -> torch.Tensor:
    """[rows, 1 + COPY_ROW]: BOS, then a random string of ``ordinary`` ids repeated to fill the row.

    ``ordinary`` are the ids that are not special tokens, in id order; each row's vocabulary is log-uniform
    in [``min_vocab``, ``max_vocab``] (default: the whole of ``ordinary``).
    """
    n = ordinary.numel() if max_vocab is None else min(max_vocab, ordinary.numel())
    low = min(min_vocab, n)
    # log-uniform vocabulary per row: [low, n]
    u = torch.rand(rows, 1, generator=generator)
    vocab = torch.exp(math.log(low) + u * (math.log(n) - math.log(low))).long().clamp(1, n)
    picks = (torch.rand(rows, COPY_ROW, generator=generator) * vocab).long()  # [rows, row] in [0, v)
    span = torch.randint(COPY_MIN_SPAN, COPY_MAX_SPAN + 1, (rows, 1), generator=generator)
    # position j takes the string's token j mod span: span 3 -> [p0, p1, p2, p0, p1, p2, p0, ...]
    tiled = picks.gather(1, torch.arange(COPY_ROW).unsqueeze(0) % span)
    return torch.cat([torch.full((rows, 1), bos, dtype=torch.long), ordinary[tiled]], dim=1)
