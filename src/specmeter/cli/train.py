"""``specmeter train``: train a small Llama-family causal LM on a text/JSONL corpus.

Used to build the bundled demo's target and general drafts; works for any corpus. Resumable: the working
directory keeps a checkpoint, and rerunning the same command continues from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from specmeter.cli.common import check_range, check_training, console, fail, training_progress


def load_or_train_tokenizer(tokenizer_dir: Path | None, docs: list[str], vocab_size: int, out: Path) -> Any:
    if tokenizer_dir is not None:
        from specmeter.engine.loader import load_tokenizer
        from specmeter.modeldir import ModelDirError

        try:
            return load_tokenizer(tokenizer_dir)
        except ModelDirError as e:
            fail(str(e))
    from specmeter.training.tokenizer import build_tokenizer

    return build_tokenizer(out, docs, vocab_size=vocab_size)


def train(
    corpus: Path = typer.Option(
        ..., "--corpus", help="JSONL with a 'text' field per document, or plain text."
    ),
    out: Path = typer.Option(..., "--out", help="Output model directory (Hugging Face format)."),
    preset: str = typer.Option("draft-general", help="Shape preset: target, draft-general or draft-tiny."),
    hidden: int | None = typer.Option(None, help="Override the preset's hidden size."),
    layers: int | None = typer.Option(None, help="Override the preset's number of layers."),
    heads: int | None = typer.Option(None, help="Override the preset's attention heads."),
    kv_heads: int | None = typer.Option(None, "--kv-heads", help="Override the preset's KV heads."),
    intermediate: int | None = typer.Option(None, help="Override the preset's MLP width."),
    tokenizer: Path | None = typer.Option(None, help="Use this tokenizer directory (else train a BPE)."),
    init: Path | None = typer.Option(
        None,
        "--init",
        help="Start from this model directory, its weights, shape and tokenizer: continued training (e.g. "
        "on a corpus that weights a task up); --preset and the shape options do not apply.",
    ),
    vocab_size: int = typer.Option(2048, "--vocab-size", help="Vocabulary of a newly trained tokenizer."),
    where: str | None = typer.Option(None, "--filter", help="Only JSONL records with KEY=VALUE[,KEY=VALUE]."),
    steps: int = typer.Option(1000, help="Optimizer steps."),
    batch: int = typer.Option(16, help="Sequences per step."),
    seq_len: int = typer.Option(256, "--seq-len", help="Tokens per sequence."),
    lr: float = typer.Option(1e-3, help="Peak learning rate."),
    copy_rows: int = typer.Option(
        0,
        "--copy-rows",
        help="Rows of repeated random strings beside each batch, a curriculum for copying "
        "(an experiment: training/data.py); 0: none.",
    ),
    copy_warmup: int = typer.Option(
        0, "--copy-warmup", help="With --copy-rows: the first steps (of --steps) train on copy rows alone."
    ),
    seed: int = typer.Option(0, help="Seed for initialisation and data order."),
    device: str = typer.Option("auto", help="auto, cpu or cuda."),
    work: Path | None = typer.Option(None, help="Checkpoint directory (default: OUT.work)."),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Train a causal LM from a corpus; resumes from the checkpoint in the working directory."""
    from specmeter.engine.loader import resolve_device
    from specmeter.modeldir import ModelDirError, inspect_model
    from specmeter.training.data import CorpusError, parse_filter, read_documents, tokenize_corpus
    from specmeter.training.lm import induction_score, ordinary_ids, train_language_model
    from specmeter.training.loop import TrainConfig
    from specmeter.training.models import PRESETS, build_model, export, load_trainable, param_count

    if preset not in PRESETS:
        fail(f"--preset: {preset!r} is not one of {', '.join(PRESETS)}")
    for name, value in (
        ("--steps", steps), ("--batch", batch), ("--seq-len", seq_len), ("--hidden", hidden),
        ("--layers", layers), ("--heads", heads), ("--kv-heads", kv_heads), ("--intermediate", intermediate),
    ):  # fmt: skip
        if value is not None and value < 1:
            fail(f"{name} must be >= 1")
    check_range("--vocab-size", vocab_size, low=1)
    check_range("--copy-rows", copy_rows, low=0, high=batch * 4)
    check_range("--copy-warmup", copy_warmup, low=0, high=steps - 1 if copy_rows else 0)
    if init is not None:
        given = [name for name, value in (
            ("--tokenizer", tokenizer), ("--hidden", hidden), ("--layers", layers), ("--heads", heads),
            ("--kv-heads", kv_heads), ("--intermediate", intermediate),
        ) if value is not None]  # fmt: skip
        if given:
            fail(f"--init {init} brings its own shape and tokenizer: drop {', '.join(given)}")
    work = check_training(lr, seed, out, work, {"--corpus": corpus, "--tokenizer": tokenizer, "--init": init})
    try:
        dev = resolve_device(device)
        if init is not None:
            inspect_model(init)  # config, tokenizer and weight headers before any work: one line if bad
        docs = read_documents(corpus, parse_filter(where))
    except (CorpusError, ModelDirError) as e:
        fail(str(e))
    source = init if init is not None else tokenizer
    tok = load_or_train_tokenizer(source, docs, vocab_size, work / "tokenizer")
    tokens = tokenize_corpus(docs, tok)
    if init is not None:
        try:
            model = load_trainable(init).to(dev)
        except ModelDirError as e:
            fail(str(e))
        name = f"from {init}"
    else:
        shape = PRESETS[preset].with_overrides(
            hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, intermediate=intermediate
        )
        model = build_model(shape, tok, seed).to(dev)
        name = preset
    max_positions = int(model.config.max_position_embeddings)
    console.print(
        f"training {name} ({param_count(model) / 1e6:.2f}M params) on {len(docs):,} documents, "
        f"{tokens.train.numel():,} tokens; {steps} steps × {batch} × {seq_len}"
    )
    cfg = TrainConfig(
        steps=steps,
        batch=batch,
        seq_len=min(seq_len, max_positions - 1),
        lr=lr,
        seed=seed,
        copy_rows=copy_rows,
        copy_warmup=copy_warmup,
    )
    ordinary = ordinary_ids(tok)
    with training_progress(steps, "train", quiet) as progress:
        task = progress.add_task("train", total=steps, loss="—", eval="—")

        def on_step(step: int, loss: float, ev: float | None) -> None:
            progress.update(task, completed=step, loss=f"{loss:.3f}", eval="—" if ev is None else f"{ev:.3f}")

        try:
            result = train_language_model(
                model,
                tokens,
                cfg,
                work / "checkpoint.pt",
                on_step=on_step,
                ordinary=ordinary,
                bos=tok.bos_token_id,
            )
        except CorpusError as e:
            fail(str(e))
    export(model, tok, out)
    resumed = f" (resumed at step {result.resumed_from})" if result.resumed_from else ""
    ev = f"{result.eval_loss:.3f}" if result.eval_loss is not None else "—"
    copies = induction_score(model, ordinary, tok.bos_token_id)
    console.print(
        f"saved {out}{resumed}: final loss {result.last_loss:.3f}, held-out loss {ev}; "
        f"copies {copies:.1%} of a repeated random string (induction probe, training/lm.py)"
    )
