"""Result JSON (atomic rewrites, complete flag), per-request CSV and JSONL sink, environment facts."""

from __future__ import annotations

import csv
import json
import math
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from report_fixtures import make_result, summary

from specmeter.metrics.records import Emission, ModelInfo, RequestRecord, StepRecord
from specmeter.report.files import (
    CSV_COLUMNS,
    LOG_FIELDS,
    RequestSink,
    ResultFile,
    environment_info,
    model_info_dict,
    request_row,
    write_json_atomic,
)

CONFIG = {"target": "t", "drafts": ["a"], "k": [4], "temperature": 0.0, "top_p": 1.0, "max_tokens": 16}

MODEL = ModelInfo(
    name="t",
    path="/m/t",
    architecture="LlamaForCausalLM",
    params=1000,
    weight_bytes=4000,
    kv_bytes_per_token=64,
    dtype="float32",
    num_layers=2,
    num_kv_heads=2,
    head_dim=4,
)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def record(rid: str = "r1", **overrides: Any) -> RequestRecord:
    fields: dict[str, Any] = {
        "id": rid,
        "category": "legal",
        "prompt_tokens": 12,
        "output_tokens": 5,
        "latency_s": 1.2345,
        "ttft_s": 0.05,
        "prefill_s": 0.04,
        "steps": (
            StepRecord(drafted=4, accepted=3, emitted=4, draft_s=0.01, verify_s=0.02, draft_forwards=4),
            StepRecord(drafted=0, accepted=0, emitted=1, draft_s=0.0, verify_s=0.02),
        ),
        "emissions": (Emission(t=0.05, tokens=4), Emission(t=0.45, tokens=1)),
        "finish_reason": "eos",
        "matches_baseline": True,
    }
    fields.update(overrides)
    return RequestRecord(**fields)


# ------------------------------------------------------------------------------------------ JSON


def test_result_file_schema_and_complete_flag(tmp_path: Path) -> None:
    path = tmp_path / "out" / "result.json"
    with ResultFile(path, kind="bench", config=CONFIG, started_at="2026-01-01T00:00:00+00:00") as rf:
        data = load(path)
        assert data["complete"] is False
        assert list(data) == ["schema_version", "kind", "complete", "run", "baseline", "candidates"]
        assert list(data["run"]) == ["config", "environment", "started_at", "models"]
        assert data["schema_version"] == 1
        assert data["kind"] == "bench"
        assert data["run"]["config"] == CONFIG
        assert data["baseline"] == {"summary": None, "by_category": {}}
        assert data["candidates"] == []

        rf.set_models(MODEL, {"a": MODEL})
        rf.set_baseline(summary(), {"legal": summary()})
        rf.add_candidate("a", 4, summary(), {"legal": summary(danger_zone=True)})
        data = load(path)
        assert data["complete"] is False
        assert data["run"]["models"]["target"]["weight_bytes"] == 4000
        assert data["candidates"][0]["draft"] == "a"
        assert data["candidates"][0]["by_category"]["legal"]["danger_zone"] is True
        assert rf.complete is False
    assert rf.complete is True
    assert load(path)["complete"] is True


