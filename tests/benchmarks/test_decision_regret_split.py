"""decision_regret.py's halves: two samples of the same traffic mix (every sub-category equally in both)."""

from __future__ import annotations

import collections
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location(
        "decision_regret", ROOT / "benchmarks" / "decision_regret.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_halves_hold_every_sub_category_alike_and_share_no_prompt() -> None:
    stratified = _module().stratified
    path = ROOT / "src" / "specmeter" / "assets" / "golden" / "legal.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    categories = {r["category"] for r in rows}
    a, b = stratified(rows, 0)[:44], stratified(rows, 1)[:44]  # the benchmark's default half
    assert not {r["id"] for r in a} & {r["id"] for r in b}
    low, high = 44 // len(categories), -(-44 // len(categories))  # ⌊n / c⌋ and ⌈n / c⌉
    for half in (a, b):
        counts = collections.Counter(r["category"] for r in half)
        assert set(counts) == categories and set(counts.values()) <= {low, high}
        assert sum(counts.values()) == 44
    # Within a sub-category the halves alternate: its 1st prompt in A, its 2nd in B.
    first = next(r for r in rows if r["category"] == "legal/redline")
    second = [r for r in rows if r["category"] == "legal/redline"][1]
    assert first in stratified(rows, 0) and second in stratified(rows, 1)


def test_an_uneven_mix_keeps_every_prompt_once() -> None:
    stratified = _module().stratified
    rows = [{"id": f"{c}{i}", "category": c} for c, n in (("x", 5), ("y", 2), ("z", 1)) for i in range(n)]
    a, b = stratified(rows, 0), stratified(rows, 1)
    # x: x0 x2 x4 | x1 x3; y: y0 | y1; z: z0 | —; A takes them in turn: [x0, y0, z0, x2, x4]
    assert [r["id"] for r in a] == ["x0", "y0", "z0", "x2", "x4"]
    assert [r["id"] for r in b] == ["x1", "y1", "x3"]
