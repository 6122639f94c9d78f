"""A real llama-server (llama.cpp) with a draft model and 2 slots, driven by ``load``, watched by ``monitor``.

The server serves nothing but this test, so llama.cpp's own ``llamacpp:spec_decode_*`` counters before and
after the load are the exact totals of the load's requests (llama-server adds a request's counts when it
finishes; the scrapes around the load see every request finished). Checked against those deltas, parsed
by prometheus_client rather than by specmeter:

* ``monitor``'s stored windows sum to the deltas: drafted, accepted, steps (verification steps,
  ``spec_decode_num_drafts``), generated tokens, and per position;
* ``load``'s level has the same drafted, accepted and steps, and per-position rates = per-position / steps;
* the per-response ``timings.draft_n`` / ``draft_n_accepted`` that ``load`` summed (its per-request
  block) equal the counters too, which is why ``load`` may use the counters' steps, τ and per-position.

It also records the fixtures the default suite reads (tests/fixtures/llamacpp/<commit>/): this server's
/metrics text and a streamed response's last chunk, with the values prometheus_client read from them.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llamacpp_helpers import PIP_PIN, llama_server, server_version, version_tag

from engine_helpers import (
    FIXTURES,
    LEGAL,
    by_label,
    last_stream_chunk,
    metrics_text,
    monitor_windows,
    prompt_slice,
    read_json,
    run_cli,
    scrape,
    start_monitor,
    stop,
    wait_for,
    write_fixture,
)

pytestmark = pytest.mark.llamacpp

REQUESTS = 16
MAX_TOKENS = 48
K = 4
PREFIX = "llamacpp:spec_decode_"
PER_POS = (PREFIX + "num_accepted_tokens_per_pos_total", "position")


def _record_fixture(url: str, out: Path) -> dict[str, Any]:
    """Write this server's /metrics and a stream's last chunk, with what prometheus_client reads in them."""
    prompt = json.loads(LEGAL.read_text(encoding="utf-8").splitlines()[0])["prompt"]
    body = {"prompt": prompt, "max_tokens": 24, "temperature": 0, "timings_per_token": True}
    chunk = last_stream_chunk(url, "/v1/completions", body)
    text = metrics_text(url)
    totals, per_pos = scrape(url, text), by_label(url, *PER_POS, text=text)
    expected = {
        "kind": "llamacpp",
        "engine": f"llama.cpp llama-server {server_version()}, built from {PIP_PIN}",
        "source": "recorded from the real server by tests/real_llamacpp/test_llamacpp_server.py",
        "drafts": totals[PREFIX + "num_drafts_total"],
        "draft_tokens": totals[PREFIX + "num_draft_tokens_total"],
        "accepted": totals[PREFIX + "num_accepted_tokens_total"],
        "accepted_per_position": [per_pos[p] for p in sorted(per_pos)],
        "generation_tokens": totals["llamacpp:tokens_predicted_total"],
        "request": {
            "drafted": chunk["timings"]["draft_n"],
            "accepted": chunk["timings"]["draft_n_accepted"],
            "steps": None,
        },
    }
    write_fixture(out, text, chunk, expected)
    return expected


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    out = tmp_path_factory.mktemp("llamacpp-server")
    with llama_server(out / "server.log", k=K, parallel=2) as url:
        before, before_pos = scrape(url), by_label(url, *PER_POS)
        history = out / "monitor.sqlite"
        monitor = start_monitor(url, history)
        try:
            # Its first window closes at its second scrape, before any traffic: every request lands later.
            wait_for(lambda: len(monitor_windows(history)) >= 1, "the monitor's first window")
            load_json = out / "load.json"
            run_cli(
                "load", "--endpoint", url, "--prompts", prompt_slice(LEGAL, out / "legal.jsonl", REQUESTS),
                "--concurrency", 2, "--warmup", 0, "--warmup-per-level", 0, "--max-tokens", MAX_TOKENS,
                "--json", load_json,
                "--log", out / "load.jsonl",
            )  # fmt: skip
            done = time.time()
            after, after_pos = scrape(url), by_label(url, *PER_POS)
            # A window that starts after the load ended means every window of the load's traffic is stored.
            wait_for(
                lambda: any(w["t_start"] >= done for w in monitor_windows(history)), "a window after the load"
            )
        finally:
            code = stop(monitor, signal.SIGINT)
            monitor_output = monitor.stdout.read() if monitor.stdout else ""
        fixture = _record_fixture(url, FIXTURES / "llamacpp" / version_tag())
        yield {
            "delta": {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after},
            "per_pos": {int(p): after_pos[p] - before_pos.get(p, 0.0) for p in after_pos},
            "windows": monitor_windows(history),
            "load": read_json(load_json),
            "monitor_exit": code,
            "monitor_output": monitor_output,
            "fixture": fixture,
        }


def test_monitor_windows_sum_to_the_counters(served: dict[str, Any]) -> None:
    d, windows, per_pos = served["delta"], served["windows"], served["per_pos"]
    assert served["monitor_exit"] in (0, 130), served["monitor_output"]
    assert {w["kind"] for w in windows} == {"llamacpp"}
    drafted = d[PREFIX + "num_draft_tokens_total"]
    assert drafted > 0
    assert sum(w["drafted_tokens"] or 0 for w in windows) == drafted
    assert sum(w["accepted_tokens"] or 0 for w in windows) == d[PREFIX + "num_accepted_tokens_total"]
    assert sum(w["steps"] or 0 for w in windows) == d[PREFIX + "num_drafts_total"]
    assert sum(w["generation_tokens"] or 0 for w in windows) == d["llamacpp:tokens_predicted_total"]
    # Per position: each window stores rates over its own steps; rate × steps gives its count back.
    for i in range(K):
        counted = sum(
            round(json.loads(w["per_position"])[i]["cumulative"] * w["steps"])
            for w in windows
            if w["steps"] and w["per_position"]
        )
        assert counted == per_pos[i], i


def test_load_acceptance_is_the_counters(served: dict[str, Any]) -> None:
    d, per_pos = served["delta"], served["per_pos"]
    (level,) = served["load"]["candidates"]
    assert level["load"]["completed"] == REQUESTS and level["load"]["failed"] == 0, level["load"]
    server = {key: level["server"][key] for key in ("kind", "used", "metrics", "per_request", "notes")}
    assert server["kind"] == "llamacpp" and server["used"] == "metrics", (d, server)
    summary = level["summary"]
    steps = d[PREFIX + "num_drafts_total"]
    assert summary["drafted_tokens"] == d[PREFIX + "num_draft_tokens_total"]
    assert summary["accepted_tokens"] == d[PREFIX + "num_accepted_tokens_total"]
    assert summary["steps"] == steps
    assert summary["acceptance_length"] == pytest.approx(1 + summary["accepted_tokens"] / steps)
    assert [p["cumulative"] for p in summary["per_position"]] == pytest.approx(
        [per_pos[i] / steps for i in range(K)]
    )
    assert level["k"] == K  # revealed by the per-position series
    assert summary["emitted_tokens"] == d["llamacpp:tokens_predicted_total"]


def test_per_response_timings_sum_to_the_counters(served: dict[str, Any]) -> None:
    d = served["delta"]
    per_request = served["load"]["candidates"][0]["server"]["per_request"]
    assert per_request["source"] == "per_request" and per_request["steps"] is None
    assert per_request["drafted_tokens"] == d[PREFIX + "num_draft_tokens_total"]
    assert per_request["accepted_tokens"] == d[PREFIX + "num_accepted_tokens_total"]


def test_recorded_fixture_is_consistent(served: dict[str, Any]) -> None:
    fixture = served["fixture"]
    # The fixture's counters include the load's requests and the one streamed request after them.
    delta = served["delta"][PREFIX + "num_draft_tokens_total"]
    assert fixture["draft_tokens"] >= delta + fixture["request"]["drafted"]
    assert len(fixture["accepted_per_position"]) == K
