"""``specmeter load --api messages`` against a real vLLM server's Anthropic Messages endpoint.

vLLM 0.32 answers ``/v1/messages`` by converting the request to a chat completion
(``vllm/entrypoints/anthropic/serving.py``), so the model needs a chat template: the bundled models have
none, and without one vLLM refuses every request with HTTP 400 "As of transformers v4.44, default chat
template is no longer allowed, so you must provide a chat template if the tokenizer does not define one"
(checked in ``test_vllm_server.py``, whose server runs without a template). This server gets a template
that renders exactly specmeter's template-less fallback (BOS, ``role: content`` lines, ``assistant:``).

The server serves nothing but this test, so vLLM's counter deltas are the load's exact totals. Checked:
requests, prompt and generated tokens, drafted and accepted tokens equal the deltas; the client's TTFT and
chunk gaps agree with vLLM's histograms. vLLM's Messages stream carries no per-chunk token counts (it asks
its chat path for continuous usage but drops it), so tokens per chunk are the final usage spread over the
text deltas (``usage_distributed``).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

import pytest
from vllm_helpers import legal_slice, read_json, scrape, specmeter, vllm_server

pytest.importorskip("vllm")
pytestmark = pytest.mark.vllm

REQUESTS = 10
MAX_TOKENS = 48
# specmeter's template-less rendering (workloads/render.py) as a Jinja chat template.
PLAIN_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}assistant:"
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    out = tmp_path_factory.mktemp("vllm-messages")
    template = out / "plain.jinja"
    template.write_text(PLAIN_TEMPLATE, encoding="utf-8")
    with vllm_server(out / "server.log", extra=("--chat-template", str(template))) as url:
        before = scrape(url)
        prompts = legal_slice(out / "legal.jsonl", REQUESTS)
        specmeter(
            "load", "--endpoint", url, "--api", "messages", "--prompts", prompts, "--concurrency", 2,
            "--warmup", 0, "--warmup-per-level", 0, "--max-tokens", MAX_TOKENS, "--json", out / "load.json",
            "--csv", out / "load.csv",
        )  # fmt: skip
        after = scrape(url)
    with open(out / "load.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    yield {
        "delta": {name: after.get(name, 0.0) - before.get(name, 0.0) for name in after},
        "load": read_json(out / "load.json"),
        "rows": rows,
    }


def test_messages_load_counts_equal_vllm_counters(served: dict[str, Any]) -> None:
    d, (level,) = served["delta"], served["load"]["candidates"]
    assert level["load"]["completed"] == REQUESTS and level["load"]["failed"] == 0
    assert d["vllm:request_success_total"] == REQUESTS
    assert level["load"]["token_sources"] == {"usage_distributed": REQUESTS}
    summary = level["summary"]
    assert summary["emitted_tokens"] == d["vllm:generation_tokens_total"]  # message_delta's usage, summed
    prompt = sum(int(r["prompt_tokens"]) for r in served["rows"])
    assert prompt == d["vllm:prompt_tokens_total"]  # message_start's input_tokens, summed
    # No per-request reports in the Messages API: acceptance is the /metrics counter deltas.
    server = level["server"]
    assert server["used"] == "metrics" and server["kind"] == "vllm"
    assert server["metrics"]["drafted_tokens"] == d["vllm:spec_decode_num_draft_tokens_total"]
    assert server["metrics"]["accepted_tokens"] == d["vllm:spec_decode_num_accepted_tokens_total"]
    assert d["vllm:spec_decode_num_draft_tokens_total"] > 0


def test_messages_latency_agrees_with_vllm_histograms(served: dict[str, Any]) -> None:
    d, summary = served["delta"], served["load"]["candidates"][0]["summary"]
    server_ttft = d["vllm:time_to_first_token_seconds_sum"] / d["vllm:time_to_first_token_seconds_count"]
    client_ttft = summary["ttft_ms"]["mean"] / 1000
    # The client sees the first text delta after vLLM's engine emits the first token (loopback, the
    # Anthropic conversion, SSE framing), never before.
    assert server_ttft - 0.002 <= client_ttft <= server_ttft + 0.5, (client_ttft, server_ttft)
    # A text delta per engine step: the client's chunk gaps are vLLM's inter-token latencies (per step).
    server_itl = d["vllm:inter_token_latency_seconds_sum"] / d["vllm:inter_token_latency_seconds_count"]
    client_gap = summary["gap_ms"]["mean"] / 1000
    assert client_gap == pytest.approx(server_itl, rel=0.3, abs=0.002), (client_gap, server_itl)
