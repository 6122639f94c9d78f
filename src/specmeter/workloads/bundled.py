"""Golden sets shipped inside the package (``specmeter/assets/prompts/<name>.jsonl``).

``smoke`` is 24 short English text prompts, six in each of ``general/narration``,
``general/instructions``, ``legal/definitions`` and ``legal/obligations``; it exercises the whole
pipeline (and ``make demo``) without any user data.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

_PROMPTS_DIR = "assets/prompts"
_SUFFIX = ".jsonl"


def _prompts_dir() -> Path:
    # files() on the regular package "specmeter" (assets/ has no __init__.py); it is a real directory
    # for normal and editable installs, which is what callers need to hand a Path to load_workload.
    directory = files("specmeter").joinpath(_PROMPTS_DIR)
    if not isinstance(directory, Path):
        raise RuntimeError(f"specmeter's bundled prompts are not on the file system ({directory!s})")
    return directory


def bundled_prompt_names() -> tuple[str, ...]:
    """Names accepted by :func:`bundled_prompts`, sorted."""
    directory = _prompts_dir()
    if not directory.is_dir():
        return ()
    return tuple(sorted(p.name.removesuffix(_SUFFIX) for p in directory.glob(f"*{_SUFFIX}")))


def bundled_prompts(name: str = "smoke") -> Path:
    """Path of the bundled golden set ``name``; ``ValueError`` (listing the choices) if there is none."""
    names = bundled_prompt_names()
    # Checking against the listing (not just the file's existence) also rejects names like "../x".
    if name not in names:
        choices = ", ".join(names) or "none"
        raise ValueError(f"no bundled prompt set named {name!r} (available: {choices})")
    return _prompts_dir() / f"{name}{_SUFFIX}"
