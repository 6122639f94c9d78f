"""Training: corpus reading, loss going down, resuming, distillation raising α, copy rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.training.data import (
    COPY_MAX_SPAN,
    COPY_MIN_SPAN,
    COPY_ROW,
    CorpusError,
    copy_rows,
    parse_filter,
    read_documents,
    tokenize_corpus,
)
from specmeter.training.distill import heldout_alpha, load_teacher_rows, make_teacher_data, train_on_teacher
from specmeter.training.lm import induction_score, ordinary_ids, train_language_model
from specmeter.training.loop import TrainConfig, lr_at
from specmeter.training.models import PRESETS, build_model, export, load_trainable
from tiny_models import sample_corpus

runner = CliRunner()


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    with path.open("w") as fh:
        for i, text in enumerate(sample_corpus(10)):
            fh.write(json.dumps({"text": text, "register": "legal" if i % 2 else "general"}) + "\n")
    return path


def test_read_documents_and_filters(corpus: Path, tmp_path: Path) -> None:
    assert len(read_documents(corpus)) == 100
    assert len(read_documents(corpus, {"register": "legal"})) == 50
    with pytest.raises(CorpusError, match="no documents matching"):
        read_documents(corpus, {"register": "medical"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": 3}\n')
    with pytest.raises(CorpusError, match=r"bad.jsonl:2: field 'text'"):
        read_documents(bad)
    bad.write_text('{"text": "fine"}\n{oops\n')
    with pytest.raises(CorpusError, match=r"bad.jsonl:2: invalid JSON"):
        read_documents(bad)
    with pytest.raises(CorpusError, match="no such file"):
        read_documents(tmp_path / "missing.jsonl")
    assert parse_filter("register=legal,category=x") == {"register": "legal", "category": "x"}
    with pytest.raises(CorpusError, match="KEY=VALUE"):
        parse_filter("register")


def test_lr_schedule_warms_up_then_decays() -> None:
    cfg = TrainConfig(steps=100, warmup=10, lr=1.0, min_lr_ratio=0.1)
    assert lr_at(0, cfg) == pytest.approx(0.1)
    assert lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(10, cfg) == pytest.approx(1.0)
    assert lr_at(100, cfg) == pytest.approx(0.1)
    assert lr_at(55, cfg) == pytest.approx(0.55)
    copying = TrainConfig(steps=100, warmup=10, lr=1.0, min_lr_ratio=0.1, copy_warmup=60)
    assert lr_at(5, copying) == pytest.approx(0.6)
    assert (
        lr_at(59, copying) == lr_at(60, copying) == pytest.approx(1.0)
    )  # the decay starts after the copying
    assert lr_at(80, copying) == pytest.approx(0.55) and lr_at(100, copying) == pytest.approx(0.1)


def test_training_lowers_loss_and_resumes(tiny, corpus: Path, tmp_path: Path) -> None:
    tokens = tokenize_corpus(read_documents(corpus), tiny.tokenizer)
    shape = PRESETS["draft-tiny"].with_overrides(hidden=32, layers=1, heads=2, intermediate=64)
    ckpt = tmp_path / "ckpt.pt"
    model = build_model(shape, tiny.tokenizer, seed=0)
    first = train_language_model(
        model, tokens, TrainConfig(steps=6, batch=4, seq_len=32, warmup=2, eval_every=3, bf16=False), ckpt
    )
    assert first.resumed_from == 0 and ckpt.is_file()
    model2 = build_model(shape, tiny.tokenizer, seed=0)
    cfg = TrainConfig(steps=40, batch=4, seq_len=32, warmup=2, eval_every=20, bf16=False, lr=3e-3)
    second = train_language_model(model2, tokens, cfg, ckpt)
    assert second.resumed_from == 6
    assert second.eval_loss is not None and first.eval_loss is not None
    assert second.eval_loss < first.eval_loss - 0.3


def test_copy_rows_repeat_a_random_string_of_ordinary_ids() -> None:
    specials = {0, 1, 2, 3}
    ordinary = torch.arange(4, 2048)
    rows = copy_rows(ordinary, 400, bos=1, generator=torch.Generator().manual_seed(0))
    assert rows.shape == (400, 1 + COPY_ROW)
    assert bool((rows[:, 0] == 1).all())
    body = rows[:, 1:]
    assert not specials & set(body.unique().tolist())
    periods = []
    for row in body:  # each row is its string repeated: periodic, with the string's length as period
        period = next(p for p in range(1, COPY_ROW) if torch.equal(row[p:], row[:-p]))
        periods.append(period)
    assert min(periods) >= COPY_MIN_SPAN and max(periods) <= COPY_MAX_SPAN
    assert len(set(periods)) > 30  # lengths vary from row to row (one length teaches a positional head)
    # each row's vocabulary is log-uniform in [128, 2044]: P(v <= 256) = ln 2 / ln(2044 / 128) = 0.25, and
    # such a row's ids all lie among the first 256 ordinary ids (ids < 260)
    small = float((body.amax(dim=1) < 4 + 256).float().mean())
    assert 0.17 < small < 0.33
    assert int(body.max()) > 1800  # the whole vocabulary is reached
    again = copy_rows(ordinary, 400, bos=1, generator=torch.Generator().manual_seed(0))
    assert torch.equal(rows, again)
    warmup = copy_rows(ordinary, 400, bos=1, generator=torch.Generator().manual_seed(1), max_vocab=128)
    assert int(warmup[:, 1:].max()) < 4 + 128 and len(warmup[:, 1:].unique()) > 100


class _Logits:
    def __init__(self, logits: torch.Tensor) -> None:
        self.logits = logits


class _Shifted(torch.nn.Module):
    """Predicts the token ``lag`` + 1 positions back: a positional head, a copier for one string length."""

    def __init__(self, vocab: int, lag: int) -> None:
        super().__init__()
        self.vocab, self.lag = vocab, lag
        self.unused = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids: torch.Tensor) -> _Logits:
        # position i predicts token i + 1, which in a repeat of a string of n is the token at i + 1 - n
        source = torch.roll(input_ids, shifts=self.lag, dims=1)
        return _Logits(torch.nn.functional.one_hot(source, self.vocab).float())


class _Induction(_Shifted):
    """An induction head by hand: find the last earlier place where the current two tokens occurred (else the
    current token alone) and predict what followed it there (else id 0)."""

    def forward(self, input_ids: torch.Tensor) -> _Logits:
        out = torch.zeros_like(input_ids)
        for r, row in enumerate(input_ids.tolist()):
            for i in range(1, len(row)):
                both = [j for j in range(1, i) if row[j] == row[i] and row[j - 1] == row[i - 1]]
                one = [j for j in range(1, i) if row[j] == row[i]]
                if both or one:
                    out[r, i] = row[(both or one)[-1] + 1]
        return _Logits(torch.nn.functional.one_hot(out, self.vocab).float())


def test_induction_score_reads_the_repeat_at_every_length() -> None:
    vocab, bos = 2048, 1
    ordinary = torch.arange(4, vocab)
    assert induction_score(_Induction(vocab, 0), ordinary, bos) > 0.98
    assert induction_score(_Shifted(vocab, 31), ordinary, bos) < 0.1  # copies 32 back: one length of 51
    assert induction_score(_Shifted(vocab, 0), ordinary, bos) < 0.02  # repeats the current token


def test_induction_score_of_an_untrained_model(tiny) -> None:
    ordinary = ordinary_ids(tiny.tokenizer)
    assert not set(ordinary.tolist()) & set(tiny.tokenizer.all_special_ids)
    untrained = build_model(PRESETS["draft-tiny"].with_overrides(hidden=48, layers=1), tiny.tokenizer, seed=0)
    assert induction_score(untrained, ordinary, tiny.tokenizer.bos_token_id) < 0.05


def test_distillation_raises_heldout_alpha(tiny, tmp_path: Path) -> None:
    prompts = [" ".join(t.split()[:6]) for t in sample_corpus(2)]
    train_prompts, held = prompts[:16], prompts[16:]
    teacher = load_trainable(tiny.target)
    teacher_file = tmp_path / "teacher.jsonl"
    make_teacher_data(
        teacher, tiny.tokenizer, train_prompts[:8], teacher_file, new_tokens=24, batch=8, top_k=8
    )
    make_teacher_data(teacher, tiny.tokenizer, train_prompts, teacher_file, new_tokens=24, batch=8, top_k=8)
    rows = load_teacher_rows(teacher_file)
    assert len(rows) == 16  # the second call resumed after the first 8 rows
    assert all(len(r["topk_ids"]) == len(r["ids"]) - 1 for r in rows)
    before = heldout_alpha(tiny.target, tiny.random_draft, held, k=3, max_tokens=24)
    draft = load_trainable(tiny.random_draft)
    cfg = TrainConfig(steps=60, batch=8, lr=1e-2, warmup=5, bf16=False)
    train_on_teacher(draft, rows, tiny.tokenizer.pad_token_id, cfg, tmp_path / "ckpt.pt")
    after_dir = export(draft, tiny.tokenizer, tmp_path / "distilled", dtype=torch.float32)
    after = heldout_alpha(tiny.target, after_dir, held, k=3, max_tokens=24)
    assert after > before + 0.2


def test_train_cli_builds_a_loadable_model(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "m"
    res = runner.invoke(
        app,
        [
            "train",
            "--corpus",
            str(corpus),
            "--out",
            str(out),
            "--preset",
            "draft-tiny",
            "--steps",
            "3",
            "--batch",
            "2",
            "--seq-len",
            "16",
            "--vocab-size",
            "300",
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    from specmeter.engine.loader import load_model

    loaded = load_model(out)
    assert loaded.info.dtype == "float32"  # CPU loads fp16 weights as float32
    assert json.loads((out / "config.json").read_text())["dtype"] == "float16"


def test_train_cli_with_copy_rows_reports_the_induction_probe(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "m"
    args = ["train", "--corpus", str(corpus), "--out", str(out), "--preset", "draft-tiny", "--steps", "2"]
    opts = [
        "--batch",
        "2",
        "--seq-len",
        "16",
        "--vocab-size",
        "300",
        "--copy-rows",
        "2",
        "--copy-warmup",
        "1",
    ]
    res = runner.invoke(app, [*args, *opts])
    assert res.exit_code == 0, res.output
    assert "of a repeated random string" in res.output and (out / "model.safetensors").is_file()


def test_train_cli_init_continues_from_a_model(tmp_path: Path, corpus: Path) -> None:
    """--init starts from a model's weights and tokenizer: its first steps' loss is the trained model's, well
    below a fresh model's on the same tokenizer, and the result keeps the shape and tokenizer."""
    small = ["--batch", "2", "--seq-len", "16"]

    def train(out: str, *args: str) -> float:
        base = ["train", "--corpus", str(corpus), "--out", str(tmp_path / out)]
        res = runner.invoke(app, [*base, *small, *args])
        assert res.exit_code == 0, res.output
        return float(re.search(r"final loss ([\d.]+)", res.output).group(1))  # type: ignore[union-attr]

    first = tmp_path / "first"
    train("first", "--preset", "draft-tiny", "--vocab-size", "300", "--lr", "1e-2", "--steps", "40")
    continued = train("continued", "--init", str(first), "--steps", "1")
    fresh = train("fresh", "--preset", "draft-tiny", "--tokenizer", str(first), "--steps", "1")
    assert continued < fresh - 0.5  # fresh starts near ln(300) ~ 5.7
    out = tmp_path / "continued"
    assert (
        json.loads((out / "config.json").read_text())["hidden_size"]
        == json.loads((first / "config.json").read_text())["hidden_size"]
    )
    assert (out / "tokenizer.json").read_bytes() == (first / "tokenizer.json").read_bytes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--init", "{tmp}/missing"], "no such directory"),
        (["--init", "{tmp}", "--layers", "2", "--tokenizer", "{tmp}"], "drop --tokenizer, --layers"),
        (["--preset", "huge"], "--preset"),
        (["--copy-rows", "-1"], "--copy-rows must be in [0, 64]"),
        (["--copy-warmup", "5"], "--copy-warmup must be in [0, 0]"),
        (["--copy-rows", "2", "--copy-warmup", "1000"], "--copy-warmup must be in [0, 999]"),
        (["--steps", "0"], "--steps must be >= 1"),
        (["--filter", "register"], "KEY=VALUE"),
    ],
)
def test_train_cli_errors(tmp_path: Path, corpus: Path, args: list[str], message: str) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = runner.invoke(app, ["train", "--corpus", str(corpus), "--out", str(tmp_path / "m"), *args])
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output


