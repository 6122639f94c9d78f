"""Replay results made by running ``specmeter replay`` on a small hand-made log (a uniquely named module: the
test dirs have no __init__.py), for the commands that read one: ``select --from``, ``whatif``/``roi
--alpha-from``. Nothing here is a stored result: every figure comes from the replay."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from specmeter.cli.app import app

# legal: a response that repeats itself (n-gram methods and suffix decoding find it); general: a seeded
# random walk over a small alphabet (they find little). Ids are within the tiny tokenizer's vocabulary.
LEGAL = [5, 6, 7, 8, 9] * 5 + [10, 11]


def write_log(path: Path, n: int = 16, seed: int = 0) -> Path:
    """``serve --log-output`` lines with a ``domain``: half legal, half general, greedy."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        legal = i % 2 == 1
        length = 14 + i % 9
        output = LEGAL[i % 3 : i % 3 + length] if legal else [rng.randrange(5, 40) for _ in range(length)]
        lines.append({
            "id": f"r{i}", "domain": "legal" if legal else "general", "temperature": 0.0, "model": "target",
            "prompt_ids": [1, 2, 3, 4 + i % 3], "output_ids": output, "finish_reason": "length",
            "max_tokens": len(output), "accepted_tokens": 0,
        })  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def replay_result(
    target: Path, tmp_path: Path, *, methods: tuple[str, ...] = ("ngram:min=2,max=3", "suffix"),
    ks: str = "2,4", name: str = "replay.json", n: int = 16,
) -> Path:  # fmt: skip
    """Run replay on :func:`write_log`'s log of ``n`` requests (categories from ``domain``); the result
    file's path."""
    log = write_log(tmp_path / "serve.jsonl", n=n)
    out = tmp_path / name
    args = ["replay", "--from", str(log), "--target", str(target), "--k", ks, "--category-field", "domain"]
    for m in methods:
        args += ["--method", m]
    result = CliRunner().invoke(app, [*args, "--json", str(out), "--no-store", "--quiet"])
    assert result.exit_code == 0, result.output
    return out


def read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data
