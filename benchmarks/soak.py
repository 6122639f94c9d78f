"""Benchmark: a soak of ``specmeter serve`` under streaming load, with disconnecting clients and poison.

Issue 29's done-when: ``serve --max-batch 16`` driven at concurrency 32 for 10 minutes, with 10% of the
clients disconnecting mid-stream and 1% poison requests, keeps every good request's output identical to a
quiet run and its RSS flat.

One ``specmeter serve`` on 127.0.0.1 (a free port, its own process group, always stopped: bundled target
and ``draft-legal``, k = 4, ``--max-batch`` 16, ``--max-body-bytes`` 1 MiB, greedy unless a request says
otherwise, ``--threads`` torch threads). First a **quiet reference pass**: every distinct prompt of the
golden set (default: the bundled legal set, 180 prompts) once, one at a time, greedy, streamed,
``--max-tokens`` 32; its text is the reference. Then the **soak**: ``--concurrency`` asyncio workers (httpx,
closed loop) for ``--minutes``, each request's kind fixed by its number so the mix is exact:

- *good* (89%): a prompt of the set, greedy, streamed to its end; its text must equal the reference.
- *disconnect* (every ``--disconnect-every``-th, 10%): the same request, but the client closes the
  connection after its first 1–3 chunks (the server must stop it and free the row).
- *poison* (every ``--poison-every``-th, 1%), the four kinds in turn: ``temperature`` 1e-300 (greedy for
  the server: 200, and its text must equal the reference), ``top_p`` 5e-324 at temperature 1 (top-1: 200
  and the reference text), a lone surrogate ``"\\ud800x"`` in the prompt (400), and a body larger than
  ``--max-body-bytes`` (413), sent alternately with a ``Content-Length`` and chunked.

Beside the workers, the server's RSS (its process and children, psutil) is sampled every 5 s and
``/health`` is timed every second. It prints the requests by kind, good outputs identical / total, the HTTP
status per poison kind, disconnects (and the server's abort count from ``/metrics``), server errors (5xx,
``error`` events, broken streams, transport errors), RSS at the start, after 1 minute and at the end with
its slope over the last 80% of the run (least squares, MB per minute), and the ``/health`` latency. Exit 1
when a good output differed or failed, a request got a 5xx, or the server died. ``--smoke``: 20 s,
concurrency 4, ``--max-batch`` 4, 6 prompts of 8 tokens, a poison every 8th request and a disconnect every
5th (so every kind runs). How to read the output: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "src" / "specmeter" / "assets"
MODELS = (ASSETS / "models" / "target", ASSETS / "models" / "draft-legal")
PROMPTS = ASSETS / "golden" / "legal.jsonl"
HEALTH_TIMEOUT_S = 180.0
RSS_EVERY_S = 5.0
HEALTH_EVERY_S = 1.0
POISON_KINDS = ("tiny-temperature", "tiny-top-p", "lone-surrogate", "oversized")
EXPECTED = {"tiny-temperature": 200, "tiny-top-p": 200, "lone-surrogate": 400, "oversized": 413}
MB = 1024 * 1024


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--target", type=Path, help="target model directory (default: bundled target)")
    ap.add_argument("--draft", type=Path, help="draft model directory (default: bundled draft-legal)")
    ap.add_argument("--prompts", type=Path, default=PROMPTS, help="golden set (default: bundled legal)")
    ap.add_argument("--limit", type=int, default=0, help="distinct prompts used (default 0: all)")
    ap.add_argument("--k", type=int, default=4, help="the server's draft length (default 4)")
    ap.add_argument("--max-batch", type=int, default=16, help="the server's --max-batch (default 16)")
    ap.add_argument(
        "--max-body-bytes", type=int, default=MB, help="the server's --max-body-bytes (default 1 MiB)"
    )
    ap.add_argument("--concurrency", type=int, default=32, help="closed-loop workers (default 32)")
    ap.add_argument("--minutes", type=float, default=10.0, help="length of the soak (default 10)")
    ap.add_argument("--max-tokens", type=int, default=32, help="output tokens per request (default 32)")
    ap.add_argument(
        "--disconnect-every", type=int, default=10, help="every N-th request disconnects (default 10)"
    )
    ap.add_argument(
        "--poison-every", type=int, default=100, help="every N-th request is poison (default 100)"
    )
    ap.add_argument("--threads", type=int, default=1, help="the server's torch threads (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="prompt order and disconnect points (default 0)")
    ap.add_argument("--json", type=Path, help="also write the figures and the RSS samples as JSON")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="test run (seconds): 20 s, concurrency 4, --max-batch 4, 6 prompts of 8 tokens, "
        "poison every 8th, disconnect every 5th",
    )
    args = ap.parse_args(argv)
    if args.smoke:
        args.minutes, args.limit, args.max_tokens = 20 / 60, 6, min(args.max_tokens, 8)
        args.concurrency, args.max_batch = min(args.concurrency, 4), min(args.max_batch, 4)
        args.poison_every, args.disconnect_every = 8, 5
    counts = ("k", "max_batch", "concurrency", "max_tokens", "disconnect_every", "poison_every", "threads")
    for name in counts:
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.minutes <= 0:
        ap.error("--minutes must be > 0")
    if args.limit < 0:
        ap.error("--limit must be >= 0")
    if (args.target is None) != (args.draft is None):
        ap.error("give both --target and --draft, or neither")
    if args.target is None:
        args.target, args.draft = MODELS
    return args


def load_prompts(path: Path, limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            prompt = json.loads(line).get("prompt")
            if isinstance(prompt, str) and prompt:
                seen.setdefault(prompt)
    prompts = list(seen)
    return prompts[:limit] if limit else prompts


def _tool(name: str) -> str:
    path = Path(sys.executable).parent / name
    return str(path) if path.exists() else name


def start_server(args: argparse.Namespace, tmp: Path) -> Any:
    from specmeter.sweep.launch import ServerProcess, free_port

    port = free_port()
    argv = [
        _tool("specmeter"), "serve", "--target", str(args.target), "--draft", str(args.draft),
        "--k", str(args.k), "--max-batch", str(args.max_batch), "--max-body-bytes", str(args.max_body_bytes),
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
    ]  # fmt: skip
    server = ServerProcess("soak", argv, f"http://127.0.0.1:{port}", tmp / "serve.log")
    server.start(env={"OMP_NUM_THREADS": str(args.threads)})
    return server


# ---------------------------------------------------------------------------------------------- requests


@dataclass
class Outcome:
    """One request as the client saw it."""

    kind: str  # good, disconnect, or a poison kind
    status: int | None = None  # HTTP status; None: no response (transport error)
    text: str = ""
    finish: str | None = None  # the last chunk's finish_reason
    done: bool = False  # [DONE] seen
    error: str | None = None  # an error event in the stream, or the transport error
    chunks: int = 0
    left: bool = False  # the client disconnected before the end


def _body(prompt: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    return {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True, **extra}


async def stream(
    client: Any,
    url: str,
    body: dict[str, Any] | bytes,
    kind: str,
    leave_after: int = 0,
    chunked: bool = False,
) -> Outcome:
    """POST a completions request and read its SSE stream; ``leave_after`` > 0 closes the connection
    after that many chunks. Never raises for server or network failures."""
    import httpx

    out = Outcome(kind)
    if isinstance(body, bytes):
        raw = body
        if chunked:

            async def pieces() -> Any:
                for i in range(0, len(raw), 65536):
                    yield raw[i : i + 65536]

            content: Any = pieces()
        else:
            content = raw
    else:
        content = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    try:
        async with client.stream("POST", url + "/v1/completions", content=content, headers=headers) as r:
            out.status = r.status_code
            if r.status_code != 200:
                await r.aread()
                try:
                    out.error = str(r.json().get("error", {}).get("message", ""))[:200]
                except (ValueError, AttributeError):
                    out.error = r.text[:200]
                return out
            async for line in r.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    out.done = True
                    break
                event = json.loads(data)
                if "error" in event:
                    out.error = str(event["error"].get("message", event["error"]))[:200]
                    continue
                choices = event.get("choices") or []
                if choices:
                    out.text += choices[0].get("text") or ""
                    out.finish = choices[0].get("finish_reason") or out.finish
                out.chunks += 1
                if leave_after and out.chunks >= leave_after and out.finish is None:
                    out.left = True
                    break  # leaving the block closes the connection mid-stream
    except (httpx.HTTPError, OSError, ValueError) as e:
        out.error = f"{type(e).__name__}: {e}"[:200]
    return out


def poison_request(
    kind: str, prompt: str, n: int, args: argparse.Namespace
) -> tuple[dict[str, Any] | bytes, bool]:
    """The body of one poison request of ``kind`` (and whether to send it chunked)."""
    if kind == "tiny-temperature":
        return _body(prompt, args.max_tokens, temperature=1e-300), False
    if kind == "tiny-top-p":
        return _body(prompt, args.max_tokens, temperature=1.0, top_p=5e-324), False
    if kind == "lone-surrogate":
        # json.dumps escapes the lone surrogate as \ud800: valid JSON, not Unicode
        return json.dumps(_body("\ud800x" + prompt, args.max_tokens)).encode(), False
    pad = args.max_body_bytes + 4096
    body = json.dumps(_body(prompt + " " + "x" * pad, args.max_tokens)).encode()
    return body, (n // args.poison_every // len(POISON_KINDS)) % 2 == 1  # alternately Content-Length, chunked


# ------------------------------------------------------------------------------------------------- soak


@dataclass
class Soak:
    reference: dict[str, str]
    prompts: list[str]
    args: argparse.Namespace
    url: str
    counter: int = 0
    poison_sent: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    good_total: int = 0
    good_same: int = 0
    good_failed: list[str] = field(default_factory=list)  # why, for the first few
    differed: list[tuple[str, str, str]] = field(default_factory=list)  # prompt, expected, got
    poison_status: dict[str, Counter[str]] = field(default_factory=dict)
    poison_same: Counter[str] = field(default_factory=Counter)
    disconnects: int = 0
    disconnects_finished_first: int = 0
    server_errors: Counter[str] = field(default_factory=Counter)
    error_examples: list[str] = field(default_factory=list)
    tokens_out: int = 0

    def next_request(self) -> tuple[str, int, str]:
        n = self.counter
        self.counter += 1
        prompt = self.prompts[n % len(self.prompts)]
        if n % self.args.poison_every == self.args.poison_every - 1:
            kind = POISON_KINDS[self.poison_sent % len(POISON_KINDS)]
            self.poison_sent += 1
        elif n % self.args.disconnect_every == self.args.disconnect_every // 2:
            kind = "disconnect"
        else:
            kind = "good"
        return kind, n, prompt

    def server_error(self, what: str, detail: str) -> None:
        self.server_errors[what] += 1
        if len(self.error_examples) < 5:
            self.error_examples.append(f"{what}: {detail}")

    def record(self, out: Outcome, prompt: str) -> None:
        self.kinds[out.kind] += 1
        if out.status is not None and out.status >= 500:
            self.server_error(f"HTTP {out.status}", f"{out.kind}: {out.error}")
        elif out.error is not None and out.status == 200:
            self.server_error("error event", f"{out.kind}: {out.error}")
        if out.kind == "good":
            self.good_total += 1
            complete = out.status == 200 and out.done and out.finish is not None and out.error is None
            if not complete:
                if out.status is None:
                    self.server_error("transport", f"good: {out.error}")
                elif out.status == 200 and out.error is None:
                    self.server_error("broken stream", f"good: {out.chunks} chunks, no end")
                if len(self.good_failed) < 5:
                    self.good_failed.append(f"status {out.status}, {out.error}")
            elif out.text == self.reference[prompt]:
                self.good_same += 1
            elif len(self.differed) < 5:
                self.differed.append((prompt, self.reference[prompt], out.text))
            self.tokens_out += out.chunks
        elif out.kind == "disconnect":
            if out.left:
                self.disconnects += 1
            elif out.status == 200 and out.done:
                self.disconnects_finished_first += 1  # the stream ended before the client could leave
            elif out.status is None:
                self.server_error("transport", f"disconnect: {out.error}")
        else:
            status = "no response" if out.status is None else str(out.status)
            self.poison_status.setdefault(out.kind, Counter())[status] += 1
            if out.status == 200 and out.done and out.error is None and out.text == self.reference[prompt]:
                self.poison_same[out.kind] += 1

    async def worker(self, client: Any, wid: int, deadline: float) -> None:
        rng = random.Random(self.args.seed * 1000 + wid)
        while time.monotonic() < deadline:
            kind, n, prompt = self.next_request()
            if kind in ("good", "disconnect"):
                leave = rng.randint(1, 3) if kind == "disconnect" else 0
                out = await stream(client, self.url, _body(prompt, self.args.max_tokens), kind, leave)
            else:
                body, chunked = poison_request(kind, prompt, n, self.args)
                out = await stream(client, self.url, body, kind, chunked=chunked)
            self.record(out, prompt)


def rss_of(pid: int) -> int:
    import psutil

    proc = psutil.Process(pid)
    total = int(proc.memory_info().rss)
    for child in proc.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            total += int(child.memory_info().rss)
    return total


async def sample_rss(pid: int, t0: float, samples: list[tuple[float, float]], stop: asyncio.Event) -> None:
    import psutil

    while True:
        try:
            samples.append((time.monotonic() - t0, rss_of(pid) / MB))
        except psutil.Error:
            return  # the server is gone: the main loop notices
        try:
            await asyncio.wait_for(stop.wait(), RSS_EVERY_S)
            samples.append((time.monotonic() - t0, rss_of(pid) / MB))
            return
        except asyncio.TimeoutError:
            pass


async def time_health(url: str, times: list[float], failures: list[str], stop: asyncio.Event) -> None:
    import httpx

    async with httpx.AsyncClient(timeout=30.0) as client:
        while not stop.is_set():
            t = time.perf_counter()
            try:
                r = await client.get(url + "/health")
                if r.status_code == 200:
                    times.append(time.perf_counter() - t)
                else:
                    failures.append(f"HTTP {r.status_code}")
            except httpx.HTTPError as e:
                failures.append(type(e).__name__)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), HEALTH_EVERY_S)


async def metric_total(url: str, name: str, label: str) -> float | None:
    """The sum of a Prometheus counter's series whose labels contain ``label`` (None: not exported)."""
    import httpx

    async with httpx.AsyncClient(timeout=30.0) as client:
        try:
            text = (await client.get(url + "/metrics")).text
        except httpx.HTTPError:
            return None
    found = None
    for m in re.finditer(rf"^{re.escape(name)}\{{([^}}]*)\}} ([0-9.eE+-]+)$", text, re.M):
        if label in m.group(1):
            found = (found or 0.0) + float(m.group(2))
    return found