def test_result_file_interrupted_stays_incomplete(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    with pytest.raises(KeyboardInterrupt), ResultFile(path, kind="bench", config=CONFIG) as rf:
        rf.set_baseline(summary())
        rf.add_candidate("a", 4, summary())
        raise KeyboardInterrupt
    data = load(path)
    assert data["complete"] is False
    assert data["baseline"]["summary"]["requests"] == 40
    assert len(data["candidates"]) == 1


def test_add_candidate_replaces_same_draft_and_k(tmp_path: Path) -> None:
    rf = ResultFile(tmp_path / "r.json", kind="bench", config=CONFIG)
    rf.add_candidate("a", 4, summary(requests=1))
    rf.add_candidate("a", 2, summary(requests=1))
    rf.add_candidate("a", 4, summary(requests=2))
    data = load(tmp_path / "r.json")
    assert [(c["k"], c["summary"]["requests"]) for c in data["candidates"]] == [(4, 2), (2, 1)]


def test_add_candidate_with_another_key_and_extra_fields(tmp_path: Path) -> None:
    # load's levels: keyed by (concurrency, rate), with their own fields next to the shared ones.
    rf = ResultFile(tmp_path / "r.json", kind="load", config=CONFIG)
    key = ("concurrency", "rate")
    rf.add_candidate("srv", 4, summary(requests=1), key=key, concurrency=1, rate=None, complete=False)
    rf.add_candidate("srv", 4, summary(requests=3), key=key, concurrency=4, rate=None, complete=True)
    rf.add_candidate("srv", 4, summary(requests=2), key=key, concurrency=1, rate=None, complete=True)
    data = load(tmp_path / "r.json")
    assert [(c["concurrency"], c["summary"]["requests"], c["complete"]) for c in data["candidates"]] == [
        (1, 2, True),
        (4, 3, True),
    ]
    assert set(data["candidates"][0]) == {
        "draft",
        "k",
        "summary",
        "by_category",
        "concurrency",
        "rate",
        "complete",
    }
    with pytest.raises(ValueError, match="not in the entry"):
        rf.add_candidate("srv", 4, summary(), key=("concurrency", "rate"), concurrency=2)


def test_sections_beside_the_shared_keys(tmp_path: Path) -> None:
    rf = ResultFile(tmp_path / "r.json", kind="tune", config=CONFIG)
    rf.set_section("tune", {"best": 3})
    rf.set_section("vllm", {"version": "0.32"})
    assert load(tmp_path / "r.json")["tune"] == {"best": 3} and load(tmp_path / "r.json")["vllm"]["version"]
    rf.set_section("vllm", None)
    assert "vllm" not in load(tmp_path / "r.json")
    with pytest.raises(ValueError, match="shared key"):
        rf.set_section("candidates", {})


def test_non_finite_floats_become_null(tmp_path: Path) -> None:
    rf = ResultFile(tmp_path / "r.json", kind="bench", config=CONFIG)
    rf.add_candidate("a", 4, summary(speedup_seed=math.inf, jitter=math.nan))
    text = (tmp_path / "r.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    s = load(tmp_path / "r.json")["candidates"][0]["summary"]
    assert s["speedup_seed"] is None and s["jitter"] is None


def test_rewrite_keeps_a_valid_file_when_writing_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.json"
    rf = ResultFile(path, kind="bench", config=CONFIG)
    rf.add_candidate("a", 4, summary())
    before = path.read_text()

    def broken_replace(src: str, dst: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        rf.add_candidate("b", 4, summary())
    monkeypatch.undo()
    assert path.read_text() == before
    assert len(load(path)["candidates"]) == 1
    assert os.listdir(tmp_path) == ["r.json"]  # no temp file left behind


def test_unserialisable_value_keeps_old_file(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json_atomic(path, {"a": 1})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"a": object()})
    assert load(path) == {"a": 1}
    assert os.listdir(tmp_path) == ["r.json"]


def test_whole_result_round_trips(tmp_path: Path) -> None:
    result = make_result()
    write_json_atomic(tmp_path / "r.json", result)
    assert load(tmp_path / "r.json") == result


def test_result_file_without_path_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with ResultFile(None, kind="bench", config=CONFIG) as rf:
        rf.add_candidate("a", 4, summary())
    assert rf.to_dict()["complete"] is True
    assert rf.to_dict()["candidates"][0]["draft"] == "a"
    assert os.listdir(tmp_path) == []


def test_environment_info_reports_torch_only_when_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    env = environment_info()
    assert env["specmeter"] == "0.1.0"
    assert set(env) == {"specmeter", "python", "platform", "cpu_count"}
    fake = types.ModuleType("torch")
    fake.__version__ = "9.9.9"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert environment_info()["torch"] == "9.9.9"


def test_model_info_dict() -> None:
    d = model_info_dict(MODEL)
    assert d["name"] == "t" and d["implementation"] == "native" and d["head_dim"] == 4
    json.dumps(d)


# ------------------------------------------------------------------------------------- per request


def test_row_tpot_is_the_metrics_definition() -> None:
    # metrics.latency.tpot: token count (not chunks), zero-token chunks ignored, latency − TTFT without times.
    e = (Emission(0.1, 1), Emission(0.3, 2), Emission(0.5, 2), Emission(0.9, 0))
    assert request_row("a", "a", 4, record(emissions=e))["tpot_ms"] == pytest.approx(100.0)
    assert request_row("a", "a", 4, record(emissions=(Emission(0.2, 3),), output_tokens=3))["tpot_ms"] == 0.0
    no_times = record(emissions=(), output_tokens=5, latency_s=1.05, ttft_s=0.05)
    assert request_row("a", "a", 4, no_times)["tpot_ms"] == pytest.approx(250.0)
    assert request_row("a", "a", 4, record(output_tokens=0))["tpot_ms"] is None


def test_request_row_values() -> None:
    row = request_row("a@k=4", "a", 4, record())
    assert list(row) == list(CSV_COLUMNS)
    assert row["latency_ms"] == 1234.5
    assert row["ttft_ms"] == 50.0
    assert row["tpot_ms"] == 100.0  # (0.45 - 0.05) / (5 - 1)
    assert row["accepted_tokens"] == 3 and row["drafted_tokens"] == 4
    assert row["steps"] == 1  # only verification steps count, as in the summaries
    assert request_row("baseline", None, 4, record(output_tokens=1))["tpot_ms"] is None
    assert row["error"] is None


def test_a_failed_request_says_why_in_csv_and_jsonl(tmp_path: Path) -> None:
    failed = record("r9", finish_reason="interrupted", error="HTTP 500: engine crashed, see «log»")
    with RequestSink(tmp_path / "r.csv", tmp_path / "r.jsonl") as sink:
        sink.write("a@k=4", "a", 4, failed)
        sink.write("a@k=4", "a", 4, record("r1"))
    with (tmp_path / "r.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["error"] for r in rows] == ["HTTP 500: engine crashed, see «log»", ""]
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [line["error"] for line in lines] == ["HTTP 500: engine crashed, see «log»", None]


def test_sink_csv_and_jsonl(tmp_path: Path) -> None:
    csv_path, log_path = tmp_path / "req.csv", tmp_path / "sub" / "req.jsonl"
    with RequestSink(csv_path, log_path) as sink:
        sink.write("baseline", None, 4, record("r1", matches_baseline=None, output_tokens=1))
        sink.write("a@k=4", "a", 4, record("r2"))
        sink.write("a@k=4", "a", 4, record("r3", matches_baseline=False))
        assert sink.rows_written == 3

    with csv_path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == list(CSV_COLUMNS)
    assert len(rows) == 4
    base, r2, r3 = (dict(zip(CSV_COLUMNS, r, strict=True)) for r in rows[1:])
    assert base["draft"] == "" and base["tpot_ms"] == "" and base["matches_baseline"] == ""
    assert r2["latency_ms"] == "1234.5" and r2["ttft_ms"] == "50.0" and r2["tpot_ms"] == "100.0"
    assert r2["matches_baseline"] == "true" and r3["matches_baseline"] == "false"
    assert r2["finish_reason"] == "eos" and r2["prompt_tokens"] == "12" and r2["k"] == "4"

    lines = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 3
    assert all(list(line) == list(LOG_FIELDS) for line in lines)
    assert lines[0]["draft"] is None and lines[0]["matches_baseline"] is None
    assert lines[1]["latency_ms"] == 1234.5 and lines[1]["matches_baseline"] is True


def test_sink_rows_are_on_disk_before_close_and_survive_errors(tmp_path: Path) -> None:
    csv_path, log_path = tmp_path / "req.csv", tmp_path / "req.jsonl"
    with pytest.raises(RuntimeError), RequestSink(csv_path, log_path, fsync=True) as sink:
        sink.write("a@k=4", "a", 4, record("r1"))
        # Visible to another reader while the sink is still open: nothing waits for close().
        assert len(csv_path.read_text().splitlines()) == 2
        assert len(log_path.read_text().splitlines()) == 1
        sink.write("a@k=4", "a", 4, record("r2"))
        raise RuntimeError("boom")
    assert len(csv_path.read_text().splitlines()) == 3
    assert [json.loads(x)["id"] for x in log_path.read_text().splitlines()] == ["r1", "r2"]
    with pytest.raises(ValueError, match="closed"):
        sink.write("a@k=4", "a", 4, record("r3"))


def test_sink_with_one_output_only(tmp_path: Path) -> None:
    with RequestSink(log_path=tmp_path / "only.jsonl") as sink:
        sink.write("a@k=4", "a", 4, record())
    assert os.listdir(tmp_path) == ["only.jsonl"]
    with RequestSink(csv_path=tmp_path / "only.csv") as sink:
        pass
    assert (tmp_path / "only.csv").read_text() == ",".join(CSV_COLUMNS) + "\n"
    with RequestSink() as sink:
        sink.write("a@k=4", "a", 4, record())
