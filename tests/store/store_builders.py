"""Synthetic runs for the store tests: request records drawn from a known acceptance process.

A uniquely named module (not conftest.py) so tests import it without clashing with other folders.
Each request drafts k tokens per step; each drafted token is accepted with probability ``beta`` until
the first rejection (the Leviathan model), so α, β and τ have known expectations. Times are simple:
a step costs ``step_s``, so a worse draft is also slower.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from specmeter.metrics.records import Emission, ModelInfo, RequestRecord, RunRecord, StepRecord
from specmeter.metrics.summary import summarize, summarize_by_category
from specmeter.report.files import ResultFile

TARGET = ModelInfo("target", "/m/target", "LlamaForCausalLM", 1000, 2000, 64, "bfloat16", 2, 1, 16)
DRAFT = ModelInfo("draft", "/m/draft", "LlamaForCausalLM", 100, 200, 16, "bfloat16", 1, 1, 8)

Row = tuple[str, str | None, int, RequestRecord]


def spec_request(
    rng: np.random.Generator, rid: str, category: str, *, k: int, beta: float, tokens: int = 40,
    step_s: float = 0.010, ttft_s: float = 0.020,
) -> RequestRecord:  # fmt: skip
    steps: list[StepRecord] = []
    emissions = [Emission(ttft_s, 1)]
    emitted, t = 1, ttft_s
    while emitted < tokens:
        a = 0
        while a < k and rng.random() < beta:
            a += 1
        n = min(a + 1, tokens - emitted)
        steps.append(StepRecord(k, a, n, draft_s=0.001 * k, verify_s=step_s, draft_forwards=k))
        t += step_s * (1.0 + 0.3 * rng.random())
        emissions.append(Emission(t, n))
        emitted += n
    return RequestRecord(rid, category, 12, emitted, t, ttft_s, ttft_s, tuple(steps), tuple(emissions))


def baseline_request(
    rng: np.random.Generator, rid: str, category: str, *, tokens: int = 40, step_s: float = 0.008
) -> RequestRecord:
    t = 0.02
    steps = [StepRecord(0, 0, 1, 0.0, step_s) for _ in range(tokens - 1)]
    emissions = [Emission(t, 1)]
    for _ in range(tokens - 1):
        t += step_s * (1.0 + 0.3 * rng.random())
        emissions.append(Emission(t, 1))
    return RequestRecord(rid, category, 12, tokens, t, 0.02, 0.02, tuple(steps), tuple(emissions))


def make_rows(
    seed: int, *, n: int = 24, k: int = 4, beta: float | dict[str, float] = 0.8,
    categories: Sequence[str] = ("general", "legal"), draft: str = "draft",
) -> list[Row]:  # fmt: skip
    """Baseline and one candidate over ``n`` prompts (ids p0..), alternating categories."""
    rng = np.random.default_rng(seed)
    rows: list[Row] = []
    for i in range(n):
        cat = categories[i % len(categories)]
        b = beta[cat] if isinstance(beta, dict) else beta
        rows.append(("baseline", None, 0, baseline_request(rng, f"p{i}", cat)))
        rows.append((f"{draft}@k={k}", draft, k, spec_request(rng, f"p{i}", cat, k=k, beta=b)))
    return rows


def make_result(rows: Sequence[Row], *, complete: bool = True) -> dict[str, Any]:
    """The docs/results.md dict of ``rows``, summarised by the real metrics code."""
    base = RunRecord(TARGET, None, 0, 0.0, 1.0, tuple(r for s, _, _, r in rows if s == "baseline"))
    result = ResultFile(None, kind="bench", config={"target": "/m/target", "drafts": ["/m/draft"], "k": [4]})
    draft_info = {name: DRAFT if name == "draft" else DRAFT.__class__(**{**DRAFT.__dict__, "name": name})
                  for name in {d for _, d, _, _ in rows if d is not None}}  # fmt: skip
    result.set_models(TARGET, draft_info)
    result.set_baseline(summarize(base, None), summarize_by_category(base, None))
    for slot, name, k in dict.fromkeys((s, d, k) for s, d, k, _ in rows if d is not None):
        run = RunRecord(TARGET, draft_info[name], k, 0.0, 1.0, tuple(r for s, _, _, r in rows if s == slot))
        result.add_candidate(name, k, summarize(run, base), summarize_by_category(run, base))
    if complete:
        result.finish()
    return result.to_dict()


def integrity_ok(path: Path) -> bool:
    """SQLite's own check of the whole store file, on a connection of its own (what a later reader sees)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return bool(conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok")
