"""Loading a run for compare/report/roi: store references, result files, and their one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store_builders import make_result, make_rows

from specmeter.store import RunStore, StoreError, is_run_ref, load_source


def test_run_references_and_file_paths_are_told_apart() -> None:
    for ref in ("12", "latest", "latest~3", " 7 "):
        assert is_run_ref(ref)
    for path in ("result.json", "./12", "runs/latest", "latest~x", "12.json"):
        assert not is_run_ref(path)


def test_load_a_stored_run_with_its_records(tmp_path: Path) -> None:
    rows = make_rows(1, n=4)
    with RunStore(tmp_path / "s.sqlite") as store:
        run_id = store.begin_run(make_result(rows))
        store.add_requests(run_id, rows)
        store.save_result(run_id, make_result(rows), complete=True)
    src = load_source("latest", tmp_path / "s.sqlite")
    assert (src.name, src.run_id, src.status, src.notes) == (f"run {run_id}", run_id, "complete", [])
    assert len(src.slot_records("baseline")) == 4 and len(src.slot_records("draft@k=4")) == 4


def test_load_a_result_file_and_the_errors_name_the_file(tmp_path: Path) -> None:
    good = tmp_path / "r.json"
    good.write_text(json.dumps(make_result(make_rows(2, n=2))))
    src = load_source(str(good), tmp_path / "unused.sqlite")
    assert src.requests is None and src.run_id is None and src.result["kind"] == "bench"
    assert not (tmp_path / "unused.sqlite").exists()

    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "bench",\n "candidates": [,]}')
    with pytest.raises(StoreError, match=r"bad.json:2: invalid JSON"):
        load_source(str(bad), tmp_path / "s.sqlite")
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(StoreError, match="not a specmeter result file"):
        load_source(str(other), tmp_path / "s.sqlite")
    with pytest.raises(StoreError, match="no such result file"):
        load_source(str(tmp_path / "missing.json"), tmp_path / "s.sqlite")
    with pytest.raises(StoreError, match="no run store at"):
        load_source("3", tmp_path / "s.sqlite")
