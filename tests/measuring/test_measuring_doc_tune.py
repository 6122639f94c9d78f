"""Every ``specmeter tune`` line in README.md and docs/ asks for options ``tune`` accepts together.

README once showed ``tune … [--k 1,2,4,8] [--holdout 3]``: each option alone works, together they are
refused (the held-out k must be one of the k run). Options in brackets are optional, so a reader may give
them all: every literal ``--k``, ``--k-max`` and ``--holdout`` of one line must pass ``resolve_ks``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specmeter.measuring.config import TUNE_K_MAX
from specmeter.measuring.tune_run import resolve_ks

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _lines() -> list[tuple[str, str]]:
    found = []
    for path in DOCS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if "specmeter tune" in line and re.search(r"--(k|k-max|holdout) \d", line):
                found.append((f"{path.name}:{number}", line))
    return found


LINES = _lines()


def test_the_docs_show_tune_with_k_and_holdout() -> None:
    assert any("--holdout" in line and "--k " in line for _, line in LINES)


@pytest.mark.parametrize(("where", "line"), LINES, ids=[w for w, _ in LINES])
def test_documented_tune_options_work_together(where: str, line: str) -> None:
    def value(option: str) -> str | None:
        match = re.search(rf"{option} ([0-9,]+)", line)
        return match.group(1) if match else None

    k_max = int(value("--k-max") or TUNE_K_MAX)
    ks = value("--k")
    holdout = value("--holdout")
    resolve_ks(
        k_max,
        None if ks is None else [int(k) for k in ks.split(",")],
        None if holdout is None else int(holdout),
    )
