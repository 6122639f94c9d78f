"""Loading the target and the drafts of a native run, and the names that key their results.

A draft's name labels its results (``draft@k=4``) and keys its cost curve, so names must be unique: a draft
whose directory name repeats another's, or the target's, is named by its full path instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from specmeter.measuring.errors import MeasureError

if TYPE_CHECKING:
    from specmeter.engine.loader import LoadedModel
    from specmeter.measuring.config import MeasureConfig

__all__ = ["draft_names", "load_models", "tokenizer_refusal"]


def draft_names(target: Path, drafts: Sequence[Path]) -> list[str]:
    """One unique label per draft: its directory name, else its full path."""
    names = [d.name for d in drafts]
    unique = [names.count(n) == 1 and n != target.name for n in names]
    return [n if ok else str(p) for p, n, ok in zip(drafts, names, unique, strict=True)]


def tokenizer_refusal(path: Path, reason: str) -> MeasureError:
    return MeasureError(
        f"draft {path}: its tokenizer differs from the target's: {reason}; "
        "speculative decoding needs one tokenizer"
    )


def load_models(cfg: MeasureConfig) -> tuple[LoadedModel, list[LoadedModel]]:
    """Target and drafts on the configured device; every problem is a MeasureError naming the directory."""
    from specmeter.engine.loader import load_model, tokenizer_mismatch
    from specmeter.modeldir import ModelDirError

    def load(path: Path, name: str) -> LoadedModel:
        try:
            return load_model(
                path, name=name, dtype=cfg.dtype, device=cfg.device,
                implementation=cfg.implementation,  # type: ignore[arg-type]
                trust_remote_code=cfg.trust_remote_code,
            )  # fmt: skip
        except ModelDirError as e:
            raise MeasureError(str(e)) from None

    target = load(cfg.target, cfg.target.name)
    if cfg.standin is not None:
        from specmeter.engine.standin import StandInUnsupported, standin_draft

        try:
            return target, [standin_draft(target, cfg.standin)]
        except StandInUnsupported as e:
            raise MeasureError(f"--standin: {e}") from None
    drafts = []
    for path, name in zip(cfg.drafts, draft_names(cfg.target, cfg.drafts), strict=True):
        d = load(path, name)
        reason = tokenizer_mismatch(target.tokenizer, d.tokenizer)
        if reason:
            raise tokenizer_refusal(path, reason)
        drafts.append(d)
    return target, drafts
