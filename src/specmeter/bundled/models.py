"""The bundled demo models shipped under ``specmeter/assets/models`` (built by ``make models``)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

TARGET = "target"
DRAFTS = ("draft-general", "draft-tiny", "draft-legal")
# EAGLE-style heads on the target (``eagle:head=bundled:eagle-legal``; docs/methods.md), built by
# ``make models-legal``.
HEADS = ("eagle-legal",)
# The field report's candidates: A (general, mid-size), B (general, tiny), C (distilled on legal text).
CANDIDATE_LETTER = {"draft-general": "A", "draft-tiny": "B", "draft-legal": "C"}


def models_dir() -> Path:
    directory = files("specmeter").joinpath("assets/models")
    if not isinstance(directory, Path):
        raise RuntimeError(f"specmeter's bundled models are not on the file system ({directory!s})")
    return directory


def bundled_model(name: str, root: Path | None = None) -> Path:
    return (root or models_dir()) / name


def missing_models(root: Path | None = None) -> list[str]:
    """Bundled models whose directory lacks a config or weights (e.g. a checkout without them)."""
    return [
        name
        for name in (TARGET, *DRAFTS)
        if not (bundled_model(name, root) / "config.json").is_file()
        or not any(bundled_model(name, root).glob("*.safetensors"))
    ]
