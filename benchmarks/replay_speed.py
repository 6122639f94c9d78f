"""How fast ``specmeter replay`` walks a log: requests × tokens per model-free method, in seconds.

Issue 27's goal: 1,000 logged requests × 256 tokens per model-free method in under 10 s on 2 cores. The
log is built here, in ``serve --log --log-output``'s shape, from the bundled golden sets' text tokenized with
the bundled target's tokenizer: each request's prompt is one golden-set prompt, its response the next
prompts' text (real prose: its repeats are what n-gram and suffix methods find), cut to ``--tokens``. The
figures are the replay alone (the log read, each request checked and walked, the summaries), timed per
method in one process after the tokenizer has loaded; the table ends with the goal line.

Run: ``.venv/bin/python benchmarks/replay_speed.py`` (``--smoke``: 30 requests × 32 tokens).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from specmeter.replay import ReplayConfig
from specmeter.replay.run import build_result, replay_log
from specmeter.replay.target import open_checks

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "src" / "specmeter" / "assets"
METHODS = ("ngram", "ngram:min=2,max=4", "ngram-simple", "ngram-map-k", "suffix")
GOAL_S = 10.0


def write_log(path: Path, tokenizer: object, requests: int, tokens: int) -> None:
    texts = []
    for name in ("general.jsonl", "legal.jsonl"):
        for line in (ASSETS / "golden" / name).read_text(encoding="utf-8").splitlines():
            texts.append(json.loads(line)["prompt"])
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]  # type: ignore[operator]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(requests):
            prompt = ids[i % len(ids)]
            response: list[int] = []
            j = i + 1
            while len(response) < tokens:
                response += ids[j % len(ids)]
                j += 7
            line = {
                "id": f"r{i}", "category": "completion", "domain": "legal" if i % 2 else "general",
                "output_tokens": tokens, "temperature": 0.0, "model": "target", "max_tokens": tokens,
                "finish_reason": "length", "prompt_ids": prompt, "output_ids": response[:tokens],
            }  # fmt: skip
            fh.write(json.dumps(line) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument(
        "--smoke", action="store_true", help="30 requests × 32 tokens: does it run end to end"
    )
    parser.add_argument("--json", type=Path, default=None, help="Write the figures as JSON.")
    args = parser.parse_args()
    if args.smoke:
        args.requests, args.tokens = 30, 32
    target = ASSETS / "models" / "target"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "serve.jsonl"
        probe = ReplayConfig(sources=(ASSETS / "golden",), methods=("ngram",), ks=(args.k,), target=target)
        checks = open_checks(probe)
        write_log(log, checks.tokenizer, args.requests, args.tokens)
        size = log.stat().st_size / 1e6
        print(f"log: {args.requests} requests × {args.tokens} tokens ({size:.1f} MB), k={args.k}")
        print(f"{'method':<24} {'seconds':>8} {'requests/s':>11} {'α':>7} {'τ':>6}")
        figures = {}
        for method in METHODS:
            cfg = ReplayConfig(
                sources=(log,), methods=(method,), ks=(args.k,), target=target, category_field="domain"
            )
            t0 = time.perf_counter()
            replayed = replay_log(cfg, checks)
            result = build_result(cfg, replayed).to_dict()
            seconds = time.perf_counter() - t0
            s = result["candidates"][0]["summary"]
            figures[method] = {
                "seconds": seconds,
                "alpha": s["acceptance_rate"],
                "tau": s["acceptance_length"],
            }
            alpha = "—" if s["acceptance_rate"] is None else f"{s['acceptance_rate']:.3f}"
            tau = "—" if s["acceptance_length"] is None else f"{s['acceptance_length']:.2f}"
            print(f"{method:<24} {seconds:>8.2f} {args.requests / seconds:>11.0f} {alpha:>7} {tau:>6}")
    worst = max(f["seconds"] for f in figures.values())
    scale = (1000 * 256) / (args.requests * args.tokens)
    print(
        f"goal (issue 27): 1,000 requests × 256 tokens per model-free method in under {GOAL_S:g} s; "
        f"slowest here {worst:.2f} s ({worst * scale:.1f} s scaled to 1,000 × 256)"
    )
    if args.json is not None:
        args.json.write_text(
            json.dumps({"requests": args.requests, "tokens": args.tokens, "methods": figures})
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