async def reference_pass(url: str, prompts: list[str], max_tokens: int) -> tuple[dict[str, str], list[str]]:
    import httpx

    reference: dict[str, str] = {}
    problems: list[str] = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(120.0, connect=10.0)) as client:
        for prompt in prompts:
            out = await stream(client, url, _body(prompt, max_tokens), "good")
            if out.status != 200 or not out.done or out.error is not None or out.finish is None:
                problems.append(f"status {out.status}, {out.error}")
            reference[prompt] = out.text
    return reference, problems


async def soak(args: argparse.Namespace, server: Any, soak_state: Soak) -> dict[str, Any]:
    import httpx

    stop = asyncio.Event()
    rss: list[tuple[float, float]] = []
    health: list[float] = []
    health_failures: list[str] = []
    t0 = time.monotonic()
    duration = args.minutes * 60
    aborts_before = await metric_total(server.url, "vllm:request_success_total", 'finished_reason="abort"')
    sampler = asyncio.create_task(sample_rss(server.pid, t0, rss, stop))
    pinger = asyncio.create_task(time_health(server.url, health, health_failures, stop))
    pool = args.concurrency + 8
    limits = httpx.Limits(max_connections=pool, max_keepalive_connections=pool)
    timeout = httpx.Timeout(120.0, connect=10.0)
    async with httpx.AsyncClient(timeout=timeout, limits=limits) as client:
        deadline = t0 + duration
        workers = [
            asyncio.create_task(soak_state.worker(client, w, deadline)) for w in range(args.concurrency)
        ]
        last = t0
        while not all(w.done() for w in workers):
            await asyncio.sleep(1.0)
            if not server.alive():
                for w in workers:
                    w.cancel()
                break
            now = time.monotonic()
            if now - last >= 60:
                last = now
                print(
                    f"  {now - t0:4.0f} s: {soak_state.counter} requests, good identical "
                    f"{soak_state.good_same}/{soak_state.good_total}, RSS {rss[-1][1] if rss else 0:.0f} MB",
                    flush=True,
                )
        results = await asyncio.gather(*workers, return_exceptions=True)
    wall = time.monotonic() - t0
    stop.set()
    await asyncio.gather(sampler, pinger)
    crashed = [
        r for r in results if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)
    ]
    aborts_after = await metric_total(server.url, "vllm:request_success_total", 'finished_reason="abort"')
    return {
        "wall_s": wall,
        "rss": rss,
        "health": health,
        "health_failures": health_failures,
        "aborts": None if aborts_after is None else aborts_after - (aborts_before or 0.0),
        "worker_crashes": [repr(c) for c in crashed],
    }


