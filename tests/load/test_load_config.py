"""``LoadConfig`` checks itself (issue 11: configs validate once), so a library caller — sweep, a benchmark,
a notebook — cannot start a load run the CLI would refuse: each bad field is one ``LoadConfigError`` naming
the option it comes from."""

from __future__ import annotations

import math
from typing import Any

import pytest

from specmeter.load.config import MAX_CLIENT_PROCESSES, LoadConfig, LoadConfigError, LoadError, Phase
from specmeter.metrics.acceptance import K_MAX_LIMIT

BAD: list[tuple[dict[str, Any], str]] = [
    ({"phases": ()}, "--concurrency/--rate"),
    ({"phases": (Phase(concurrency=0),)}, "--concurrency"),
    ({"phases": (Phase(rate=0.0),)}, "--rate"),
    ({"phases": (Phase(rate=math.nan),)}, "--rate"),
    ({"phases": (Phase(concurrency=2, rate=1.0),)}, "either a --concurrency or a --rate"),
    ({"limit": 0}, "--limit"),
    ({"limit": 3, "duration": 5.0}, "--limit and --duration"),
    ({"duration": math.inf}, "--duration"),
    ({"warmup": -1}, "--warmup"),
    ({"max_tokens": 0}, "--max-tokens"),
    ({"temperature": math.nan}, "--temperature"),
    ({"temperatures": (0.0, 2.5)}, "--temperature"),
    ({"top_p": 0.0}, "--top-p"),
    ({"burstiness": 0.0}, "--burstiness"),
    ({"trace_speed": -1.0}, "--trace-speed"),
    ({"stall_timeout": 0.0}, "--stall-timeout"),
    ({"request_timeout": math.inf}, "--request-timeout"),
    ({"client_processes": MAX_CLIENT_PROCESSES + 1}, "--client-processes"),
    ({"k": K_MAX_LIMIT + 1}, "--k"),
    ({"k": 10**23}, "--k"),
    ({"k": 10**5000}, f"--k must be in [1, {K_MAX_LIMIT}], got an integer of 5001 digits"),  # no overflow
    ({"blocks": 0}, "--blocks"),
    ({"arrival": "bursty"}, "--arrival"),
    ({"chunk_counts": "all"}, "--chunk-counts"),
    ({"api": "grpc"}, "--api"),
    ({"extra_body": {"a": "\ud800"}}, "--extra-body: the request holds a lone surrogate"),
    ({"extra_body": {"a": math.nan}}, "--extra-body: the request body is not JSON"),
]


@pytest.mark.parametrize(("fields", "names"), BAD, ids=[names for _, names in BAD])
def test_a_bad_field_is_one_error_naming_its_option(fields: dict[str, Any], names: str) -> None:
    with pytest.raises(LoadConfigError) as caught:
        LoadConfig(endpoint="http://127.0.0.1:9", prompts=(), **fields)
    message = str(caught.value)
    assert names in message and "\n" not in message
    assert isinstance(caught.value, LoadError)  # what load's and sweep's callers already catch


def test_the_edges_of_every_range_pass() -> None:
    cfg = LoadConfig(
        endpoint="http://127.0.0.1:9", prompts=(), phases=(Phase(concurrency=1), Phase(rate=0.01)), limit=1,
        warmup=0, max_tokens=1, temperature=2.0, temperatures=(0.0, 2.0), top_p=1.0, k=K_MAX_LIMIT,
        client_processes=MAX_CLIENT_PROCESSES, blocks=1, arrival="gamma", burstiness=0.1,
    )  # fmt: skip
    assert cfg.k == K_MAX_LIMIT
    assert LoadConfig(endpoint="", prompts=(), phases=(Phase(trace=True),), duration=1.0).duration == 1.0