def test_train_cli_missing_corpus(tmp_path: Path) -> None:
    res = runner.invoke(
        app, ["train", "--corpus", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "m")]
    )
    assert res.exit_code == 2 and "no such file" in res.output


def test_distill_cli_errors(tiny, tmp_path: Path, corpus: Path) -> None:
    base = ["distill", "--target", str(tiny.target), "--corpus", str(corpus), "--out", str(tmp_path / "d")]
    res = runner.invoke(app, base)
    assert res.exit_code == 2 and "exactly one of --init" in res.output
    res = runner.invoke(app, [*base, "--init", str(tmp_path / "missing")])
    assert res.exit_code == 2 and "no such directory" in res.output
    res = runner.invoke(app, [*base, "--preset", "draft-tiny", "--heldout", "500"])
    assert res.exit_code == 2 and "need more than --heldout" in res.output


@pytest.mark.parametrize("command", ["train", "distill"])
def test_a_corpus_that_is_not_utf8_is_one_line(tiny, tmp_path: Path, command: str) -> None:
    # Issue 12: a Latin-1 corpus ended train with a UnicodeDecodeError traceback.
    corpus = tmp_path / "latin1.jsonl"
    corpus.write_bytes('{"text": "fine"}\n{"text": "caf\u00e9 cr\u00e8me"}\n'.encode("latin-1"))
    with pytest.raises(CorpusError, match=r"latin1.jsonl:2: not valid UTF-8 \(byte 0xe9 at column 14\)"):
        read_documents(corpus)
    args = ["train", "--corpus", str(corpus), "--out", str(tmp_path / "m")]
    if command == "distill":
        args = ["distill", "--target", str(tiny.target), "--preset", "draft-tiny", "--corpus", str(corpus),
                "--out", str(tmp_path / "m")]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert res.stderr.strip().splitlines() == [
        f"error: {corpus}:2: not valid UTF-8 (byte 0xe9 at column 14); convert the corpus to UTF-8 "
        "(iconv -f ENCODING -t UTF-8)"
    ]


