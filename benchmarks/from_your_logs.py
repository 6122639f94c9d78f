"""README's "From your logs", reproduced: a mixed production log → ``golden``, and ``drift`` on a draft swap.

Not a ratio benchmark (it is not in ``make bench``); it regenerates the figures README quotes, from the
bundled golden sets only, deterministically (``--seed``):

1. **The logs.** In ``--dir``: ``gateway.jsonl``, a gateway's OpenAI chat log (``{"ts", "route", "request",
   "response"}`` lines) of ``--requests`` requests over two routes, drawn from the bundled legal and general
   golden sets with a popularity skew (popular prompts repeat: the exact duplicates of real traffic), some
   near-duplicates (one word changed, a greeting added), some with an e-mail address or a phone number, and
   three lines that cannot be replayed (cut JSON, an image part, a response without its request);
   ``chats.json``, a ShareGPT export of multi-turn conversations with no route (the rules categorise them),
   one of them ending with the assistant; ``tickets.csv``, support tickets with a ``route`` and a
   ``question`` column, one row with an empty question.
2. **golden**: ``specmeter golden --from … --category-field route --rules rules.yml --n 100 --seed 1
   --scrub``; the report's counts are printed (records, bad lines, exact and near duplicates, per category
   written, multi-turn, scrubbed).
3. **drift** (skip with ``--no-drift``): ``specmeter serve`` with the bundled target and draft-legal, 40 legal
   and 40 general completions (the raw text the drafts were trained on) with their domain in OpenAI's
   ``metadata`` (serve logs it), then the same server
   command with draft-general and the same requests, each into its own ``--log``; then ``specmeter drift
   --requests after.jsonl --reference before.jsonl``. The servers run in their own process groups and are
   always stopped. About two minutes on 2 cores.

Run: ``.venv/bin/python benchmarks/from_your_logs.py --dir /tmp/logs``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from specmeter.sweep.launch import ServerProcess, free_port

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "src" / "specmeter" / "assets"
GOLDEN = ASSETS / "golden"
MODELS = ASSETS / "models"
HEALTH_TIMEOUT_S = 180.0

RULES = """\
rules:
  - category: legal
    regex: '\\b(agreement|clause|indemnif\\w*|supplier|customer|governing law|liabilit\\w*|contract\\w*)\\b'
