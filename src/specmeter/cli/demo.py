"""``specmeter demo``: a bench on two tiny models the command builds on the fly.

Provisional: the bundled, trained target and drafts (general and legal) replace these random models in a
later release. The target is a random Llama whose token embeddings dominate the residual stream; the draft
keeps its embeddings, head and two of its eight layers, so it agrees with the target often — enough to show
every number specmeter reports, including how far the speedup models are from the measured one.
"""

from __future__ import annotations

from pathlib import Path

import typer

from specmeter.cli.common import console


def build_demo_models(root: Path) -> tuple[Path, Path]:
    """Build (once) the demo target and draft under ``root``; returns their directories."""
    import transformers

    from specmeter.engine.tiny import TinyConfig, build_layer_skip_draft, build_random_llama, build_tokenizer

    target, draft = root / "target", root / "draft-layerskip"
    if (target / "config.json").is_file() and (draft / "config.json").is_file():
        return target, draft
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    tok = build_tokenizer(root / "tokenizer", vocab_size=1024)
    cfg = TinyConfig(
        hidden=256, layers=8, heads=8, kv_heads=4, intermediate=688, init_std=0.05, embed_scale=300
    )
    build_random_llama(target, tok, cfg, seed=0)
    build_layer_skip_draft(target, draft, [0, 7])
    return target, draft


def demo(
    out: Path = typer.Option(Path("specmeter-demo"), "--out", help="Directory for models and results."),
    quick: bool = typer.Option(False, "--quick", help="A smoke run: few prompts, short outputs."),
) -> None:
    """Build two tiny models and bench them on the bundled smoke prompts (greedy, k=4)."""
    from specmeter.cli.bench import BenchConfig, execute_bench
    from specmeter.workloads import bundled_prompts

    out.mkdir(parents=True, exist_ok=True)
    with console.status("building the demo models…", spinner="dots"):
        target, draft = build_demo_models(out / "models")
    cfg = BenchConfig(
        target=target,
        drafts=[draft],
        prompts=bundled_prompts("smoke"),
        k=[4],
        max_tokens=24 if quick else 96,
        limit=6 if quick else None,
        json_out=out / "result.json",
        csv_out=out / "requests.csv",
        log_out=out / "requests.jsonl",
        cost_repeats=5 if quick else 9,
        kind="demo",
    )
    execute_bench(cfg)
    console.print(f"\nResults written to [bold]{out}/[/] (result.json, requests.csv, requests.jsonl).")