def test_distill_refuses_what_compat_refuses(tiny, tmp_path: Path, corpus: Path) -> None:
    # Issue 12: distill with an unloadable target ended with an uncaught ModelLoadError, and with a draft
    # of another vocabulary with an IndexError mid-training. Both are one line before any work now.
    import shutil

    broken = tmp_path / "target"
    shutil.copytree(tiny.target, broken)
    weights = broken / "model.safetensors"
    size = weights.stat().st_size
    with weights.open("r+b") as fh:
        fh.truncate(size // 2)
    out = tmp_path / "d"
    base = ["distill", "--corpus", str(corpus), "--out", str(out), "--steps", "1"]
    res = runner.invoke(app, [*base, "--target", str(broken), "--preset", "draft-tiny"])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    assert res.stderr.strip().splitlines() == [
        f"error: {weights}: truncated safetensors file ({size // 2:,} bytes; its header describes {size:,})"
    ]
    res = runner.invoke(app, [*base, "--target", str(tiny.target), "--init", str(tiny.other_tokenizer_draft)])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: --init {tiny.other_tokenizer_draft} cannot be a draft"
    )
    assert "vocabularies differ" in lines[0] and lines[0].endswith("(specmeter compat shows every check)")
    assert not out.exists() and not (tmp_path / "d.work").exists()
