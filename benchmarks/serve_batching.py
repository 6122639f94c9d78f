"""Benchmark: ``specmeter serve`` with continuous batching against the same server one request at a time.

Two servers on 127.0.0.1, each on a free port, with the same target, draft and k: one batching up to
``--max-batch`` sequences (default 16), the other with ``--max-batch 1`` (FIFO through the single-stream
loop, the previous behaviour). ``specmeter load`` — the client users run — drives each closed-loop at
``--concurrency`` (default 16) with the same greedy requests, in rounds that alternate which server goes
first, so drift of a shared machine hits both alike. Both servers are started by the benchmark in their own
process groups (``sweep.launch.ServerProcess``) and always stopped, whatever happens.

It prints, measured side by side in this one run: output tokens/s and requests/s of each server per round,
the throughput ratio batched / FIFO (ratio of totals, and its range over the rounds) against the goal of
issue 13 (> 3x at concurrency 16), the concurrency the client held, TTFT and latency medians (context:
queueing at ``--max-batch 1`` is what the batching removes), τ as each server reported it, and what else
ran (``load``'s machine sampler, the load average). Ratios only: never compare absolute figures of two runs
or machines. How to read the output: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "src" / "specmeter" / "assets"
MODELS = (ASSETS / "models" / "target", ASSETS / "models" / "draft-legal")
PROMPTS = ASSETS / "golden" / "legal.jsonl"
GOAL_RATIO = 3.0  # issue 13: batched serve at concurrency 16 vs --max-batch 1
HEALTH_TIMEOUT_S = 180.0


@dataclass
class Level:
    """One ``specmeter load`` run against one server: the figures of its result's ``load`` block."""

    server: str
    tokens: int
    wall_s: float
    completed: int
    failed: int
    held: float | None
    ttft_p50_ms: float | None
    latency_p50_ms: float | None
    tau: float | None
    machine: str | None
    message: str | None

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def requests_per_s(self) -> float:
        return self.completed / self.wall_s if self.wall_s > 0 else 0.0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--target", type=Path, help="target model directory (default: bundled target)")
    ap.add_argument("--draft", type=Path, help="draft model directory (default: bundled draft-legal)")
    ap.add_argument("--prompts", type=Path, default=PROMPTS, help="golden set (default: bundled legal)")
    ap.add_argument("--k", type=int, default=4, help="draft length of both servers (default 4)")
    ap.add_argument(
        "--max-batch", type=int, default=16, help="the batching server's --max-batch (default 16)"
    )
    ap.add_argument("--concurrency", type=int, default=16, help="closed-loop concurrency (default 16)")
    ap.add_argument("--requests", type=int, default=64, help="requests per server and round (default 64)")
    ap.add_argument("--max-tokens", type=int, default=64, help="output tokens per request (default 64)")
    ap.add_argument(
        "--rounds", type=int, default=2, help="rounds; each server runs once per round (default 2)"
    )
    ap.add_argument("--warmup", type=int, default=4, help="load's warm-up requests per run (default 4)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of each server (default 1)")
    ap.add_argument("--json", type=Path, help="also write every run's figures and the ratios as JSON")
    ap.add_argument("--quick", action="store_true", help="smoke run: 32 requests, 32 tokens, 1 round")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="test run (seconds): concurrency 2, 4 requests, 8 tokens, 1 round",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.requests, args.max_tokens, args.rounds = min(args.requests, 32), min(args.max_tokens, 32), 1
    if args.smoke:
        args.requests, args.max_tokens, args.rounds = min(args.requests, 4), min(args.max_tokens, 8), 1
        args.concurrency, args.max_batch, args.warmup = min(args.concurrency, 2), min(args.max_batch, 2), 1
    for name in ("k", "max_batch", "concurrency", "requests", "max_tokens", "rounds", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.warmup < 0:
        ap.error("--warmup must be >= 0")
    if (args.target is None) != (args.draft is None):
        ap.error("give both --target and --draft, or neither")
    if args.target is None:
        args.target, args.draft = MODELS
    return args


def _tool(name: str) -> str:
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else name


def start(name: str, args: argparse.Namespace, max_batch: int, tmp: Path) -> Any:
    from specmeter.sweep.launch import ServerProcess, free_port

    port = free_port()
    argv = [
        _tool("specmeter"), "serve", "--target", str(args.target), "--draft", str(args.draft),
        "--k", str(args.k), "--max-batch", str(max_batch), "--host", "127.0.0.1", "--port", str(port),
        "--log-level", "warning",
    ]  # fmt: skip
    server = ServerProcess(name, argv, f"http://127.0.0.1:{port}", tmp / f"{name}.log")
    server.start(env={"OMP_NUM_THREADS": str(args.threads)})
    return server


def run_load(server: Any, args: argparse.Namespace, out: Path) -> Level:
    cmd = [
        _tool("specmeter"), "load", "--endpoint", server.url, "--prompts", str(args.prompts),
        "--api", "completions", "--concurrency", str(args.concurrency), "--limit", str(args.requests),
        "--max-tokens", str(args.max_tokens), "--temperature", "0", "--warmup", str(args.warmup),
        "--quiet", "--json", str(out),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not out.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"specmeter load against {server.name} exited with {done.returncode}: {tail}")
    result = json.loads(out.read_text())
    level = result["candidates"][0]
    load, summary = level["load"], level["summary"]
    hygiene = result.get("hygiene") or {}
    return Level(
        server=server.name,
        tokens=int(summary.get("emitted_tokens") or 0),
        wall_s=load["wall_s"],
        completed=load["completed"],
        failed=load["failed"],
        held=load["effective_concurrency"],
        ttft_p50_ms=(summary.get("ttft_ms") or {}).get("p50"),
        latency_p50_ms=(summary.get("latency_ms") or {}).get("p50"),
        tau=summary.get("acceptance_length"),
        machine=hygiene.get("verdict"),
        message=hygiene.get("message"),
    )


def total_rate(levels: Sequence[Level]) -> float:
    wall = sum(lv.wall_s for lv in levels)
    return sum(lv.tokens for lv in levels) / wall if wall > 0 else 0.0


def report(args: argparse.Namespace, rounds: list[dict[str, Level]]) -> dict[str, Any]:
    batched = [r["batched"] for r in rounds]
    fifo = [r["fifo"] for r in rounds]
    print(f"\nper run (closed loop at concurrency {args.concurrency}, {args.requests} requests each):")
    print(
        f"  {'round':>5}  {'server':<22} {'tokens/s':>9} {'req/s':>7} {'held':>5} {'TTFT p50':>10} "
        f"{'latency p50':>12} {'τ':>5}  failed  machine"
    )
    for i, r in enumerate(rounds, 1):
        for name in ("batched", "fifo"):
            lv = r[name]
            label = f"--max-batch {args.max_batch}" if name == "batched" else "--max-batch 1"
            print(
                f"  {i:>5}  {label:<22} {lv.tokens_per_s:9.1f} {lv.requests_per_s:7.2f} "
                f"{lv.held or 0:5.1f} {lv.ttft_p50_ms or 0:8.0f} ms {lv.latency_p50_ms or 0:9.0f} ms "
                f"{'—' if lv.tau is None else f'{lv.tau:.2f}':>5}  {lv.failed:>6}  {lv.machine or '—'}"
            )
    per_round = [r["batched"].tokens_per_s / r["fifo"].tokens_per_s for r in rounds if r["fifo"].tokens_per_s]
    ratio = total_rate(batched) / total_rate(fifo) if total_rate(fifo) else float("nan")
    span = f"{min(per_round):.2f}x – {max(per_round):.2f}x" if per_round else "—"
    met = ratio > GOAL_RATIO
    print("\nthroughput ratio, measured side by side (output tokens/s; > 1: batching is faster):")
    print(
        f"  serve --max-batch {args.max_batch} / --max-batch 1 at concurrency {args.concurrency}: "
        f"{ratio:5.2f}x   (per round {span})   goal > {GOAL_RATIO:.0f}x: {'met' if met else 'MISSED'}"
    )
    ttft = [r["fifo"].ttft_p50_ms / r["batched"].ttft_p50_ms for r in rounds
            if r["fifo"].ttft_p50_ms and r["batched"].ttft_p50_ms]  # fmt: skip
    if ttft:
        print(
            f"  TTFT p50 --max-batch 1 / --max-batch {args.max_batch}: {sum(ttft) / len(ttft):5.2f}x "
            "(mean over rounds: the queue batching removes)"
        )
    tokens = {name: sum(r[name].tokens for r in rounds) for name in ("batched", "fifo")}
    same = (
        "equal"
        if tokens["batched"] == tokens["fifo"]
        else f"DIFFER ({tokens['batched']} vs {tokens['fifo']})"
    )
    print(f"  output tokens of the two servers over the run (greedy, same requests): {same}")
    print("\nwhat else ran (load's machine sampler per run; the servers count as part of the measurement):")
    for i, r in enumerate(rounds, 1):
        for name in ("batched", "fifo"):
            lv = r[name]
            if lv.message:
                print(f"  round {i} {name}: {lv.message}")
    if not any(r[n].message for r in rounds for n in ("batched", "fifo")):
        print("  quiet in every run")
    return {
        "ratio": ratio,
        "per_round": per_round,
        "goal": GOAL_RATIO,
        "met": met,
        "tokens": tokens,
        "runs": [{n: vars(r[n]) for n in ("batched", "fifo")} for r in rounds],
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from specmeter.sweep.launch import LaunchError

    print(f"target  {args.target}\ndraft   {args.draft} · k={args.k} on both servers")
    print(
        f"prompts {args.prompts} (first {args.requests}) · greedy · max {args.max_tokens} tokens · "
        f"{args.rounds} round(s) · {args.threads} torch thread(s) per server"
    )
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} before the run")
    started = perf_counter()
    rounds: list[dict[str, Level]] = []
    with tempfile.TemporaryDirectory(prefix="serve-batching-") as tmp_name:
        tmp = Path(tmp_name)
        servers: dict[str, Any] = {}
        try:
            servers["batched"] = start("batched", args, args.max_batch, tmp)
            servers["fifo"] = start("fifo", args, 1, tmp)
            for server in servers.values():
                waited = asyncio.run(server.wait_healthy(HEALTH_TIMEOUT_S))
                print(f"  {server.name} server ({server.url}) healthy after {waited:.0f} s", flush=True)
            order = ["batched", "fifo"]
            for r in range(args.rounds):
                this: dict[str, Level] = {}
                for name in order if r % 2 == 0 else order[::-1]:
                    this[name] = run_load(servers[name], args, tmp / f"{name}-{r}.json")
                rounds.append(this)
                print(f"  round {r + 1}/{args.rounds} done ({perf_counter() - started:.0f} s)", flush=True)
        except (LaunchError, RuntimeError) as e:
            print(f"error: {e}", file=sys.stderr)
            for server in servers.values():
                if not server.alive():
                    print(f"  {server.name} log tail: {server.last_line()}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        finally:
            for server in servers.values():
                server.stop()
    figures = report(args, rounds)
    print(f"load average {os.getloadavg()[0]:.1f} after the run ({perf_counter() - started:.0f} s)")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    failed = sum(r[n].failed for r in rounds for n in ("batched", "fifo"))
    if failed:
        print(f"FAIL: {failed} request(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
