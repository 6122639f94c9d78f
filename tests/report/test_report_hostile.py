"""Writing what came from outside (issue 29): a lone surrogate never stops a result, log, report or store."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from specmeter.metrics.records import Emission, RequestRecord, StepRecord
from specmeter.report.files import RequestSink, write_json_atomic
from specmeter.report.html import write_report
from specmeter.store import RunStore

LONE = "bad \ud800 text"  # a server's error text can hold one: JSON allows "\ud800" in a string
WORLD = "日本語のテキスト، عربي, emoji 😀"


def record(error: str, category: str = "general") -> RequestRecord:
    steps = (StepRecord(drafted=4, accepted=3, emitted=4, draft_s=0.01, verify_s=0.02, draft_forwards=4),)
    return RequestRecord(
        "r1", category, 12, 4, 0.5, 0.05, 0.04, steps, (Emission(t=0.05, tokens=4),), error=error
    )


def test_a_lone_surrogate_is_written_escaped_and_reads_back_as_the_same_string(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json_atomic(path, {"error": LONE, "text": WORLD})
    assert "\\ud800" in path.read_text(encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == {"error": LONE, "text": WORLD}


def test_request_rows_with_a_lone_surrogate_are_written(tmp_path: Path) -> None:
    rows, log = tmp_path / "r.csv", tmp_path / "r.jsonl"
    with RequestSink(rows, log) as sink:
        sink.write("draft@k=4", "draft", 4, record(LONE, category=WORLD), extra={"prompt": LONE})
    line = json.loads(log.read_text(encoding="utf-8"))
    assert line["error"] == LONE and line["prompt"] == LONE and line["category"] == WORLD
    with rows.open(encoding="utf-8") as fh:
        (cells,) = list(csv.DictReader(fh))
    assert cells["error"] == "bad \\ud800 text" and cells["category"] == WORLD  # other text round-trips


def test_an_html_report_with_a_lone_surrogate_is_written(tmp_path: Path) -> None:
    path = tmp_path / "r.html"
    write_report(path, f"<p>{LONE} {WORLD}</p>")
    assert path.read_text(encoding="utf-8") == f"<p>bad \\ud800 text {WORLD}</p>"


def test_the_store_keeps_a_result_with_a_lone_surrogate(tmp_path: Path) -> None:
    with RunStore(tmp_path / "s.sqlite") as store:
        run = store.begin_run({"kind": "load", "failures": [LONE], "note": WORLD})
        assert store.result(run) == {"kind": "load", "failures": [LONE], "note": WORLD}


def test_the_store_keeps_request_records_and_labels_with_a_lone_surrogate(tmp_path: Path) -> None:
    # A server's error text, a category or a path from the command line (undecodable bytes arrive as
    # surrogates) raised UnicodeEncodeError in SQLite; they are stored with the surrogate escaped.
    with RunStore(tmp_path / "s.sqlite") as store:
        run = store.begin_run({"kind": "load", "run": {"config": {"target": "/m/t\udcff"}}}, note=LONE)
        store.add_request(run, "baseline", None, 0, record(LONE, category=WORLD))
        (stored,) = store.requests(run)
        info = store.run_info(run)
    assert stored.record.error == "bad \\ud800 text" and stored.record.category == WORLD
    assert info.label == "t\\udcff" and info.note == "bad \\ud800 text"
