"""The measuring core as a library: no CLI, no exits; MeasureError for user problems, else an Outcome.

Runs on the session's tiny checkpoints with 6-token outputs, so the file takes seconds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from specmeter.measuring import EXIT_INTERRUPTED, EXIT_OK, MeasureConfig, MeasureError, Silent
from specmeter.measuring.bench_run import run_bench
from specmeter.measuring.run import close, run_candidates
from specmeter.store import RunStore

PROMPTS = [
    {"id": "a", "category": "legal", "prompt": "The Supplier shall indemnify the Customer against"},
    {"id": "b", "category": "general", "prompt": "The children played in the garden until"},
]


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    return path


def cfg(tiny: Any, prompts: Path, **fields: Any) -> MeasureConfig:
    base = {"target": tiny.target, "drafts": [tiny.draft], "prompts": prompts, "k": [2], "max_tokens": 6,
            "cost_repeats": 1, "store": None}  # fmt: skip
    return MeasureConfig(**{**base, **fields})


def test_a_bench_from_a_library_caller(tiny: Any, prompts: Path, tmp_path: Path) -> None:
    reporter = Silent()
    store, out = tmp_path / "runs.sqlite", tmp_path / "r.json"
    outcome = run_bench(cfg(tiny, prompts, store=store, json_out=out), reporter)
    assert outcome.exit_code == EXIT_OK
    assert outcome.result["complete"] is True and json.loads(out.read_text()) == outcome.result
    assert [(c["draft"], c["k"]) for c in outcome.result["candidates"]] == [("draft", 2)]
    assert reporter.notes == [f"Recorded as run 1 in {store}"] and _not_machine(reporter.warnings) == []
    with RunStore(store) as db:
        assert db.list_runs()[0].status == "complete"
        assert {r.slot for r in db.requests(1)} == {"baseline", "draft@k=2"}


def test_rendering_is_the_callers(tiny: Any, prompts: Path) -> None:
    seen: list[dict[str, Any]] = []
    outcome = run_bench(cfg(tiny, prompts), Silent(), render=seen.append)
    assert seen == [outcome.result]


def _not_a_store(tmp: Path) -> Path:
    path = tmp / "notes.sqlite"
    path.write_text("not SQLite")
    return path


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda t, tmp: {"target": tmp / "missing"}, "no such directory"),
        (lambda t, tmp: {"drafts": [t.other_tokenizer_draft]}, "its tokenizer differs from the target's"),
        (lambda t, tmp: {"store": _not_a_store(tmp)}, "--store: "),
    ],
    ids=["missing-target", "tokenizer", "store"],
)
def test_user_problems_raise_measure_error(
    tiny: Any, prompts: Path, tmp_path: Path, change: Any, needle: str
) -> None:
    with pytest.raises(MeasureError) as e:
        run_candidates(cfg(tiny, prompts, **change(tiny, tmp_path)), Silent())
    assert needle in str(e.value)


def test_every_bad_prompt_is_one_line(tiny: Any, tmp_path: Path) -> None:
    long = " ".join(["The Supplier shall indemnify the Customer"] * 300)
    path = tmp_path / "long.jsonl"
    rows = [PROMPTS[0], {"id": "x", "prompt": long}, {"id": "y", "prompt": long}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(MeasureError) as e:
        run_candidates(cfg(tiny, path), Silent())
    assert [line.split(": ")[0] for line in e.value.lines] == [f"{path}:2", f"{path}:3"]


def test_interrupted_run_closes_partial_with_130(
    tiny: Any, prompts: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from specmeter.engine import runner

    real = runner.run_interleaved

    def one_prompt_then_ctrl_c(state: Any, prompts: Any, **kw: Any) -> None:
        real(state, prompts[:1], **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_interleaved", one_prompt_then_ctrl_c)
    reporter = Silent()
    m = run_candidates(cfg(tiny, prompts, store=tmp_path / "s.sqlite"), reporter)
    assert m.interrupted and len(m.records()["baseline"]) == 1
    outcome = close(m)
    assert outcome.exit_code == EXIT_INTERRUPTED and outcome.result["complete"] is False
    assert _not_machine(reporter.warnings) == [
        "Interrupted after 1 of 2 prompts; everything finished so far is on disk."
    ]
    with RunStore(tmp_path / "s.sqlite") as db:
        assert db.list_runs()[0].status == "partial"


def test_close_stores_the_section_under_the_kind(tiny: Any, prompts: Path) -> None:
    m = run_candidates(cfg(tiny, prompts, kind="select"), Silent())
    assert close(m, {"ranking": []}).result["select"] == {"ranking": []}


def test_a_model_dir_copy_keeps_its_own_name(tiny: Any, prompts: Path, tmp_path: Path) -> None:
    # Two drafts with one directory name are labelled by path, so their results never merge.
    twin = tmp_path / "other" / "draft"
    shutil.copytree(tiny.draft, twin)
    m = run_candidates(cfg(tiny, prompts, drafts=[tiny.draft, twin], limit=1), Silent())
    assert sorted(m.records()) == sorted(["baseline", f"{tiny.draft}@k=2", f"{twin}@k=2"])


def _not_machine(warnings: list[str]) -> list[str]:
    """Warnings other than a busy machine's line (other jobs on a shared development machine)."""
    return [w for w in warnings if not w.startswith("MACHINE ")]
