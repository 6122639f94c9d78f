"""What ``load`` asks of a server: only the fields correct counting needs, each opt-in beyond that (issue 19);
and the effective concurrency it reports (time-weighted requests in flight)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from specmeter.load.client import RequestOutcome
from specmeter.load.config import Endpoint, LoadConfig
from specmeter.load.level import RoleResult
from specmeter.load.requests import CHUNK_COUNTS, build_request, chunk_count_source
from specmeter.load.result import effective_concurrency
from specmeter.metrics.records import RequestRecord
from specmeter.workloads.loader import DEFAULT_CATEGORY, Message, Prompt

PROMPTS = (
    Prompt("a", "general", "The lighthouse keeper", None, None, 1),
    Prompt("c", "general", None, (Message("user", "Tell me about buttons."),), 7, 3),
)


def _payload(kind: Any = "vllm", **cfg: Any) -> dict[str, Any]:
    ep = Endpoint("speculative", "http://h:1", None, model="m", kind=kind)
    return dict(build_request(LoadConfig(endpoint=ep.url, prompts=PROMPTS, **cfg), ep, 2).payload)


def test_default_request_asks_one_cheap_count_and_nothing_else() -> None:
    body = _payload()
    # Only what counting needs: the stream, the final usage, and one per-chunk count (vLLM: running usage).
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert "seed" not in body and "return_token_ids" not in body and "timings_per_token" not in body
    assert body["prompt"] == "The lighthouse keeper" and body["max_tokens"] == 128
    assert body["temperature"] == 0.0 and body["top_p"] == 1.0


@pytest.mark.parametrize(
    ("kind", "source"), [("vllm", "usage"), ("sglang", "usage"), ("llamacpp", "timings"), ("tgi", "none"),
                         ("unknown", "none")],
)  # fmt: skip
def test_auto_picks_per_kind(kind: Any, source: str) -> None:
    assert chunk_count_source(kind, "auto") == source
    body = _payload(kind)
    assert ("continuous_usage_stats" in body["stream_options"]) == (source == "usage")
    assert ("timings_per_token" in body) == (source == "timings")


def test_opt_in_fields() -> None:
    assert _payload(request_seeds=True, seed=10)["seed"] == 12  # seed + index
    ids = _payload(chunk_counts="token_ids")
    assert ids["return_token_ids"] is True and ids["stream_options"] == {"include_usage": True}
    assert _payload(chunk_counts="none")["stream_options"] == {"include_usage": True}
    assert _payload("tgi", chunk_counts="usage")["stream_options"]["continuous_usage_stats"] is True
    assert set(CHUNK_COUNTS) == {"auto", "usage", "token_ids", "timings", "none"}
    # --extra-body has the last word, on any field.
    assert _payload(extra_body={"return_token_ids": False, "ignore_eos": True})["return_token_ids"] is False


def test_chat_prompts_and_builds_do_not_share_state() -> None:
    ep = Endpoint("speculative", "http://h:1", None, model="m", kind="vllm")
    cfg = LoadConfig(endpoint=ep.url, prompts=PROMPTS)
    first = build_request(cfg, ep, 1)
    second = build_request(cfg, ep, 3)
    assert first.url.endswith("/v1/chat/completions") and first.payload["max_tokens"] == 7
    assert first.payload["messages"] == [{"role": "user", "content": "Tell me about buttons."}]
    first.payload["stream_options"]["continuous_usage_stats"] = False  # type: ignore[index]
    assert second.payload["stream_options"]["continuous_usage_stats"] is True


def _outcome(start: float, end: float) -> RequestOutcome:
    record = RequestRecord("r", "c", 1, 1, end - start, end - start, 0.0)
    return RequestOutcome(record, started_at=start, ended_at=end)


def test_effective_concurrency_is_time_weighted_in_flight() -> None:
    ep = Endpoint("speculative", "http://h:1", None)
    # Over 4 s: two requests overlap for 2 s, one runs alone for 1 s, nothing for 1 s -> (2·2 + 1) / 4.
    role = RoleResult(ep, [_outcome(0, 2), _outcome(0, 3), ], wall_s=4.0)  # fmt: skip
    assert effective_concurrency(role) == pytest.approx(5 / 4)
    assert effective_concurrency(RoleResult(ep, [], wall_s=0.0)) is None


@pytest.mark.parametrize("seed", range(50))
def test_effective_concurrency_never_exceeds_what_was_open(seed: int) -> None:
    # A closed loop of c workers: each worker's requests are disjoint in time, so at most c are open.
    rng = random.Random(seed)
    c = rng.randint(1, 8)
    ep = Endpoint("speculative", "http://h:1", None)
    outcomes, ends = [], [0.0] * c
    for i in range(rng.randint(1, 30)):
        slot = i % c
        start = ends[slot] + rng.choice([0.0, rng.uniform(0, 2)])
        ends[slot] = start + rng.uniform(0, 5)
        outcomes.append(_outcome(start, ends[slot]))
    wall = max(ends) + rng.uniform(0, 1)
    held = effective_concurrency(RoleResult(ep, outcomes, wall_s=wall))
    assert held is not None and 0.0 <= held <= c + 1e-9
    # Without gaps, with every worker busy to the end of the window, exactly c are held.
    busy = [[_outcome(j * 1.5, (j + 1) * 1.5) for j in range(4)] for _ in range(c)]
    full = RoleResult(ep, [o for worker in busy for o in worker], wall_s=6.0)
    assert effective_concurrency(full) == pytest.approx(c)


def test_each_request_carries_its_golden_set_category_as_metadata_domain() -> None:
    """serve --log records it as the request's domain, so a served log knows its domains (issue 32)."""
    assert _payload()["metadata"] == {"domain": "general"}
    assert "metadata" not in _payload(domain_metadata=False)
    # --extra-body's metadata keeps its own keys beside the domain, and wins on a clash.
    merged = _payload(extra_body={"metadata": {"tenant": "acme"}})["metadata"]
    assert merged == {"domain": "general", "tenant": "acme"}
    assert _payload(extra_body={"metadata": {"domain": "x"}})["metadata"] == {"domain": "x"}
    # A golden set without categories names no domain; the Messages API takes no such metadata.
    plain = (Prompt("p", DEFAULT_CATEGORY, "Hello", None, None, 1),)
    ep = Endpoint("speculative", "http://h:1", None, model="m", kind="vllm")
    assert "metadata" not in build_request(LoadConfig(endpoint=ep.url, prompts=plain), ep, 0).payload
    messages = build_request(LoadConfig(endpoint=ep.url, prompts=PROMPTS, api="messages"), ep, 1).payload
    assert "metadata" not in messages
    assert LoadConfig(endpoint=ep.url, prompts=PROMPTS).echo(prompts="p")["domain_metadata"] is True
