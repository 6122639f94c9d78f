"""The options ``load`` and ``sweep`` share, declared and checked once: both drive servers with one client.

The workload, the load levels, what every request asks, the client's timeouts, the SLO and the per-request
outputs mean the same in either command. The defaults are ``load.config.LoadConfig``'s (a test holds
them equal; the CLI does not import the config at start-up, to keep ``specmeter --help`` fast).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from specmeter.cli.common import check_range, fail, parse_float_list, parse_int_list
from specmeter.exitcodes import EXIT_FAILED

if TYPE_CHECKING:
    from specmeter.load.config import Phase

__all__ = [
    "CLIENT_PROCESSES",
    "MAX_TOKENS",
    "STALL_TIMEOUT",
    "TOP_P",
    "WARMUP",
    "WARMUP_PER_LEVEL",
    "ApiKey",
    "ClientProcesses",
    "CsvOut",
    "JsonOut",
    "Limit",
    "LogOut",
    "MaxErrorRate",
    "MaxTokens",
    "Model",
    "Prompts",
    "Quiet",
    "RequestTimeout",
    "Slo",
    "StallTimeout",
    "TopP",
    "Warmup",
    "WarmupPerLevel",
    "check_client",
    "check_failures",
    "levels",
    "levels_config",
]

WARMUP, MAX_TOKENS, TOP_P, STALL_TIMEOUT, CLIENT_PROCESSES = 2, 128, 1.0, 60.0, 1  # LoadConfig's
WARMUP_PER_LEVEL: int | None = None  # LoadConfig's: fill each level once

Prompts = Annotated[
    Path, typer.Option("--prompts", help="Golden set: specmeter JSONL or Spec-Bench question.jsonl.")
]
Limit = Annotated[
    int | None,
    typer.Option("--limit", help="Requests per level and server (default: one pass over the prompts)."),
]
Warmup = Annotated[int, typer.Option("--warmup", help="Warm-up requests per server before measuring.")]
WarmupPerLevel = Annotated[
    int | None,
    typer.Option(
        "--warmup-per-level",
        help="Unrecorded warm-up requests at each level's own load just before it, per server (default: "
        "enough to fill the level once, one per concurrent stream; 0 = none).",
    ),
]
MaxTokens = Annotated[
    int, typer.Option("--max-tokens", help="Output tokens per request (unless the prompt says).")
]
TopP = Annotated[float, typer.Option("--top-p", help="Nucleus sampling sent with every request.")]
Model = Annotated[
    str | None, typer.Option("--model", help="Model name to request (default: the server's first model).")
]
ApiKey = Annotated[str | None, typer.Option("--api-key", envvar="SPECMETER_API_KEY", help="Bearer token.")]
StallTimeout = Annotated[
    float, typer.Option("--stall-timeout", help="Seconds without data before a stream fails.")
]
RequestTimeout = Annotated[
    float | None, typer.Option("--request-timeout", help="Seconds per request, overall.")
]
ClientProcesses = Annotated[
    int,
    typer.Option(
        "--client-processes",
        help="Worker processes that read the streams, each stamping arrivals on its own event loop "
        "(TTFT stays exact with many streams open; costs their CPU).",
    ),
]
MaxErrorRate = Annotated[
    float | None,
    typer.Option(
        "--max-error-rate",
        help="Exit 1 when more than this share of the requests sent (0 to 1, over every level and every "
        "server) failed.",
    ),
]
Slo = Annotated[
    str | None,
    typer.Option(
        "--slo",
        help="Per-request limits, any subset: ttft_p99_ms=…,tpot_p99_ms=…,gap_p99_ms=…,"
        "gap_per_token_p99_ms=… → attainment (Wilson 95%) and goodput per level.",
    ),
]
JsonOut = Annotated[Path | None, typer.Option("--json", help="Write the whole result as JSON.")]
CsvOut = Annotated[Path | None, typer.Option("--csv", help="Write one CSV row per request.")]
LogOut = Annotated[
    Path | None, typer.Option("--log", help="Per-request JSONL log (tokens, latency, accepted).")
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress and no tables.")]


def check_client(
    *,
    limit: int | None,
    warmup: int,
    max_tokens: int,
    top_p: float,
    timeouts: dict[str, float | None],
    client_processes: int = CLIENT_PROCESSES,
    max_error_rate: float | None = None,
    warmup_per_level: int | None = None,
) -> None:
    """The shared options' ranges (and the command's ``timeouts``, by option): one ``error:`` line each,
    before any file is read; ``LoadConfig`` checks the same ranges again for library callers."""
    from specmeter.load.config import MAX_CLIENT_PROCESSES, MAX_SECONDS

    check_range("--limit", limit, low=1)
    check_range("--max-tokens", max_tokens, low=1)
    check_range("--warmup", warmup, low=0)
    check_range("--warmup-per-level", warmup_per_level, low=0)
    check_range("--top-p", top_p, low=0, low_open=True, high=1)
    for name, seconds in timeouts.items():
        check_range(name, seconds, low=0, low_open=True, high=MAX_SECONDS)
    if not 1 <= client_processes <= MAX_CLIENT_PROCESSES:
        fail(f"--client-processes must be between 1 and {MAX_CLIENT_PROCESSES}, got {client_processes}")
    check_range("--max-error-rate", max_error_rate, low=0, high=1)


def check_failures(sent: int, failed: int, errors: Mapping[str, int], max_error_rate: float | None) -> None:
    """``--max-error-rate``: exit 1 (one line) when more than that share of the ``sent`` requests failed;
    ``errors`` counts the failures by kind (the three commonest are named)."""
    if max_error_rate is None or sent == 0 or failed / sent <= max_error_rate:
        return
    causes = ", ".join(f"{kind} ×{n}" for kind, n in Counter(errors).most_common(3))
    fail(f"--max-error-rate {max_error_rate:g}: {failed} of {sent} requests failed ({failed / sent:.1%}: "
         f"{causes})", code=EXIT_FAILED)  # fmt: skip


def levels(concurrency: str | None, rate: str | None) -> list[Phase]:
    """The load levels: one per ``--rate`` (requests/s, ascending), else one per ``--concurrency``."""
    from specmeter.load.config import Phase

    if rate is not None:
        rates = sorted(parse_float_list(rate, "--rate", low=0, low_open=True, unit="requests per second"))
        return [Phase(rate=r) for r in rates]
    return [Phase(concurrency=c) for c in parse_int_list(concurrency or "1", "--concurrency")]


def levels_config(phases: Sequence[Phase]) -> dict[str, Any]:
    """The levels as the result's run config records them."""
    return {
        "concurrency": [p.concurrency for p in phases if p.concurrency is not None] or None,
        "rate": [p.rate for p in phases if p.rate is not None] or None,
    }
