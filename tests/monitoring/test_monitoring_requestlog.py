"""Per-request logs: every engine's shape read into the three numbers, --fields, time stamps, tailing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from specmeter.monitoring.requestlog import FieldMapError, LogTail, parse_fields, parse_line, parse_time

FIXTURE = Path(__file__).parent / "fixtures" / "requests_mixed.jsonl"


def test_every_engine_shape_in_one_log() -> None:
    tail = LogTail(FIXTURE)
    obs, problems = tail.poll()
    rows = [(o.shape, o.domain, o.tenant, o.accepted, o.drafted, o.steps, o.tokens, o.latency_s) for o in obs]
    assert rows == [
        ("specmeter", "legal", "acme", 24, 32, 8, 40, 0.8),
        ("vllm", "general", "acme", 20, 40, 10, 30, 0.6),
        ("sglang", "legal", None, 38, 48, 12, 50, 1.25),
        ("llamacpp", "code", None, 45, 60, None, 64, 1.0),
        ("sglang", "legal", None, 6, 12, 3, 9, None),
    ]
    assert [o.time for o in obs] == [1796040000.5, 1796119201.0, 1796040002.0, 1796119203.0, 1796040004.0]
    assert next(o.source for o in obs) == f"{FIXTURE}:1"
    name = str(FIXTURE)
    assert problems == [
        f"{name}:6: no speculative-decoding counts found (specmeter, vLLM, SGLang or llama.cpp fields); "
        "map them with --fields accepted=…,drafted=…",
        f"{name}:7: accepted tokens (10) exceed drafted tokens (5)",
        f"{name}:8: time 'yesterday' is neither Unix seconds nor ISO 8601",
        f"{name}:9: invalid JSON (Expecting value at column 1)",
    ]


def test_fields_map_any_log() -> None:
    fields = parse_fields(
        "accepted=spec.acc,drafted=spec.prop,steps=spec.verify,tokens=out.n,latency=dur_ms,domain=svc"
    )
    line = {
        "spec": {"acc": 7, "prop": 12, "verify": 3},
        "out": {"n": 10},
        "dur_ms": 250,
        "svc": "hr",
        "ts": 5,
    }
    obs = parse_line(line, "x:1", fields)
    assert (obs.accepted, obs.drafted, obs.steps, obs.tokens, obs.latency_s, obs.domain, obs.time) == (
        7,
        12,
        3,
        10,
        0.25,
        "hr",
        5.0,
    )
    assert obs.shape == "fields"
    # --fields overrides an adapter's own field.
    own = {
        "accepted_tokens": 1,
        "drafted_tokens": 4,
        "steps": 1,
        "output_tokens": 2,
        "latency_ms": 9,
        "team": "ops",
    }
    assert parse_line(own, "x:2", parse_fields("domain=team")).domain == "ops"
    assert parse_line(own, "x:3").domain == "all"  # no domain anywhere
    with pytest.raises(ValueError, match=re.escape("field 'spec.acc': 'many' is not a count")):
        parse_line({"spec": {"acc": "many", "prop": 1}}, "x:4", fields)
    with pytest.raises(ValueError, match=re.escape("field 'spec.prop': missing")):
        parse_line({"spec": {"acc": 1}}, "x:5", fields)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("accepted", "is not NAME=FIELD"),
        ("acepted=x", "unknown name 'acepted'"),
        ("accepted=a,accepted=b", "'accepted' is given twice"),
        ("latency=a,latency_ms=b", "latency (seconds) or latency_ms"),
    ],
)
def test_bad_field_maps(text: str, message: str) -> None:
    with pytest.raises(FieldMapError, match=re.escape(message)):
        parse_fields(text)


def test_time_stamps() -> None:
    assert parse_time(1796040000) == 1796040000.0
    assert parse_time(1796040000123) == pytest.approx(1796040000.123)  # milliseconds
    assert parse_time("2026-12-01T10:00:00Z") == parse_time("2026-12-01T19:00:00+09:00")
    assert parse_time("2026-12-01T10:00:00") == parse_time("2026-12-01T10:00:00Z")  # no zone: UTC
    assert parse_time(None) is None


def _line(i: int, **extra: object) -> str:
    return json.dumps({"accepted_tokens": i, "drafted_tokens": 8, "steps": 2, "domain": "d", **extra})


def test_tail_follows_growth_partial_lines_rotation_and_new_files(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "a.jsonl"
    log.parent.mkdir()
    log.write_text(_line(1) + "\n" + _line(2)[:10], encoding="utf-8")
    tail = LogTail(log.parent)
    assert [o.accepted for o in tail.poll()[0]] == [1]  # the half-written line waits
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(_line(2)[10:] + "\n" + _line(3) + "\n")
    obs, _ = tail.poll()
    assert [(o.accepted, o.source) for o in obs] == [(2, f"{log}:2"), (3, f"{log}:3")]
    assert tail.poll() == ([], [])
    (log.parent / "b.jsonl").write_text(_line(4) + "\n", encoding="utf-8")
    assert [o.accepted for o in tail.poll()[0]] == [4]
    log.write_text(_line(5) + "\n", encoding="utf-8")  # rotated: shorter than what was read
    assert [(o.accepted, o.source) for o in tail.poll()[0]] == [(5, f"{log}:1")]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(_line(6))  # no newline at the end of the run
    assert tail.poll()[0] == []
    assert [o.accepted for o in tail.flush()[0]] == [6]


@pytest.mark.parametrize(
    ("accepted", "drafted"),
    [
        ("spec_accept_token_num", "spec_draft_token_num"),  # tokenizer_manager.py, commit c60799d
        ("spec_accepted_drafts", "spec_proposed_drafts"),  # spec_decoding_meta.py, commit 9155cf0
        ("spec_num_correct_drafts", "spec_num_proposed_drafts"),  # later releases
    ],
)
def test_sglang_meta_info_in_every_spelling(accepted: str, drafted: str) -> None:
    """monitor --requests reads what load reads: one reader (adapters.sglang_meta) of SGLang's names."""
    from specmeter.monitoring.adapters import request_report

    meta = {"spec_verify_ct": 4, accepted: 6, drafted: 12, "completion_tokens": 11, "e2e_latency": 0.5}
    obs = parse_line({"choices": [{"meta_info": meta}], "domain": "hr"}, "x:1")
    assert (obs.shape, obs.accepted, obs.drafted, obs.steps, obs.tokens, obs.latency_s) == (
        "sglang", 6, 12, 4, 11, 0.5,
    )  # fmt: skip
    report = request_report({"meta_info": meta})
    assert report is not None
    assert (report["num_accepted_draft_tokens"], report["num_draft_tokens"]) == (obs.accepted, obs.drafted)
