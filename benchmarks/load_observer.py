"""Benchmark: does ``specmeter load`` slow down the server it measures? (the observer effect, issue 19)

One ``specmeter serve`` (bundled target + draft-legal, k = 4) runs for the whole benchmark. Against it, the
same workload — the first ``--limit`` legal golden prompts, concurrency ``--concurrency``, ``--max-tokens``
tokens, greedy, no warm-up of its own (the server is warmed once at the start) — is run by each client
variant in turn, interleaved (the order rotates every round) and repeated ``--repeats`` times. Every run is
a separate client process, as a user would start it. Around each run the benchmark reads the server's own
Prometheus histograms, so the figures measure the server, not the client:

- server e2e, TTFT, ITL and queue time means (histogram ``_sum`` / ``_count`` deltas), and the service
  time e2e − queue. By default the server generates one request at a time (``--max-batch 1``, FIFO, the
  setup issue 19 was reported with), so e2e ≈ requests in flight × service time: the queue part follows
  how much concurrency the client holds, the ITL part how fast the engine steps (extra per-chunk work, a
  client competing for the CPU). ``--max-batch N`` runs the batching server instead.
- what the client says: the concurrency it held (time-weighted in flight), its TTFT minus the server's.
- the client's CPU: seconds of CPU of the client process tree over the run (start-up included), and for
  ``specmeter load`` the share of a core during the level alone.

Variants (``specmeter load`` options):

| variant | request fields beyond the stream and the final usage |
|---|---|
| ``before`` | continuous usage + return_token_ids + seed (what ``load`` sent to a vLLM-like server before) |
| ``-usage`` | return_token_ids + seed |
| ``-token_ids`` | continuous usage + seed |
| ``-seed`` | continuous usage + return_token_ids |
| ``default`` | continuous usage only (``--chunk-counts auto``, today's default) |
| ``bare`` | nothing (``--chunk-counts none``: the final usage is spread over the chunks) |
| ``no-metrics`` | nothing, and no ``/metrics`` scrapes by the client (``--server unknown --no-metrics``) |
| ``aiperf`` | aiperf 0.13 from ``--aiperf`` (default /work/aiperf-venv/bin/aiperf), when it exists |

Server e2e and ITL are printed as the mean over the rounds with its range, other figures as means; the
ratio columns divide a variant's server e2e and ITL by ``default``'s in the same round (median over
rounds, with their range). Absolute times are of this machine and
this moment only: compare the ratios. About 20 s per run on 2 cores; the defaults take 3–4 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from specmeter.monitoring.promtext import parse_metrics

ASSETS = Path(__file__).resolve().parents[1] / "src" / "specmeter" / "assets"
HISTOGRAMS = {
    "e2e": "vllm:e2e_request_latency_seconds",
    "ttft": "vllm:time_to_first_token_seconds",
    "itl": "vllm:inter_token_latency_seconds",
    "queue": "vllm:request_queue_time_seconds",
}
VARIANTS: dict[str, list[str]] = {
    "before": ["--chunk-counts", "usage", "--request-seeds", "--extra-body", '{"return_token_ids": true}'],
    "-usage": ["--chunk-counts", "token_ids", "--request-seeds"],
    "-token_ids": ["--chunk-counts", "usage", "--request-seeds"],
    "-seed": ["--chunk-counts", "usage", "--extra-body", '{"return_token_ids": true}'],
    "default": [],
    "bare": ["--chunk-counts", "none"],
    "no-metrics": ["--server", "unknown", "--no-metrics"],
}
SMOKE_VARIANTS = "before,default,no-metrics"  # --smoke: the extra body, the default, no scrapes


@dataclass
class Run:
    variant: str
    server: dict[str, float]  # histogram means in ms, plus "requests"
    held: float | None = None
    client_ttft_ms: float | None = None
    cpu_total_s: float = 0.0  # client process tree, start-up included
    cpu_share: float | None = None  # specmeter load: CPU seconds per wall second during the level
    wall_s: float = 0.0
    failed: int = 0


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    model: str = ""
    log: list[str] = field(default_factory=list)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tool(name: str) -> str:
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else name


def start_server(k: int, max_batch: int) -> Server:
    port = _free_port()
    cmd = [
        _tool("specmeter"), "serve", "--target", str(ASSETS / "models" / "target"),
        "--draft", str(ASSETS / "models" / "draft-legal"), "--k", str(k), "--port", str(port),
        "--log-level", "warning", "--max-batch", str(max_batch),
    ]  # fmt: skip
    process = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL)
    server = Server(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"specmeter serve exited with {process.returncode}")
        try:
            models = httpx.get(server.url + "/v1/models", timeout=2).json()
            server.model = models["data"][0]["id"]
            return server
        except (httpx.HTTPError, ValueError, KeyError):
            time.sleep(0.5)
    stop_server(server)
    raise SystemExit("specmeter serve did not answer within 180 s")


def stop_server(server: Server) -> None:
    if server.process.poll() is None:
        os.killpg(server.process.pid, signal.SIGTERM)
        try:
            server.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait()


def histograms(url: str) -> dict[str, float]:
    snapshot = parse_metrics(httpx.get(url + "/metrics", timeout=10).text)
    out: dict[str, float] = {}
    for key, name in HISTOGRAMS.items():
        for part in ("sum", "count"):
            out[f"{key}_{part}"] = sum(snapshot.series(f"{name}_{part}").values())
    return out


def _delta_means(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in HISTOGRAMS:
        count = after[f"{key}_count"] - before[f"{key}_count"]
        total = after[f"{key}_sum"] - before[f"{key}_sum"]
        out[key] = 1000.0 * total / count if count else float("nan")
    out["service"] = out["e2e"] - out["queue"]
    out["requests"] = after["e2e_count"] - before["e2e_count"]
    return out


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_specmeter(server: Server, variant: str, args: argparse.Namespace, prompts: Path, tmp: Path) -> Run:
    out = tmp / f"{variant}.json"
    cmd = [
        _tool("specmeter"), "load", "--endpoint", server.url, "--prompts", str(prompts),
        "--api", "completions", "--concurrency", str(args.concurrency), "--limit", str(args.limit),
        "--max-tokens", str(args.max_tokens),
        "--temperature", "0", "--warmup", "0", "--quiet", "--json", str(out), *VARIANTS[variant],
    ]  # fmt: skip
    before, cpu0, t0 = histograms(server.url), _children_cpu(), time.perf_counter()
    subprocess.run(cmd, check=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    level = json.loads(out.read_text())["candidates"][0]
    return Run(
        variant,
        _delta_means(before, histograms(server.url)),
        held=level["effective_concurrency"],
        client_ttft_ms=level["summary"]["ttft_ms"]["mean"],
        cpu_total_s=cpu,
        cpu_share=level["load"]["client_cpu"],
        wall_s=wall,
        failed=level["load"]["failed"],
    )


def run_aiperf(server: Server, aiperf: str, args: argparse.Namespace, prompts: Path, tmp: Path) -> Run:
    artifacts = Path(args.aiperf_artifacts) if args.aiperf_artifacts else tmp / "aiperf"
    shutil.rmtree(artifacts, ignore_errors=True)
    cmd = [
        aiperf, "profile", "--model", server.model, "--url", server.url, "--endpoint-type", "completions",
        "--streaming", "--concurrency", str(args.concurrency), "--request-count", str(args.limit),
        "--input-file", str(prompts), "--custom-dataset-type", "single_turn",
        "--extra-inputs", "temperature:0", "--extra-inputs", f"max_tokens:{args.max_tokens}",
        "--output-artifact-dir", str(artifacts), "--ui-type", "none",
        "--tokenizer", str(ASSETS / "models" / "target"),
    ]  # fmt: skip
    before, cpu0, t0 = histograms(server.url), _children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if done.returncode != 0:
        raise RuntimeError(f"aiperf failed ({done.returncode}): {done.stderr[-2000:] or done.stdout[-2000:]}")
    run = Run("aiperf", _delta_means(before, histograms(server.url)), cpu_total_s=cpu, wall_s=wall)
    export = next(artifacts.rglob("profile_export_aiperf.json"), None)
    if export is not None:
        data = json.loads(export.read_text())
        run.client_ttft_ms = _aiperf_metric(data, "time_to_first_token")
        run.held = _aiperf_metric(data, "effective_concurrency")  # aiperf's own time-weighted figure
    return run


def _aiperf_metric(data: dict[str, Any], tag: str) -> float | None:
    """A metric's mean from aiperf 0.13's ``profile_export_aiperf.json``: ``{tag: {"avg": …, "unit": …}}``."""
    entry = data.get(tag)
    value = entry.get("avg") if isinstance(entry, dict) else None
    return float(value) if value is not None else None


def _prompts(limit: int, tmp: Path, aiperf: bool) -> tuple[Path, Path]:
    lines = (ASSETS / "golden" / "legal.jsonl").read_text(encoding="utf-8").splitlines()[:limit]
    ours = tmp / "prompts.jsonl"
    ours.write_text("\n".join(lines) + "\n", encoding="utf-8")
    theirs = tmp / "aiperf.jsonl"  # aiperf's single_turn format: {"text": …}
    if aiperf:
        theirs.write_text(
            "".join(json.dumps({"text": json.loads(line)["prompt"]}) + "\n" for line in lines),
            encoding="utf-8",
        )
    return ours, theirs


def _fmt(values: list[float], digits: int = 1) -> str:
    values = [v for v in values if v == v]
    if not values:
        return "—"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def _ratio(values: list[float]) -> str:
    """Median of per-round ratios, with their range."""
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.median(values):.3f} ({min(values):.2f}–{max(values):.2f})"


def _mean(values: list[float | None], digits: int = 1) -> str:
    present = [v for v in values if v is not None and v == v]
    return f"{statistics.fmean(present):.{digits}f}" if present else "—"


def report(runs: list[Run], rounds: list[dict[str, Run]]) -> None:
    """Two tables: the server's histograms per variant, then the ratios and what the client says."""
    names = list(dict.fromkeys(r.variant for r in runs))
    print(
        f"{'variant':<11} {'server e2e ms':>22} {'server ITL ms':>20} {'TTFT ms':>8} {'queue ms':>8} "
        f"{'service ms':>10}"
    )
    for name in names:
        mine = [r for r in runs if r.variant == name]
        print(
            f"{name:<11} {_fmt([r.server['e2e'] for r in mine]):>22} "
            f"{_fmt([r.server['itl'] for r in mine], 2):>20} "
            f"{_mean([r.server['ttft'] for r in mine]):>8} {_mean([r.server['queue'] for r in mine]):>8} "
            f"{_mean([r.server['service'] for r in mine]):>10}"
        )
    print(
        f"\n{'variant':<11} {'e2e / default':>20} {'ITL / default':>20} {'held':>5} "
        f"{'client−server TTFT ms':>21} "
        f"{'client CPU s':>12} {'CPU in level':>12}"
    )
    for name in names:
        mine = [r for r in runs if r.variant == name]
        paired = [rd for rd in rounds if name in rd and "default" in rd]
        e2e = [rd[name].server["e2e"] / rd["default"].server["e2e"] for rd in paired]
        itl = [rd[name].server["itl"] / rd["default"].server["itl"] for rd in paired]
        offsets = [r.client_ttft_ms - r.server["ttft"] for r in mine if r.client_ttft_ms is not None]
        share = [100 * r.cpu_share for r in mine if r.cpu_share is not None]
        print(
            f"{name:<11} {_ratio(e2e):>20} {_ratio(itl):>20} {_mean([r.held for r in mine], 2):>5} "
            f"{_mean(list(offsets)):>21} {_mean([r.cpu_total_s for r in mine]):>12} "
            f"{(_mean(list(share), 0) + ' %') if share else '—':>12}"
        )
    failed = sum(r.failed for r in runs)
    if failed:
        print(f"{failed} requests failed across the runs")
    print(f"load average {os.getloadavg()[0]:.1f} after the run")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--limit", type=int, default=40, help="Requests per run: the first N legal prompts.")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2, help="Rounds; every variant runs once per round.")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument(
        "--max-batch",
        type=int,
        default=1,
        help="serve's --max-batch; 1 = one request at a time (issue 19's setup).",
    )
    parser.add_argument(
        "--variants",
        help=f"Comma-separated subset of variants (default: all; with --smoke {SMOKE_VARIANTS} and aiperf).",
    )
    parser.add_argument("--aiperf", default="/work/aiperf-venv/bin/aiperf", help="aiperf executable, if any.")
    parser.add_argument("--aiperf-artifacts", help="Keep aiperf's latest artifacts in this folder.")
    parser.add_argument("--json", help="Also write every run's figures to this file.")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="Test run (seconds): 4 requests × 8 tokens at concurrency 2, one round, 2 warm-up requests.",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.limit, args.max_tokens, args.concurrency = min(args.limit, 4), min(args.max_tokens, 8), 2
        args.repeats = 1
    chosen = args.variants or (SMOKE_VARIANTS if args.smoke else ",".join(VARIANTS))
    variants = [v for v in chosen.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS and v != "aiperf"]
    if unknown:
        parser.error(f"unknown variants: {', '.join(unknown)}")
    if "default" not in variants:
        variants.append("default")  # the reference of the ratio column
    aiperf = args.aiperf if Path(args.aiperf).exists() else None
    if aiperf and "aiperf" not in variants:
        variants.append("aiperf")
    if not aiperf:
        variants = [v for v in variants if v != "aiperf"]
        print(f"aiperf not found at {args.aiperf}: its variant is skipped")
    runs: list[Run] = []
    rounds: list[dict[str, Run]] = []
    with tempfile.TemporaryDirectory(prefix="load-observer-") as tmp_name:
        tmp = Path(tmp_name)
        ours, theirs = _prompts(args.limit, tmp, aiperf is not None)
        server = start_server(args.k, args.max_batch)
        try:
            print(
                f"specmeter serve on {server.url} (pid {server.process.pid}), "
                f"model {server.model}, k={args.k}"
            )
            warm = [_tool("specmeter"), "load", "--endpoint", server.url, "--prompts", str(ours),
                    "--limit", "2" if args.smoke else "8", "--concurrency", "2", "--max-tokens",
                    str(args.max_tokens),
                    "--warmup", "0", "--quiet"]  # fmt: skip
            subprocess.run(warm, check=True)
            for r in range(args.repeats):
                order = variants[r % len(variants) :] + variants[: r % len(variants)]
                this_round: dict[str, Run] = {}
                for variant in order:
                    if variant == "aiperf":
                        assert aiperf is not None
                        run = run_aiperf(server, aiperf, args, theirs, tmp)
                    else:
                        run = run_specmeter(server, variant, args, ours, tmp)
                    print(
                        f"round {r + 1} {variant:<11} server e2e {run.server['e2e']:.0f} ms, ITL "
                        f"{run.server['itl']:.2f} ms, held "
                        f"{run.held if run.held is None else round(run.held, 2)}",
                        flush=True,
                    )
                    runs.append(run)
                    this_round[variant] = run
                rounds.append(this_round)
        finally:
            stop_server(server)
    print(
        f"\nconcurrency {args.concurrency}, {args.limit} requests × {args.max_tokens} tokens, greedy, "
        f"{args.repeats} rounds; mean (range) over rounds"
    )
    report(runs, rounds)
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in runs], indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
