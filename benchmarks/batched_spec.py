"""Benchmark: batched greedy speculative decoding against the same engine batched without speculation, per B.

For every batch size B (``--batches``, default 1, 4, 16) the measuring core runs ``bench --batch B`` — the
code ``specmeter bench --batch`` runs, nothing reimplemented here: the golden set in waves of B concurrent
sequences through ``engine.batched``, the baseline (the same batched engine without a draft) and the
speculative run taking turns wave by wave in a rotating order, the cost surface t_step(b, k) timed between
the waves. Per B it prints, measured side by side in that one run:

- E_meas(B), decode-only (latency − TTFT: a wave's prefill is shared, so this is the figure the surface
  predicts) and end-to-end, each with its paired bootstrap interval over requests;
- the surface's prediction for the same waves (each request's recorded steps priced at the surface's step
  cost, the batch shrinking as requests finish) and the relative error E_meas / E_pred − 1, against the
  goal of issue 13: within 5% at every B; and the steady-state E(B, k) beside it;
- how many greedy outputs equal the baseline's (exit 1 if any differs).

Ratios only: never compare the absolute times of two runs or two machines. How to read the output:
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from time import perf_counter
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "src" / "specmeter" / "assets"
BUNDLED = (ASSETS / "models" / "target", ASSETS / "models" / "draft-legal", ASSETS / "golden" / "legal.jsonl")
GOAL_ERROR = 0.05  # issue 13: decode-only E_meas within 5% of the prediction at every B measured


def int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give positive integers")
    return values


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--target", type=Path, help="target model directory (default: bundled target)")
    ap.add_argument("--draft", type=Path, help="draft model directory (default: bundled draft-legal)")
    ap.add_argument("--prompts", type=Path, help="golden set (default: bundled legal golden set)")
    ap.add_argument("--k", type=int, default=4, help="draft length (default 4)")
    ap.add_argument("--batches", type=int_list, default=[1, 4, 16], help="batch sizes (default 1,4,16)")
    ap.add_argument("--limit", type=int, default=32, help="first N prompts (default 32: two waves at 16)")
    ap.add_argument("--max-tokens", type=int, default=64, help="output tokens per request (default 64)")
    ap.add_argument("--cost-repeats", type=int, default=9, help="default 9 (27 steps per point)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1, see README)")
    ap.add_argument("--json", type=Path, help="also write the rows (one per B) as JSON")
    ap.add_argument("--quick", action="store_true", help="smoke run: 8 prompts, 16 tokens, 3 repeats")
    ap.add_argument("--smoke", action="store_true", help="test run (seconds): B = 1, 2; 2 prompts, 8 tokens")
    args = ap.parse_args(argv)
    if args.quick:
        args.limit, args.max_tokens, args.cost_repeats = min(args.limit, 8), min(args.max_tokens, 16), 3
    if args.smoke:
        args.batches = sorted({min(b, 2) for b in args.batches})
        args.limit, args.max_tokens, args.cost_repeats = min(args.limit, 2), min(args.max_tokens, 8), 1
    for name in ("k", "limit", "max_tokens", "cost_repeats", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    given = [args.target is not None, args.draft is not None, args.prompts is not None]
    if any(given) and not all(given):
        ap.error("give all of --target, --draft and --prompts, or none of them")
    if not any(given):
        args.target, args.draft, args.prompts = BUNDLED
    return args


def speedup(value: Any) -> str:
    return "    —" if value is None else f"{value:5.2f}x"


def interval(ci: Any) -> str:
    return "[   —   ]" if not ci else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def pct(value: Any) -> str:
    return "   —" if value is None else f"{value:+6.1%}"


def machine_notes(runs: Sequence[Any]) -> list[str]:
    """What else ran: each run's hygiene verdict, and its message when the machine was not quiet."""
    out = []
    for run in runs:
        hygiene = run.result.get("hygiene") or {}
        line = f"  B={run.batch:<3} {hygiene.get('verdict') or 'not sampled'}"
        if hygiene.get("message"):
            line += f": {hygiene['message']}"
        out.append(line)
    return out


