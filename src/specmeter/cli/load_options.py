"""The options ``load`` and ``sweep`` share, declared once (``cli.options.shared``): both drive servers with
one client.

The workload, what every request asks, the client's timeouts, the SLO and the per-request outputs mean
the same in either command; their defaults are ``load.config.LoadConfig``'s and :func:`load_config` turns
them into a ``LoadConfig``, which checks every one of them (a bad one is one ``error:`` line naming the
option, before any file is read).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specmeter.cli.common import check_range, fail, parse_float_list, parse_int_list, parse_option
from specmeter.cli.options import Shared, option
from specmeter.exitcodes import EXIT_FAILED
from specmeter.load.config import STREAMS_PER_CLIENT_PROCESS, LoadConfig, LoadConfigError, Phase

__all__ = ["HEAD", "TAIL", "check_failures", "levels", "load_config"]

_C = LoadConfig

HEAD: tuple[Shared, ...] = (
    option(
        "prompts",
        list[Path],
        "--prompts",
        help="Golden set: specmeter JSONL or Spec-Bench question.jsonl; repeat to combine several (their "
        "categories together; an id may appear in one file only), as bench and select take them.",
    ),
)
TAIL: tuple[Shared, ...] = (
    option("limit", int | None, "--limit",
           help="Requests per level and server (default: one pass over the prompts).", default=_C.limit),
    option("warmup", int, "--warmup", help="Warm-up requests per server before measuring.",
           default=_C.warmup),
    option("warmup_per_level", int | None, "--warmup-per-level",
           help="Unrecorded warm-up requests at each level's own load just before it, per server (default: "
           "enough to fill the level once, one per concurrent stream; 0 = none).",
           default=_C.warmup_per_level),
    option("max_tokens", int, "--max-tokens", help="Output tokens per request (unless the prompt says).",
           default=_C.max_tokens),
    option("top_p", float, "--top-p", help="Nucleus sampling sent with every request.", default=_C.top_p),
    option("model", str | None, "--model", help="Model name to request (default: the server's first model).",
           default=_C.model),
    option("api_key", str | None, "--api-key", help="Bearer token.", envvar="SPECMETER_API_KEY",
           default=_C.api_key),
    option("stall_timeout", float, "--stall-timeout", help="Seconds without data before a stream fails.",
           default=_C.stall_timeout),
    option("request_timeout", float | None, "--request-timeout", help="Seconds per request, overall.",
           default=_C.request_timeout),
    option("client_processes", str, "--client-processes",
           help="Processes that read the streams, each stamping arrivals on its own event loop (TTFT stays "
           "exact with many streams open; costs their CPU): a number (1 = this process), or auto: one per "
           f"{STREAMS_PER_CLIENT_PROCESS} streams of the busiest level, at most one per core.",
           default=_C.client_processes),
    option("slo", str | None, "--slo",
           help="Per-request limits, any subset: ttft_p99_ms=…,tpot_p99_ms=…,gap_p99_ms=…,"
           "gap_per_token_p99_ms=… → attainment (Wilson 95%) and goodput per level.", default=None),
    option("json_out", Path | None, "--json", help="Write the whole result as JSON.", default=None),
    option("csv_out", Path | None, "--csv", help="Write one CSV row per request.", default=None),
    option("log_out", Path | None, "--log", help="Per-request JSONL log (tokens, latency, accepted).",
           default=None),
    option("quiet", bool, "--quiet", "-q", help="No progress and no tables.", default=False),
    option("max_error_rate", float | None, "--max-error-rate",
           help="Exit 1 when more than this share of the requests sent (0 to 1, over every level and every "
           "server) failed.", default=None),
)  # fmt: skip

# The shared options that are LoadConfig fields of the same name.
_CONFIG_FIELDS = (
    "limit", "warmup", "warmup_per_level", "max_tokens", "top_p", "model", "api_key", "stall_timeout",
    "request_timeout", "client_processes",
)  # fmt: skip


def load_config(options: Mapping[str, Any], **fields: Any) -> LoadConfig:
    """A validated LoadConfig from the shared options plus a command's own ``fields`` (the SLO parsed):
    every problem is one ``error:`` line naming its option, exit 2."""
    from specmeter.metrics.slo import SLO, SLOError

    check_range("--max-error-rate", options["max_error_rate"], low=0, high=1)  # the CLI's own bound
    slo = parse_option(SLO.parse, options["slo"], SLOError)
    try:
        return LoadConfig(**{name: options[name] for name in _CONFIG_FIELDS}, slo=slo, **fields)
    except LoadConfigError as e:
        fail(str(e))


def check_failures(sent: int, failed: int, errors: Mapping[str, int], max_error_rate: float | None) -> None:
    """``--max-error-rate``: exit 1 (one line) when more than that share of the ``sent`` requests failed;
    ``errors`` counts the failures by kind (the three commonest are named)."""
    if max_error_rate is None or sent == 0 or failed / sent <= max_error_rate:
        return
    causes = ", ".join(f"{kind} ×{n}" for kind, n in Counter(errors).most_common(3))
    fail(f"--max-error-rate {max_error_rate:g}: {failed} of {sent} requests failed ({failed / sent:.1%}: "
         f"{causes})", code=EXIT_FAILED)  # fmt: skip


def levels(concurrency: str | None, rate: str | None) -> list[Phase]:
    """The load levels: one per ``--rate`` (requests/s, ascending), else one per ``--concurrency``
    (``LoadConfig`` checks each)."""
    if rate is not None:
        return [Phase(rate=r) for r in sorted(parse_float_list(rate, "--rate", unit="requests per second"))]
    return [Phase(concurrency=c) for c in parse_int_list(concurrency or "1", "--concurrency")]
