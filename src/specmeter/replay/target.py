"""The target directory's part in a replay: its tokenizer and EOS ids; its weights when a method needs them.

Model-free methods need the tokenizer only (a directory with just the tokenizer files will do). A draft
model directory, ``layers:n`` and ``eagle:head=DIR`` need the engine: the target loads (for ``layers:n``,
whose draft is the target's own first layers; for a draft, to check the tokenizers match; for an EAGLE
head, whose drafts read the target's hidden states: the target then runs the live loop's forwards over the
logged tokens, ``engine.speculative.KnownContinuation``), and each proposer forwards over the logged
tokens. The engine imports torch; it is imported only here, and only then.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from specmeter.methods import DraftDir, MethodSpec
from specmeter.modeldir import ModelDirError, ModelShape, eos_ids, read_model_config
from specmeter.replay.config import ReplayConfig, ReplayError
from specmeter.replay.proposers import EngineProposer, ReplayProposer
from specmeter.replay.tokens import TokenChecks

__all__ = ["engine_proposers", "open_checks"]


def open_checks(cfg: ReplayConfig) -> TokenChecks:
    """The tokenizer of ``--target`` and what every request is checked against."""
    from specmeter.engine.loader import load_tokenizer

    try:
        tokenizer = load_tokenizer(cfg.target)
    except ModelDirError as e:
        raise ReplayError(f"--target: {e}") from None
    config: dict[str, Any] = {}
    if (cfg.target / "config.json").is_file():
        try:
            config = read_model_config(cfg.target)
        except ModelDirError as e:
            raise ReplayError(f"--target: {e}") from None
    eos = eos_ids(cfg.target, config, tokenizer)
    vocab = max(len(tokenizer), int(config.get("vocab_size") or 0))
    context = None
    if cfg.needs_model:  # the model's embedding rows and context bound what it can be fed
        shape = ModelShape.of(config)
        vocab = shape.embedding_rows or vocab
        context = _context(cfg, shape.max_positions)
    return TokenChecks(tokenizer, eos, cfg.model_name, vocab, max(cfg.ks), context)


def _context(cfg: ReplayConfig, target: int | None) -> int | None:
    """The longest sequence every model of the replay holds: the target's context, and each draft
    directory's (a draft forwards over the same tokens)."""
    limits = [target] if target else []
    for parsed in cfg.parsed:
        if isinstance(parsed, DraftDir):
            try:
                draft = ModelShape.of(read_model_config(Path(parsed.path))).max_positions
            except ModelDirError as e:
                raise ReplayError(f"--method: {e}") from None
            if draft:
                limits.append(draft)
    return min(limits) if limits else None


def engine_proposers(cfg: ReplayConfig) -> Callable[[MethodSpec | DraftDir], ReplayProposer] | None:
    """A builder of engine proposers (draft directories, ``layers:n``, EAGLE heads) when a method needs one,
    else None.
    The target loads once, on the CPU unless CUDA is there."""
    if not cfg.needs_model:
        return None
    from specmeter.engine.loader import load_model
    from specmeter.engine.proposers.candidate import MethodNotRunnable, make_proposer
    from specmeter.engine.speculative import KnownContinuation

    try:
        target = load_model(cfg.target)
    except ModelDirError as e:
        raise ReplayError(f"--target: {e}") from None
    capacity = int(getattr(target.model, "max_positions", 0) or 1 << 16)

    def build(parsed: MethodSpec | DraftDir) -> ReplayProposer:
        try:
            proposer = make_proposer(parsed if isinstance(parsed, MethodSpec) else parsed.path, target)
        except (MethodNotRunnable, ModelDirError) as e:
            raise ReplayError(f"--method: {e}") from None
        return EngineProposer(KnownContinuation(proposer, target.model), str(proposer.name), lambda: capacity)

    return build