def report(args: argparse.Namespace, runs: Sequence[Any]) -> int:
    rows = [r for run in runs for r in run.rows]
    print(
        f"\nbatched speculative (k={args.k}) vs the same batched engine without speculation, the same waves; "
        "decode-only = latency − TTFT:"
    )
    print(
        f"  {'B':>3}  {'τ':>5}  {'E_meas decode [95% CI]':<24} {'E_pred waves':>12} {'error':>7}  "
        f"{'goal ±5%':<8} {'E(B,k) steady':>13}   {'E_meas end-to-end [95% CI]':<26} same output"
    )
    met = True
    mismatches = 0
    for r in rows:
        error = r["error"]
        ok = error is not None and abs(error) <= GOAL_ERROR
        met &= ok
        matched = r["outputs_matched"]
        if matched is None or matched[0] != matched[1]:
            mismatches += 1
        tau = "—" if r["acceptance_length"] is None else f"{r['acceptance_length']:.2f}"
        print(
            f"  {r['batch']:>3}  {tau:>5}  {speedup(r['speedup_measured_decode'])} "
            f"{interval(r['speedup_measured_decode_ci']):<16} {speedup(r['speedup_predicted_waves']):>12} "
            f"{pct(error):>7}  {'met' if ok else 'MISSED':<8} {speedup(r['speedup_predicted']):>13}   "
            f"{speedup(r['speedup_measured'])} {interval(r['speedup_measured_ci']):<19} "
            f"{'—' if matched is None else f'{matched[0]}/{matched[1]}'}"
        )
    print(
        f"  goal (issue 13): decode-only E_meas within {GOAL_ERROR:.0%} of the prediction at every B: "
        f"{'met' if met and rows else 'MISSED'}"
    )
    print("\nwhat else ran (the machine sampler of each run; load average of the whole benchmark below):")
    print("\n".join(machine_notes(runs)))
    if mismatches or len(rows) < len(args.batches):
        missing = len(args.batches) - len(rows)
        print(
            f"\nFAIL: greedy speculative output differs from the batched baseline's at {mismatches} batch "
            f"size(s); {missing} not measured"
        )
        return 1
    total = sum(r["outputs_matched"][1] for r in rows)
    print(f"\nidentical greedy tokens, speculative vs baseline, at every B: yes ({total} requests)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    from specmeter.measuring import MeasureConfig, MeasureError, MeasureInterrupted, Silent
    from specmeter.measuring.batch_curve import bench_at_batches

    try:
        cfg = MeasureConfig(
            target=args.target, drafts=[args.draft], prompts=args.prompts, k=[args.k],
            max_tokens=args.max_tokens, limit=args.limit, cost_repeats=args.cost_repeats,
            threads=args.threads, dtype="float32", device="cpu", implementation="native",
        )  # fmt: skip
    except MeasureError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"target  {args.target}\ndraft   {args.draft}")
    print(
        f"prompts {args.prompts} (first {args.limit}) · k={args.k} · greedy · max {args.max_tokens} tokens · "
        f"B = {', '.join(map(str, args.batches))} · {3 * args.cost_repeats} steps per surface point"
    )
    print(
        f"torch {torch.__version__} · {args.threads} thread(s) · cpu · {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} before the run"
    )
    started = perf_counter()
    runs = []
    try:
        for b in args.batches:  # one run per B, each printed as it ends
            quiet = Silent()
            runs += bench_at_batches(cfg, [b], quiet)
            said = (runs[-1].result.get("hygiene") or {}).get("message")
            for line in quiet.warnings:  # the machine's verdict is printed with the results
                if line != said:
                    print(f"  {line}")
            print(f"  B={b} done ({perf_counter() - started:.0f} s)", flush=True)
            if runs[-1].exit_code:  # interrupted: report what was measured
                break
    except MeasureError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except MeasureInterrupted as e:
        print(str(e), file=sys.stderr)
        return 130
    status = report(args, runs)
    print(f"load average {os.getloadavg()[0]:.1f} after the run ({perf_counter() - started:.0f} s)")
    if args.json is not None:
        args.json.write_text(json.dumps([r for run in runs for r in run.rows], indent=2) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
