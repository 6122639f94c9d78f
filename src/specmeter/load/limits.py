"""How much load one client machine can hold: the bounds of every level, rate, count and trace.

A load level the client cannot hold does not measure the server: it measures the client running out of
file descriptors or memory, or — before these bounds existed — spinning for minutes on a level that could
never start (``load --concurrency 1000000000`` built a hundred million connection pools, unkillable by
Ctrl-C, while ``--rate 1e-300`` or a trace line at t = 10⁸ s waited for years). So ``LoadConfig`` and
``SweepConfig`` refuse, with the bound in the message (docs/serving.md, "Limits"):

- **concurrency** (and a ``--search concurrency`` range): every stream holds one socket, so at most the
  process's open-file limit (``RLIMIT_NOFILE``'s hard limit, to which the run raises its soft limit) less
  ``FD_RESERVE`` descriptors kept for result files, worker pipes and /metrics scrapes; at most the available
  memory at ``STREAM_BYTES`` per stream; and never more than ``MAX_STREAMS`` (the TCP port space: one client
  address cannot hold more connections to one server);
- **rate**: ``MIN_RATE`` (a mean gap of a week, ``MAX_SECONDS``) to ``MAX_RATE`` requests/s;
- **counts**: ``--limit`` and ``--warmup`` up to ``MAX_REQUESTS`` per level and endpoint (every request's
  record is kept in memory until the level is summarised), ``--blocks`` up to ``MAX_BLOCKS``;
- **durations**: ``MAX_SECONDS`` for a level, a stall, a request, and a trace replay (its span / speed);
- **traces**: a regular file of at most ``MAX_TRACE_BYTES``, lines of at most ``MAX_TRACE_LINE_BYTES``, at
  most ``MAX_TRACE_LINES`` requests, times up to ``MAX_SECONDS``, ``--trace-speed`` within
  [``MIN_TRACE_SPEED``, ``MAX_TRACE_SPEED``].
"""

from __future__ import annotations

import contextlib
import os
import resource
from dataclasses import dataclass

__all__ = [
    "FD_RESERVE",
    "MAX_BLOCKS",
    "MAX_RATE",
    "MAX_REQUESTS",
    "MAX_SECONDS",
    "MAX_STREAMS",
    "MAX_TRACE_BYTES",
    "MAX_TRACE_LINES",
    "MAX_TRACE_LINE_BYTES",
    "MAX_TRACE_SPEED",
    "MIN_RATE",
    "MIN_TRACE_SPEED",
    "STREAM_BYTES",
    "StreamBound",
    "client_cores",
    "ensure_open_files",
    "stream_bound",
]

MAX_SECONDS = 7 * 86400.0  # a level, a stall, a request or a replay longer than a week is a typo
MAX_STREAMS = 65_535  # TCP ports: one client address holds at most this many connections to one server
FD_RESERVE = 64  # descriptors kept for result files, worker pipes, /metrics scrapes, the interpreter
STREAM_BYTES = 1 << 20  # memory held per open stream, with margin (pools, buffers, tasks, its records)
MAX_RATE = 10_000.0  # requests/s: far beyond what one client sustains (docs/serving.md, the benchmark)
MIN_RATE = 1.0 / MAX_SECONDS  # a mean gap of a week
MAX_REQUESTS = 1_000_000  # --limit, --warmup: per level and endpoint, every record kept until the summary
MAX_BLOCKS = 1_000  # --blocks: alternations per level (each reads /metrics twice)
MAX_TRACE_BYTES = 256 << 20  # a trace file: millions of requests
MAX_TRACE_LINE_BYTES = 1 << 20  # one trace line (Mooncake's hash_ids of a long prompt take a few KiB)
MAX_TRACE_LINES = 1_000_000  # requests in a trace, as --limit
MIN_TRACE_SPEED, MAX_TRACE_SPEED = 1e-3, 1e6  # --trace-speed


@dataclass(frozen=True)
class StreamBound:
    """The most streams this machine can hold at once, and why (for the error message)."""

    streams: int
    reason: str


def _open_file_limit() -> int | None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = hard if hard != resource.RLIM_INFINITY else soft
    return None if limit == resource.RLIM_INFINITY else int(limit)


def _available_memory() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # no psutil, no /proc: the memory bound is not known
        return None


def stream_bound() -> StreamBound:
    """The largest concurrency (open streams in one process) this machine holds: open files and memory."""
    bounds = [(MAX_STREAMS, f"{MAX_STREAMS} TCP ports to one server")]
    files = _open_file_limit()
    if files is not None:
        bounds.append((files - FD_RESERVE, f"open-file limit {files} less {FD_RESERVE} kept"))
    memory = _available_memory()
    if memory is not None:
        streams = memory // STREAM_BYTES
        bounds.append((streams, f"{streams} at 1 MiB in {memory / 2**30:.1f} GiB of available memory"))
    streams = max(1, min(n for n, _ in bounds))
    reason = ", ".join(text for _, text in bounds)
    return StreamBound(streams, f"this machine holds {streams} streams: the least of {reason}")


def ensure_open_files(streams: int) -> None:
    """Raise the soft open-file limit (up to the hard one) so ``streams`` sockets and the reserve fit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = streams + FD_RESERVE
    if soft == resource.RLIM_INFINITY or soft >= want:
        return
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


def client_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS says; else the machine's): the most
    stream-reading processes ``--client-processes auto`` starts (``LoadConfig.client_process_count``)."""
    if hasattr(os, "sched_getaffinity"):
        with contextlib.suppress(OSError):
            return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)
