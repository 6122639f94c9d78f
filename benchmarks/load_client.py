"""Benchmark: how much load ``specmeter load``'s streaming client sustains, and how exactly it stamps TTFT.

A minimal streaming server runs in a separate process (a raw asyncio HTTP/1.1 server, so the server costs
as little as possible and does not share the client's event loop). It answers every request with an SSE
stream of ``--chunks`` chunks sent as fast as the socket takes them, in the OpenAI completions shape with
``token_ids`` and running ``usage`` (what ``load`` asks vLLM for), and stamps each chunk with its send time
(``time.perf_counter()``: CLOCK_MONOTONIC on Linux, one clock for both processes on one machine).

The client is ``specmeter.load.client.stream_request`` — the code ``load`` runs — driven closed-loop at
each concurrency level. Per level it prints, measured side by side in this one run:

- streams completed / failed and the peak number of streams in flight,
- chunks/s and tokens/s the client parsed, and requests/s,
- TTFT error = client-measured TTFT − server-stamped TTFT (server send time of the first chunk − the
  client's request start), p50/p90/p99: how late the client notices a first token under that load,
- the client's CPU use (CPU seconds per wall second): near 100 % it is the bottleneck; well below, a
  large TTFT error means the process waited for a CPU other processes held.

Goals on the project's 2-core machine: ≥ 256 concurrent streams sustained (all complete, none stalls), and
median TTFT error < 2 ms at concurrency 64. A full run takes well under two minutes.

``--ttft-table 1,2,auto`` runs only the paced server at concurrency 1, 16, 64 and 256 (``--paced-levels``),
once per client process count (``load --client-processes N``: ``load.workers``; ``auto`` is what ``load``
picks by default, ``LoadConfig.client_process_count``), and prints the TTFT error table with each row's
client CPU and its busiest process's (about a minute per repeat). ``--http lean,httpx`` runs every row
with both HTTP clients one after the other — ``load.http1``, what ``load`` uses for ``http://``, and httpx,
what it used before — so the two compare within one run, under the same machine load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

_HEADERS = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)
_LENGTH = re.compile(rb"content-length:\s*(\d+)", re.IGNORECASE)


# ------------------------------------------------------------------------------------------- server


def _frame(payload: bytes) -> bytes:
    event = b"data: " + payload + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(event), event)


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:  # keep-alive: one connection serves many requests
            head = await reader.readuntil(b"\r\n\r\n")
            match = _LENGTH.search(head)
            body = await reader.readexactly(int(match.group(1))) if match else b"{}"
            request = json.loads(body)
            chunks = int(request.get("max_tokens", 64))
            per_chunk = int(request.get("tokens_per_chunk", 1))
            interval = float(request.get("interval_ms", 0.0)) / 1000.0
            writer.write(_HEADERS)
            produced = 0
            for i in range(chunks):
                if interval and i:
                    await asyncio.sleep(interval)
                produced += per_chunk
                ids = ",".join(str(100 + i * per_chunk + j) for j in range(per_chunk))
                payload = (
                    b'{"id":"cmpl-b","object":"text_completion","choices":[{"index":0,"text":" w",'
                    b'"token_ids":[%s],"finish_reason":null}],"usage":{"prompt_tokens":1,'
                    b'"completion_tokens":%d,"total_tokens":%d},"ts":%r}'
                    % (ids.encode(), produced, produced + 1, time.perf_counter())
                )
                writer.write(_frame(payload))
                await writer.drain()  # only waits when the client falls behind (socket buffer full)
            final = (
                b'{"id":"cmpl-b","choices":[{"index":0,"text":"","token_ids":[],"finish_reason":"length"}]}'
            )
            writer.write(_frame(final) + _frame(b"[DONE]") + b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


def _serve(port_out: Any, cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})

    async def main() -> None:
        server = await asyncio.start_server(_handle, "127.0.0.1", 0, backlog=4096)
        port_out.send(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


# ------------------------------------------------------------------------------------------- client


@dataclass
class Level:
    concurrency: int
    requests: int
    ok: int
    failed: int
    peak: int
    wall_s: float
    chunks: int
    tokens: int
    ttft_error_ms: list[float]
    client_ttft_ms: list[float]
    errors: list[str]
    client_cpu: float = 0.0  # client CPU seconds (worker processes included) per wall second during the level
    processes: int = 1  # processes that read the streams (load --client-processes)
    http: str = "lean"  # the HTTP client that read them: load.http1 (lean) or httpx (load before it)
    client_cpu_busiest: float = 0.0  # the busiest of those processes' CPU seconds per wall second


async def _level(
    url: str,
    concurrency: int,
    requests: int,
    chunks: int,
    per_chunk: int,
    interval_ms: float,
    stagger: bool = False,
    processes: int = 1,
    http: str = "lean",
) -> Level:
    from specmeter.load.client import StreamRequest
    from specmeter.load.loop import Streams
    from specmeter.load.workers import WorkerStreams

    payload = {
        "model": "bench",
        "prompt": "x",
        "max_tokens": chunks,
        "tokens_per_chunk": per_chunk,
        "interval_ms": interval_ms,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    request = StreamRequest("r", "bench", url + "/v1/completions", payload)
    todo = iter(range(requests))
    in_flight = peak = 0
    outcomes = []
    rng = random.Random(concurrency)
    # What `load` runs: one process with small sharded pools, or `--client-processes N` workers.
    lean = http == "lean"
    streams = (
        WorkerStreams(processes, stall_timeout=30.0, lean_http=lean)
        if processes > 1
        else Streams(stall_timeout=30.0, lean_http=lean)
    )
    try:
        await streams.start()
        streams.prepare(concurrency)
        # Warm the pools so the level measures streaming, not TCP handshakes.
        await asyncio.gather(*(streams.send(request, slot) for slot in range(concurrency)))

        async def worker(slot: int) -> None:
            nonlocal in_flight, peak
            if stagger:  # start at a random point of one chunk interval, as independent users would
                await asyncio.sleep(rng.uniform(0.0, interval_ms / 1000.0))
            for _ in todo:
                in_flight += 1
                peak = max(peak, in_flight)
                outcomes.append(await streams.send(request, slot))
                in_flight -= 1

        start, cpu = time.perf_counter(), time.process_time() + streams.cpu_seconds()
        per0 = (time.process_time(), *streams.cpu_by_process())
        await asyncio.gather(*(worker(slot) for slot in range(concurrency)))
        wall = time.perf_counter() - start
        cpu = time.process_time() + streams.cpu_seconds() - cpu
        per = (time.process_time(), *streams.cpu_by_process())
        busiest = max(b - a for a, b in zip(per0, per, strict=False))
    finally:
        await streams.aclose()
    ok = [o for o in outcomes if o.ok]
    errors = sorted({o.error or "?" for o in outcomes if not o.ok})
    ttft_error, client_ttft = [], []
    for o in ok:
        first = o.first_payload or {}
        if "ts" in first and o.record.emissions:
            received = o.started_at + o.record.emissions[0].t
            ttft_error.append((received - float(first["ts"])) * 1000.0)
            client_ttft.append(o.record.ttft_s * 1000.0)
    return Level(
        concurrency,
        len(outcomes),
        len(ok),
        len(outcomes) - len(ok),
        peak,
        wall,
        sum(len(o.record.emissions) for o in ok),
        sum(o.record.output_tokens for o in ok),
        ttft_error,
        client_ttft,
        errors,
        cpu / wall,
        processes,
        http,
        busiest / wall,
    )


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _table(title: str, results: list[Level]) -> None:
    print(title)
    print(
        f"{'conc':>5} {'ok':>6} {'fail':>4} {'peak':>5} {'chunks/s':>9} {'tokens/s':>9} {'req/s':>7} "
        f"{'TTFT err p50':>12} {'p90':>8} {'p99':>8} {'client TTFT p50':>15} {'client CPU':>10}"
    )
    for r in results:
        print(
            f"{r.concurrency:>5} {r.ok:>6} {r.failed:>4} {r.peak:>5} {r.chunks / r.wall_s:>9.0f} "
            f"{r.tokens / r.wall_s:>9.0f} {r.ok / r.wall_s:>7.1f} {_pct(r.ttft_error_ms, 0.5):>9.3f} ms "
            f"{_pct(r.ttft_error_ms, 0.9):>8.3f} {_pct(r.ttft_error_ms, 0.99):>8.3f} "
            f"{_pct(r.client_ttft_ms, 0.5):>12.3f} ms {100 * r.client_cpu:>9.0f}%"
        )
        for e in r.errors[:3]:
            print(f"      error: {e}")


def _median_at(results: list[Level], concurrency: int) -> float:
    level = next((r for r in results if r.concurrency == concurrency), None)
    return statistics.median(level.ttft_error_ms) if level and level.ttft_error_ms else float("nan")


def _start_server(pin: bool) -> tuple[Any, str]:
    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    server = ctx.Process(target=_serve, args=(send, 1 if pin else None), daemon=True)
    server.start()
    return server, f"http://127.0.0.1:{receive.recv()}"


def auto_processes(concurrency: int, requests: int) -> int:
    """What ``load --client-processes auto`` (the default) starts for one level of this many streams."""
    from specmeter.load.config import LoadConfig, Phase
    from specmeter.load.limits import client_cores

    cfg = LoadConfig(endpoint="http://127.0.0.1:9", prompts=(), phases=(Phase(concurrency=concurrency),),
                     limit=requests)  # fmt: skip
    return cfg.client_process_count(client_cores())


def ttft_table(args: argparse.Namespace) -> int:
    """Client TTFT − server-stamped TTFT against the paced server, per client process count and level."""
    processes = [x.strip() for x in args.ttft_table.split(",") if x.strip()]
    levels = (
        [int(x) for x in args.paced_levels.split(",") if x]
        if args.paced_levels != "1,64,256"
        else [1, 16, 64, 256]
    )
    modes = [m for m in (("lockstep", False), ("staggered", True)) if m[0] in args.modes.split(",")]
    clients = [h for h in args.http.split(",") if h]
    server, url = _start_server(args.pin)
    rows: list[tuple[str, str, Level]] = []
    try:
        print(
            f"paced server on {url}: one chunk per {args.interval_ms:g} ms, {args.paced_chunks} chunks per "
            f"stream; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} before the run"
        )
        for _ in range(args.repeats):
            for c in levels:
                requests = max(args.requests_per_stream * c, 4 if args.smoke else 40)
                for mode, stagger in modes:
                    for p in processes:
                        n = auto_processes(c, requests) if p == "auto" else int(p)
                        for http in clients:  # side by side: the same level, one client after the other
                            level = _level(url, c, requests, args.paced_chunks, args.tokens_per_chunk,
                                           args.interval_ms, stagger, n, http)  # fmt: skip
                            rows.append((mode, p, asyncio.run(level)))
    finally:
        server.terminate()
        server.join(5)
    print(f"{'conc':>5} {'streams':>9} {'client procs':>12} {'http':>6} {'requests':>8} {'TTFT err p50':>12} "
          f"{'p90':>8} {'p99':>8} {'client CPU':>10} {'busiest':>8}")  # fmt: skip
    for mode, p, r in rows:
        procs = f"{r.processes}" + ("a" if p == "auto" else "")
        print(
            f"{r.concurrency:>5} {mode:>9} {procs:>12} {r.http:>6} {r.ok:>8} "
            f"{_pct(r.ttft_error_ms, 0.5):>9.3f} ms {_pct(r.ttft_error_ms, 0.9):>8.3f} "
            f"{_pct(r.ttft_error_ms, 0.99):>8.3f} {100 * r.client_cpu:>9.0f}% "
            f"{100 * r.client_cpu_busiest:>7.0f}%"
        )
        if r.failed:
            print(f"      {r.failed} failed: {'; '.join(r.errors[:3])}")
    print(f"load average {os.getloadavg()[0]:.1f} after the run")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump([{"mode": m, "setting": p, **r.__dict__} for m, p, r in rows], fh)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--levels", default="1,64,256,512", help="Concurrency levels, flooding server.")
    parser.add_argument("--paced-levels", default="1,64,256", help="Concurrency levels, paced server.")
    parser.add_argument("--chunks", type=int, default=64, help="Chunks per stream, flooding server.")
    parser.add_argument("--tokens-per-chunk", type=int, default=1, help="Tokens in every chunk.")
    parser.add_argument("--requests", type=int, default=4, help="Flooding: requests per level = this × conc.")
    parser.add_argument("--interval-ms", type=float, default=25.0, help="Chunk interval of the paced server.")
    parser.add_argument("--paced-chunks", type=int, default=16, help="Chunks per stream, paced server.")
    parser.add_argument("--pin", action="store_true", help="Pin the server to CPU 1 and the client to CPU 0.")
    parser.add_argument(
        "--ttft-table",
        metavar="PROCESSES",
        help="Only the TTFT error table: paced server, levels 1,16,64,256 (or --paced-levels), for each "
        "client process count in this list (e.g. 1,2,auto: load --client-processes).",
    )
    parser.add_argument("--json", help="Also write the figures as JSON to this file.")
    parser.add_argument(
        "--http",
        default="lean",
        help="--ttft-table: the HTTP clients to compare, side by side per level: lean (load.http1, what load "
        "uses for http://), httpx (what it used before), or lean,httpx.",
    )
    parser.add_argument("--modes", default="lockstep,staggered", help="--ttft-table: lockstep, staggered.")
    parser.add_argument(
        "--repeats", type=int, default=1, help="--ttft-table: run the whole table this often."
    )
    parser.add_argument(
        "--requests-per-stream", type=int, default=2, help="--ttft-table: requests per level = this × conc."
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="Test run (seconds): levels 1,4 on both servers, 8 chunks flooding, 4 paced at 5 ms, a few "
        "requests per level (also with --ttft-table).",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.levels = args.paced_levels = "1,4"
        args.chunks, args.paced_chunks, args.interval_ms, args.requests = 8, 4, 5.0, 2
    if args.ttft_table:
        return ttft_table(args)
    flood_levels = [int(x) for x in args.levels.split(",") if x]
    paced_levels = [int(x) for x in args.paced_levels.split(",") if x]

    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    server = ctx.Process(target=_serve, args=(send, 1 if args.pin else None), daemon=True)
    server.start()
    if args.pin:
        os.sched_setaffinity(0, {0})
    runs: dict[str, list[Level]] = {"flood": [], "lockstep": [], "staggered": []}
    try:
        url = f"http://127.0.0.1:{receive.recv()}"
        print(
            f"streaming server on {url} (pid {server.pid}), client pid {os.getpid()}, {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.1f} before the run"
        )
        for c in flood_levels:
            n = max(args.requests * c, 4 if args.smoke else 100)
            runs["flood"].append(asyncio.run(_level(url, c, n, args.chunks, args.tokens_per_chunk, 0.0)))
        for name, stagger in (("lockstep", False), ("staggered", True)):
            for c in paced_levels:
                level = _level(
                    url,
                    c,
                    max(2 * c, 4 if args.smoke else 20),
                    args.paced_chunks,
                    args.tokens_per_chunk,
                    args.interval_ms,
                    stagger,
                )
                runs[name].append(asyncio.run(level))
    finally:
        server.terminate()
        server.join(5)

    paced = f"server paced at one chunk per {args.interval_ms:g} ms, {args.paced_chunks} chunks per stream"
    _table(
        f"server sends as fast as possible, {args.chunks} chunks × {args.tokens_per_chunk} token",
        runs["flood"],
    )
    _table(paced + ", streams in lockstep (started together)", runs["lockstep"])
    _table(paced + ", streams started at random points of one interval", runs["staggered"])
    flood = runs["flood"]
    sustained = max((r.concurrency for r in flood if r.failed == 0 and r.peak == r.concurrency), default=0)
    print(
        f"sustained concurrent streams, flooding server (all complete, peak reached): {sustained}  "
        f"[goal ≥ 256: {'met' if sustained >= 256 else 'NOT met'}]"
    )
    for name, results in runs.items():
        m = _median_at(results, 64)
        print(
            f"median TTFT error at concurrency 64, {name}: {m:.3f} ms  "
            f"[goal < 2 ms: {'met' if m < 2.0 else 'NOT met'}]"
        )
    print(f"load average {os.getloadavg()[0]:.1f} after the run")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({name: [r.__dict__ for r in rs] for name, rs in runs.items()}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
