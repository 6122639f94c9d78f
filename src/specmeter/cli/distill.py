"""``specmeter distill``: make a domain draft for any Llama-family target (candidate C of the field report).

Teacher data from the target on domain prompts, token-level KL training, held-out α before and after.
Every stage resumes after an interruption: teacher rows are appended as made, training checkpoints.
"""

from __future__ import annotations

from pathlib import Path

import typer

from specmeter.cli.common import check_range, check_training, console, fail, training_progress


def distill(
    target: Path = typer.Option(..., "--target", help="Target model directory."),
    method: str = typer.Option(
        "draft",
        "--method",
        help="draft: a draft model (--init or --preset); eagle: an EAGLE-3 head on the target's hidden "
        "states (speculators format; run it as eagle:head=OUT).",
    ),
    head_intermediate: int | None = typer.Option(
        None, "--head-intermediate", help="--method eagle: the head's MLP width (default: the target's)."
    ),
    init: Path | None = typer.Option(None, "--init", help="Initial draft directory (e.g. a general draft)."),
    preset: str | None = typer.Option(None, help="Or start from a fresh shape: draft-general or draft-tiny."),
    corpus: Path = typer.Option(
        ..., "--corpus", help="Domain prompts: JSONL with 'prompt' or 'text' fields."
    ),
    out: Path = typer.Option(..., "--out", help="Output draft directory."),
    num_prompts: int = typer.Option(1500, "--num-prompts", help="Prompts the target continues for training."),
    heldout: int = typer.Option(24, help="Prompts kept apart to measure α before/after."),
    new_tokens: int = typer.Option(64, "--new-tokens", help="Tokens the target generates per prompt."),
    steps: int = typer.Option(600, help="Optimizer steps."),
    batch: int = typer.Option(16, help="Sequences per step."),
    lr: float = typer.Option(5e-4, help="Peak learning rate."),
    k: int = typer.Option(4, help="Draft length used to measure α."),
    seed: int = typer.Option(0, help="Seed for prompt cuts, data order and initialisation."),
    device: str = typer.Option("auto", help="auto, cpu or cuda."),
    work: Path | None = typer.Option(None, help="Working directory (default: OUT.work)."),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Distil a draft from TARGET on domain prompts; reports held-out draft acceptance before and after."""
    import torch

    from specmeter.engine.loader import load_tokenizer, resolve_device
    from specmeter.modeldir import ModelDirError, inspect_model
    from specmeter.selection.compat import check_compat
    from specmeter.training.data import CorpusError
    from specmeter.training.distill import (
        heldout_alpha,
        load_teacher_rows,
        make_teacher_data,
        read_prompts,
        train_on_teacher,
    )
    from specmeter.training.loop import TrainConfig
    from specmeter.training.models import PRESETS, build_model, export, load_trainable

    if method not in ("draft", "eagle"):
        fail(f"--method: {method!r} is not one of draft, eagle")
    if method == "eagle":
        if init is not None or preset is not None:
            fail("--method eagle trains a head from the target: --init and --preset do not apply")
        _distill_eagle(target, corpus, out, work, num_prompts, heldout, new_tokens, steps, batch, lr, k, seed,
                       head_intermediate, quiet)  # fmt: skip
        return
    if head_intermediate is not None:
        fail("--head-intermediate applies to --method eagle only")
    if (init is None) == (preset is None):
        fail("give exactly one of --init DIR or --preset NAME")
    if preset is not None and preset not in PRESETS:
        fail(f"--preset: {preset!r} is not one of {', '.join(PRESETS)}")
    for name, value in (
        ("--num-prompts", num_prompts), ("--steps", steps), ("--batch", batch), ("--k", k),
        ("--new-tokens", new_tokens),
    ):  # fmt: skip
        if value < 1:
            fail(f"{name} must be >= 1")
    check_range("--heldout", heldout, low=0)
    work = check_training(lr, seed, out, work, {"--target": target, "--init": init, "--corpus": corpus})
    try:
        dev = resolve_device(device)
        # Config, tokenizer and weight headers (file sizes included) of both, before any work; the draft
        # through the same checks as `specmeter compat`: its token ids must mean the target's tokens.
        target_facts = inspect_model(target)
        tok = load_tokenizer(target)
        if init is not None:
            report = check_compat(target_facts, inspect_model(init))
            if report.verdict == "incompatible":
                why = "; ".join(f.message for f in report.findings if f.level == "incompatible")
                fail(f"--init {init} cannot be a draft of --target {target}: {why} (specmeter compat shows "
                     "every check)")  # fmt: skip
        prompts = read_prompts(corpus, seed=seed)
    except (ModelDirError, CorpusError) as e:
        fail(str(e))
    if len(prompts) <= heldout:
        fail(f"{corpus}: {len(prompts)} prompts; need more than --heldout {heldout}")
    work.mkdir(parents=True, exist_ok=True)
    held, train_prompts = prompts[-heldout:], prompts[:-heldout][:num_prompts]

    try:
        if init is not None:
            draft = load_trainable(init).to(dev)
            before_dir = init
        else:
            draft = build_model(PRESETS[preset or ""], tok, seed).to(dev)
            before_dir = export(draft, tok, work / "init")
        alpha_before = heldout_alpha(target, before_dir, held, k=k) if heldout else float("nan")

        teacher_file = work / "teacher.jsonl"
        with training_progress(len(train_prompts), "teacher", quiet) as progress:
            task = progress.add_task("teacher data", total=len(train_prompts), loss="—", eval="—")
            done = sum(1 for _ in teacher_file.open(encoding="utf-8")) if teacher_file.is_file() else 0
            progress.update(task, completed=done)
            teacher = load_trainable(target).to(dev)
            with torch.inference_mode():
                make_teacher_data(teacher, tok, train_prompts, teacher_file, new_tokens=new_tokens,
                                  on_batch=lambda n: progress.advance(task, n))  # fmt: skip
            del teacher
        rows = load_teacher_rows(teacher_file)[: len(train_prompts)]
        cfg = TrainConfig(steps=steps, batch=batch, lr=lr, seed=seed, warmup=min(50, steps // 10 + 1))
        with training_progress(steps, "distill", quiet) as progress:
            task = progress.add_task("distill", total=steps, loss="—", eval="—")
            train_on_teacher(
                draft, rows, tok.pad_token_id, cfg, work / "checkpoint.pt",
                on_step=lambda s, loss, ev: progress.update(task, completed=s, loss=f"{loss:.3f}"),
            )  # fmt: skip
        export(draft, tok, out)
        alpha_after = heldout_alpha(target, out, held, k=k) if heldout else float("nan")
    except ModelDirError as e:  # weights that pass the header checks and still cannot be loaded
        fail(str(e))
    console.print(
        f"saved {out}: held-out draft acceptance rate α (greedy, k={k}, {len(held)} prompts) "
        f"{alpha_before:.3f} → [bold]{alpha_after:.3f}[/]"
    )


def _distill_eagle(
    target: Path, corpus: Path, out: Path, work: Path | None, num_prompts: int, heldout: int, new_tokens: int,
    steps: int, batch: int, lr: float, k: int, seed: int, intermediate: int | None, quiet: bool,
) -> None:  # fmt: skip
    """``--method eagle``: an EAGLE-3 head trained from TARGET (training.eagle), held-out α after."""
    from specmeter.modeldir import ModelDirError, inspect_model
    from specmeter.training.data import CorpusError
    from specmeter.training.distill import read_prompts
    from specmeter.training.eagle import distill_eagle
    from specmeter.training.loop import TrainConfig

    for name, value in (
        ("--num-prompts", num_prompts), ("--steps", steps), ("--batch", batch), ("--k", k),
        ("--new-tokens", new_tokens), ("--head-intermediate", intermediate or 1),
    ):  # fmt: skip
        if value < 1:
            fail(f"{name} must be >= 1")
    check_range("--heldout", heldout, low=0)
    work = check_training(lr, seed, out, work, {"--target": target, "--corpus": corpus})
    try:
        facts = inspect_model(target)
        if facts.model_type not in ("llama", "mistral", "qwen2", "qwen3"):
            fail(f"--target {target}: an EAGLE head needs a Llama-family target on the native engine "
                 f"(model_type {facts.model_type!r})")  # fmt: skip
        prompts = read_prompts(corpus, seed=seed)
    except (ModelDirError, CorpusError) as e:
        fail(str(e))
    if len(prompts) <= heldout:
        fail(f"{corpus}: {len(prompts)} prompts; need more than --heldout {heldout}")
    held, train_prompts = (
        prompts[-heldout:] if heldout else [],
        prompts[: len(prompts) - heldout][:num_prompts],
    )
    cfg = TrainConfig(
        steps=steps, batch=batch, lr=lr, seed=seed, warmup=min(50, steps // 10 + 1), seq_len=256
    )
    try:
        with training_progress(steps, "eagle", quiet) as progress:
            seq_task = progress.add_task("teacher sequences", total=len(train_prompts), loss="—", eval="—")
            task = progress.add_task("eagle head", total=steps, loss="—", eval="—")
            result = distill_eagle(
                target, train_prompts, held, out, work, cfg, new_tokens=new_tokens, intermediate=intermediate,
                k=k, on_sequences=lambda n, _total: progress.advance(seq_task, n),
                on_step=lambda s, loss, ev: progress.update(task, completed=s, loss=f"{loss:.3f}"),
            )  # fmt: skip
    except ModelDirError as e:
        fail(str(e))
    console.print(
        f"saved {out}: EAGLE-3 head, {result.params:,} parameters of its own, "
        f"{result.file_bytes / 1e6:.1f} MB; "
        f"trained in {result.train_s:.0f} s (teacher sequences {result.sequences_s:.0f} s); held-out draft "
        f"acceptance rate α (greedy, k={k}, {len(held)} prompts) [bold]{result.alpha:.3f}[/]; run it as "
        f"eagle:head={out}"
    )