default: general
"""
SYSTEM = {"legal": "You review contracts.", "general": "You are a helpful assistant."}
FOLLOWUPS = [
    "Can you say that more briefly?",
    "Give me an example.",
    "What should I watch out for?",
    "And if the other side disagrees?",
]
ANSWER = "Here is a short answer."


def bundled(name: str) -> list[str]:
    with (GOLDEN / f"{name}.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line)["prompt"] for line in f if line.strip()]


def near_duplicate(text: str, rng: random.Random) -> str:
    """A small edit that keeps the character 5-gram Jaccard high (a greeting, or one word changed)."""
    if rng.random() < 0.5:
        return "Hi, " + text
    words = text.split()
    i = rng.randrange(len(words))
    words[i] = words[i].upper() if rng.random() < 0.5 else words[i] + "s"
    return " ".join(words)


def with_contact(text: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"{text} Please reply to jane.doe{rng.randrange(100)}@example.com."
    return f"{text} Call me on +44 20 7946 {rng.randrange(1000, 9999)}."


def write_gateway(path: Path, n: int, rng: random.Random, prompts: dict[str, list[str]]) -> None:
    lines: list[str] = []
    for i in range(n):
        route = "legal" if rng.random() < 0.6 else "general"
        pool = prompts[route]
        # a popularity skew: a few prompts are asked over and over (the exact duplicates of real traffic)
        text = pool[
            min(int(rng.paretovariate(1.2)) - 1, len(pool) - 1)
            if rng.random() < 0.5
            else rng.randrange(len(pool))
        ]
        if rng.random() < 0.1:
            text = near_duplicate(text, rng)
        if rng.random() < 0.04:
            text = with_contact(text, rng)
        request = {
            "model": "prod-8b",
            "messages": [{"role": "system", "content": SYSTEM[route]}, {"role": "user", "content": text}],
            "max_tokens": 64,
        }
        response = {"choices": [{"message": {"role": "assistant", "content": ANSWER}}]}
        ts = f"2026-11-30T12:{i // 60 % 60:02d}:{i % 60:02d}Z"
        lines.append(json.dumps({"ts": ts, "route": route, "request": request, "response": response}))
    bad = [
        lines[10][: len(lines[10]) // 2],  # cut JSON
        json.dumps(
            {
                "route": "general",
                "request": {
                    "messages": [
                        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
                    ]
                },
            }
        ),
        json.dumps({"route": "legal", "response": response}),  # a response without its request
    ]
    for j, line in enumerate(bad):
        lines.insert(100 * (j + 1), line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_chats(path: Path, n: int, rng: random.Random, prompts: dict[str, list[str]]) -> None:
    conversations: list[dict[str, Any]] = []
    for i in range(n):
        route = "legal" if i % 3 == 0 else "general"
        turns = [{"from": "human", "value": rng.choice(prompts[route])}, {"from": "gpt", "value": ANSWER}]
        for followup in rng.sample(FOLLOWUPS, rng.randrange(0, 3)):
            turns += [{"from": "human", "value": followup}, {"from": "gpt", "value": ANSWER}]
        conversations.append({"id": f"chat-{i + 1}", "conversations": turns})
    conversations.append({"id": "chat-bad", "conversations": [{"from": "gpt", "value": ANSWER}]})
    path.write_text(json.dumps(conversations, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def write_tickets(path: Path, n: int, rng: random.Random, prompts: dict[str, list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["ticket", "route", "question"])
        for i in range(n):
            route = "general" if i % 4 else "legal"
            out.writerow([f"T-{1000 + i}", route, rng.choice(prompts[route])])
        out.writerow(["T-empty", "general", ""])


def specmeter(*args: str) -> subprocess.CompletedProcess[str]:
    tool = Path(sys.executable).with_name("specmeter")
    return subprocess.run([str(tool), *args], capture_output=True, text=True, check=False)


def golden(directory: Path) -> None:
    (directory / "rules.yml").write_text(RULES, encoding="utf-8")
    out, report = directory / "golden.jsonl", directory / "golden-report.json"
    for p in (out, report):
        p.unlink(missing_ok=True)
    done = specmeter(
        "golden", "--from", str(directory / "gateway.jsonl"), "--from", str(directory / "chats.json"),
        "--from", str(directory / "tickets.csv"), "--category-field", "route", "--rules",
        str(directory / "rules.yml"), "--n", "100", "--seed", "1", "--scrub", "--out", str(out),
        "--json", str(report),
    )  # fmt: skip
    print(done.stdout)
    print(done.stderr, file=sys.stderr)
    if done.returncode != 0:
        raise SystemExit(f"golden exited {done.returncode}")
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    multi = sum(1 for line in lines if line.get("followups"))
    print(f"written {len(lines)} prompts, {multi} multi-turn; report: {report}")


def serve_round(
    directory: Path, draft: str, log: Path, requests: list[tuple[str, str]], max_tokens: int = 32
) -> None:
    port = free_port()
    argv = [
        str(Path(sys.executable).with_name("specmeter")), "serve", "--target", str(MODELS / "target"),
        "--draft", str(MODELS / draft), "--k", "4", "--host", "127.0.0.1", "--port", str(port),
        "--log", str(log), "--log-level", "warning",
    ]  # fmt: skip
    server = ServerProcess(draft, argv, f"http://127.0.0.1:{port}", directory / f"serve-{draft}.out")
    server.start()
    try:
        import asyncio

        asyncio.run(server.wait_healthy(HEALTH_TIMEOUT_S))

        def send(item: tuple[str, str]) -> None:
            domain, text = item
            body = {
                "model": "target",
                "prompt": text,
                "max_tokens": max_tokens,
                "temperature": 0,
                "metadata": {"domain": domain},
            }
            httpx.post(f"{server.url}/v1/completions", json=body, timeout=300).raise_for_status()

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(send, requests))
    finally:
        server.stop()


def drift(directory: Path, per_domain: int = 40, max_tokens: int = 32) -> None:
    requests = [("legal", p) for p in bundled("legal")[:per_domain]] + [
        ("general", p) for p in bundled("general")[:per_domain]
    ]
    before, after = directory / "before.jsonl", directory / "after.jsonl"
    serve_round(directory, "draft-legal", before, requests, max_tokens)
    serve_round(directory, "draft-general", after, requests, max_tokens)
    tested = ["--min-requests", str(per_domain)] if per_domain < 20 else []  # drift's default needs 20
    done = specmeter("drift", "--requests", str(after), "--reference", str(before), *tested)
    print(done.stdout)
    print(done.stderr, file=sys.stderr)
    print(f"drift exit code {done.returncode}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="Where the logs and outputs are written.")
    parser.add_argument("--requests", type=int, default=1200, help="Lines of the gateway log.")
    parser.add_argument(
        "--chats", type=int, default=60, help="ShareGPT conversations (+1 that cannot be replayed)."
    )
    parser.add_argument("--tickets", type=int, default=80, help="CSV rows (+1 with an empty question).")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-drift", action="store_true", help="Only the logs and golden.")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="Test run (seconds): 300 gateway lines, 6 chats, 8 tickets; drift on 4 + 4 requests, 8 tokens.",
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.requests, args.chats = min(args.requests, 300), min(args.chats, 6)
        args.tickets = min(args.tickets, 8)
    args.dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    prompts = {"legal": bundled("legal"), "general": bundled("general")}
    write_gateway(args.dir / "gateway.jsonl", args.requests, rng, prompts)
    write_chats(args.dir / "chats.json", args.chats, rng, prompts)
    write_tickets(args.dir / "tickets.csv", args.tickets, rng, prompts)
    golden(args.dir)
    if args.smoke and not args.no_drift:
        drift(args.dir, per_domain=4, max_tokens=8)
    elif not args.no_drift:
        drift(args.dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
