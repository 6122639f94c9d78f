"""A hand-made replay log for the ``--ray`` tests (default suite and ``make test-ray``): greedy responses in
token ids that reuse phrases across requests, so suffix decoding's cache (which learns across requests) and
the n-gram methods (which look within one) both accept something, differently per request."""

from __future__ import annotations

import json
import random
from pathlib import Path

# Phrases of ids that decode with the tiny target's tokenizer (tests/conftest.py's `tiny`).
PHRASES = ([5, 6, 7, 8, 9], [10, 11, 12], [13, 14, 15, 16], [17, 18], [19, 20, 21, 22, 23], [24, 25, 26])


def write_log(path: Path, n: int = 24, seed: int = 0, model: str = "target") -> Path:
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        out: list[int] = []
        while len(out) < 14 + i % 9:
            out.extend(rng.choice(PHRASES))
        lines.append(
            {
                "id": f"r{i}",
                "domain": ("legal", "general", "code")[i % 3],
                "temperature": 0.0,
                "model": model,
                "prompt_ids": [1, 2, 3, 4 + i % 3],
                "output_ids": out,
                "finish_reason": "length",
                "max_tokens": len(out),
            }
        )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path