def slope_mb_per_min(samples: list[tuple[float, float]], wall: float) -> float | None:
    tail = [(t, m) for t, m in samples if t >= 0.2 * wall]
    if len(tail) < 3:
        return None
    ts, ms = [t / 60 for t, _ in tail], [m for _, m in tail]
    mt, mm = statistics.fmean(ts), statistics.fmean(ms)
    var = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (m - mm) for t, m in zip(ts, ms, strict=True)) / var if var > 0 else None


def at(samples: list[tuple[float, float]], when: float) -> float | None:
    if not samples or samples[-1][0] < when:
        return None
    return min(samples, key=lambda s: abs(s[0] - when))[1]


def report(args: argparse.Namespace, s: Soak, run: dict[str, Any], alive: bool) -> dict[str, Any]:
    wall = run["wall_s"]
    print(f"\nsoak: {wall:.0f} s, concurrency {args.concurrency}, serve --max-batch {args.max_batch}")
    total = sum(s.kinds.values())
    poison = sum(s.kinds[k] for k in POISON_KINDS)
    print(
        f"requests by kind: {total} in all ({total / wall:.1f}/s) — good {s.kinds['good']}, "
        f"disconnect {s.kinds['disconnect']} ({s.kinds['disconnect'] / max(total, 1):.1%}), "
        f"poison {poison} ({poison / max(total, 1):.1%}: "
        + ", ".join(f"{k} {s.kinds[k]}" for k in POISON_KINDS)
        + ")"
    )
    verdict = "all" if s.good_same == s.good_total and s.good_total else "NOT ALL"
    print(f"good outputs identical to the quiet run: {s.good_same} / {s.good_total} ({verdict})")
    for why in s.good_failed:
        print(f"  failed good request: {why}")
    for prompt, want, got in s.differed:
        print(f"  DIFFERED: prompt {prompt[:60]!r}…\n    quiet: {want!r}\n    soak:  {got!r}")
    expected = ", ".join(f"{k} {v}" for k, v in EXPECTED.items())
    print(f"poison HTTP status (expected: {expected}):")
    for kind in POISON_KINDS:
        counts = s.poison_status.get(kind, Counter())
        shown = ", ".join(f"{status} ×{n}" for status, n in sorted(counts.items())) or "none sent"
        same = ""
        if EXPECTED[kind] == 200:
            same = f"; reference text {s.poison_same[kind]}/{counts.get('200', 0)}"
        print(f"  {kind:<17} {shown}{same}")
    aborts = run["aborts"]
    print(
        f"disconnects mid-stream: {s.disconnects} (streams that ended before the client left: "
        f"{s.disconnects_finished_first}); server's abort count over the soak: "
        f"{'—' if aborts is None else f'{aborts:.0f}'}"
    )
    errors = sum(s.server_errors.values())
    print(
        f"server errors: {errors}"
        + (" (" + ", ".join(f"{k} {n}" for k, n in s.server_errors.items()) + ")" if errors else "")
    )
    for example in s.error_examples:
        print(f"  {example}")
    rss = run["rss"]
    start = rss[0][1] if rss else None
    one = at(rss, 60.0)
    end = rss[-1][1] if rss else None
    slope = slope_mb_per_min(rss, wall)

    def mb(x: float | None) -> str:
        return "—" if x is None else f"{x:.1f} MB"

    peak = max((m for _, m in rss), default=None)
    print(
        f"RSS MB (server and children, every {RSS_EVERY_S:.0f} s, {len(rss)} samples): start {mb(start)}, "
        f"after 1 min {mb(one)}, end {mb(end)}, peak {mb(peak)}"
    )
    print(
        "RSS slope over the last 80% of the run: "
        + ("— (too few samples)" if slope is None else f"{slope:+.2f} MB/min")
    )
    health = run["health"]
    if health:
        print(
            f"/health latency during the soak: max {max(health) * 1000:.0f} ms, p50 "
            f"{statistics.median(health) * 1000:.1f} ms ({len(health)} probes, "
            f"{len(run['health_failures'])} failed)"
        )
    else:
        print(f"/health latency during the soak: max — (no answer; {len(run['health_failures'])} failed)")
    print(f"server alive at the end: {'yes' if alive else 'NO'}")
    for crash in run["worker_crashes"]:
        print(f"  client worker crashed: {crash}")
    return {
        "wall_s": wall,
        "requests": dict(s.kinds),
        "good_identical": s.good_same,
        "good_total": s.good_total,
        "poison_status": {k: dict(v) for k, v in s.poison_status.items()},
        "poison_reference_text": dict(s.poison_same),
        "disconnects": s.disconnects,
        "server_aborts": aborts,
        "server_errors": dict(s.server_errors),
        "rss_mb": {"start": start, "after_1_min": one, "end": end, "peak": peak, "slope_mb_per_min": slope},
        "rss_samples": rss,
        "health_max_ms": max(health) * 1000 if health else None,
        "alive": alive,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from specmeter.sweep.launch import LaunchError

    prompts = load_prompts(args.prompts, args.limit)
    if not prompts:
        print(f"error: no prompts in {args.prompts}", file=sys.stderr)
        return 2
    print(f"target  {args.target}\ndraft   {args.draft} · k={args.k}")
    print(
        f"serve --max-batch {args.max_batch} --max-body-bytes {args.max_body_bytes} · {args.threads} torch "
        f"thread(s) · {len(prompts)} distinct prompts · greedy · max {args.max_tokens} tokens"
    )
    print(
        f"soak: {args.minutes:g} min at concurrency {args.concurrency}; disconnect every "
        f"{args.disconnect_every}th request, poison every {args.poison_every}th"
    )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} CPUs, load average {load} before the run")
    started = time.monotonic()
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp_name:
        server = None
        try:
            server = start_server(args, Path(tmp_name))
            waited = asyncio.run(server.wait_healthy(HEALTH_TIMEOUT_S))
            print(f"  server ({server.url}) healthy after {waited:.0f} s", flush=True)
            t = time.monotonic()
            reference, problems = asyncio.run(reference_pass(server.url, prompts, args.max_tokens))
            print(
                f"  quiet reference pass: {len(reference)} prompts, one at a time, "
                f"in {time.monotonic() - t:.0f} s",
                flush=True,
            )
            if problems:
                print(f"error: the quiet pass failed {len(problems)} request(s): {problems[:3]}")
                return 1
            state = Soak(reference, random.Random(args.seed).sample(prompts, len(prompts)), args, server.url)
            run = asyncio.run(soak(args, server, state))
            alive = server.alive()
            figures = report(args, state, run, alive)
            if not alive:
                print(f"  server log tail: {server.last_line()}")
        except LaunchError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        finally:
            if server is not None:
                server.stop()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} after the run ({time.monotonic() - started:.0f} s)")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    fail = []
    if figures["good_total"] == 0 or figures["good_identical"] != figures["good_total"]:
        fail.append("a good request's output differed or failed")
    if any(k.startswith("HTTP 5") for k in figures["server_errors"]):
        fail.append("a request got a 5xx")
    if not figures["alive"]:
        fail.append("the server died")
    if fail:
        print("FAIL: " + "; ".join(fail))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
