"""The GPU catalogue ``plan`` fits models against: bundled (assets/gpus.json) or the user's own file."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from specmeter import jsonsafe

__all__ = ["Catalogue", "Gpu", "load_catalogue"]


class Gpu(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    memory_gib: float = Field(gt=0)
    bandwidth_gbps: float | None = Field(default=None, gt=0)  # peak, GB/s (10^9 bytes)

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * 2**30)


class Catalogue(BaseModel):
    model_config = ConfigDict(extra="forbid")

    note: str = ""
    gpus: list[Gpu] = Field(min_length=1)


def load_catalogue(path: Path | None = None) -> Catalogue:
    """The bundled catalogue, or ``path``; ValueError naming the file and field on a bad file."""
    where = str(path) if path is not None else "specmeter/assets/gpus.json"
    try:
        if path is None:
            text = resources.files("specmeter").joinpath("assets/gpus.json").read_text(encoding="utf-8")
        else:
            text = path.read_text(encoding="utf-8")
        data = jsonsafe.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}:{e.lineno}: invalid JSON ({e.msg})") from e
    except OSError as e:
        raise ValueError(f"{where}: unreadable ({e})") from e
    try:
        catalogue = Catalogue.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{where}: {loc}: {first['msg']}") from e
    # Smallest first, so "the smallest card that fits" is the first that fits.
    catalogue.gpus.sort(key=lambda g: g.memory_gib)
    return catalogue
