"""golden and drift/monitor read the same shapes as replay, and leave `load`'s warm-up requests out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specmeter.goldenset.formats import read_prompts
from specmeter.monitoring.requestlog import LogTail


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_golden_reads_litellm_otel_and_skips_warmup(tmp_path: Path) -> None:
    litellm = {
        "id": "l1",
        "call_type": "acompletion",
        "model": "m",
        "messages": [{"role": "user", "content": "Draft an NDA clause."}],
        "response": {"choices": [{"message": {"content": "Sure."}, "finish_reason": "stop"}]},
        "model_parameters": {"temperature": 0.2, "max_tokens": 50},
        "metadata": {"requester_metadata": {"domain": "legal"}},
    }
    span = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "spanId": "1",
                                "attributes": [
                                    {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
                                    {
                                        "key": "gen_ai.input.messages",
                                        "value": {
                                            "stringValue": json.dumps(
                                                [
                                                    {
                                                        "role": "user",
                                                        "parts": [{"type": "text", "content": "Hi"}],
                                                    }
                                                ]
                                            )
                                        },
                                    },
                                    {
                                        "key": "gen_ai.output.messages",
                                        "value": {
                                            "stringValue": json.dumps([{"role": "assistant", "parts": []}])
                                        },
                                    },
                                ],
                            }
                        ]
                    }
                ]
            }
        ]
    }
    warm = {
        "request": {
            "messages": [{"role": "user", "content": "warm"}],
            "metadata": {"specmeter_warmup": "true"},
        }
    }
    read = read_prompts([_write(tmp_path / "mixed.jsonl", [litellm, span, warm])])
    assert [p.content for p in read.prompts] == ["Draft an NDA clause.", "Hi"]
    assert read.problems == [] and read.warmup == 1
    assert (
        read.prompts[0].max_tokens == 50
        and read.prompts[0].record["request"]["metadata"]["domain"] == "legal"
    )


def test_monitor_and_drift_leave_warmup_lines_out(tmp_path: Path) -> None:
    line = {
        "id": "a",
        "accepted_tokens": 3,
        "drafted_tokens": 4,
        "steps": 2,
        "output_tokens": 6,
        "latency_ms": 10,
    }
    log = _write(tmp_path / "serve.jsonl", [{**line, "warmup": True}, line, {**line, "warmup": True}])
    tail = LogTail(log)
    observations, problems = tail.poll()
    assert len(observations) == 1 and problems == [] and tail.warmup == 2
