"""Benchmark: the predicted crossover batch size against the measured one — the same level or the adjacent?

The crossover is the smallest batch size from which speculation no longer pays: the first level whose
best k is 0 (docs/metrics.md, "Under load"). Both sides use the measuring core, as the commands do:

- **predicted** — ``tune --batch 1,2,4,8,16`` (``measuring.tune_run.run_tune`` with ``batch``): the k sweep at
  batch 1 gives the per-position acceptance, then the cost surface t_step(B, k) is timed for every level
  and k = 0 … ``--k-max`` and E(B, k) = τ(k) · t_step(B, 0) / t_step(B, k) is predicted;
- **measured** — ``bench --batch B`` at every level (``measuring.batch_curve.bench_at_batches``): waves of
  B concurrent sequences, the baseline and a candidate per draft length in ``--k`` interleaved wave by wave;
  decode-only E_meas per (B, k).

The comparison uses the same draft lengths on both sides (k = 0 and ``--k``); tune's own crossover over
every k up to ``--k-max`` and the schedule it recommends are printed beside it. The goal (issue 13): the two
crossovers are the same level or adjacent ones ("none" — speculation pays at every level — counts as the
level after the last). Ratios only; how to read the output: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from time import perf_counter
from typing import Any

from batched_spec import BUNDLED, int_list, interval, speedup

GOAL_LEVELS = 1  # predicted and measured crossover at most one level apart


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--target", type=Path, help="target model directory (default: bundled target)")
    ap.add_argument("--draft", type=Path, help="draft model directory (default: bundled draft-legal)")
    ap.add_argument("--prompts", type=Path, help="golden set (default: bundled legal golden set)")
    ap.add_argument(
        "--levels", type=int_list, default=[1, 2, 4, 8, 16], help="batch sizes (default 1,2,4,8,16)"
    )
    ap.add_argument("--k", type=int_list, default=[2, 4], help="draft lengths measured (default 2,4)")
    ap.add_argument("--k-max", type=int, default=4, help="tune predicts k = 0 … k-max (default 4)")
    ap.add_argument("--limit", type=int, default=32, help="prompts per bench --batch run (default 32)")
    ap.add_argument("--tune-limit", type=int, default=16, help="prompts of tune's k sweep (default 16)")
    ap.add_argument("--max-tokens", type=int, default=32, help="output tokens per request (default 32)")
    ap.add_argument("--cost-repeats", type=int, default=9, help="default 9 (27 steps per point)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1, see README)")
    ap.add_argument("--json", type=Path, help="also write both sides and the verdict as JSON")
    ap.add_argument("--quick", action="store_true", help="smoke run: levels 1,2,4, 8 prompts, 16 tokens")
    ap.add_argument(
        "--smoke", action="store_true", help="test run (seconds): levels 1,2; k = 2; 2 prompts, 8 tokens"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.levels = [b for b in args.levels if b <= 4] or args.levels[:1]
        args.limit, args.tune_limit = min(args.limit, 8), min(args.tune_limit, 6)
        args.max_tokens, args.cost_repeats = min(args.max_tokens, 16), 3
    if args.smoke:
        args.levels, args.k, args.k_max = [min(b, 2) for b in args.levels], [min(args.k)], min(args.k)
        args.limit, args.tune_limit = min(args.limit, 2), min(args.tune_limit, 2)
        args.max_tokens, args.cost_repeats = min(args.max_tokens, 8), 1
    args.levels, args.k = sorted(set(args.levels)), sorted(set(args.k))
    for name in ("k_max", "limit", "tune_limit", "max_tokens", "cost_repeats", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if max(args.k) > args.k_max:
        ap.error(f"--k: {max(args.k)} is above --k-max {args.k_max}")
    given = [args.target is not None, args.draft is not None, args.prompts is not None]
    if any(given) and not all(given):
        ap.error("give all of --target, --draft and --prompts, or none of them")
    if not any(given):
        args.target, args.draft, args.prompts = BUNDLED
    return args


def level_index(levels: Sequence[int], crossover: int | None) -> int:
    return len(levels) if crossover is None else levels.index(crossover)


def show(crossover: int | None, levels: Sequence[int]) -> str:
    return f"B={crossover}" if crossover is not None else f"none (pays up to B={levels[-1]})"


def best_text(by_k: Mapping[int, float | None], best: int) -> str:
    return f"{best}" + ("" if best == 0 or by_k.get(best) is None else f" ({by_k[best]:.2f}x)")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    from specmeter.measuring import MeasureConfig, MeasureError, MeasureInterrupted, Silent
    from specmeter.measuring.batch_curve import (
        bench_at_batches,
        best_k_by_batch,
        crossover,
        predicted_speedups,
    )
    from specmeter.measuring.tune_run import resolve_ks, run_tune

    common: dict[str, Any] = dict(
        target=args.target, drafts=[args.draft], prompts=args.prompts, max_tokens=args.max_tokens,
        cost_repeats=args.cost_repeats, threads=args.threads, dtype="float32", device="cpu",
        implementation="native",
    )  # fmt: skip
    print(f"target  {args.target}\ndraft   {args.draft}\nprompts {args.prompts}")
    print(
        f"levels  B = {', '.join(map(str, args.levels))} · k = {', '.join(map(str, args.k))} measured, "
        f"0 … {args.k_max} predicted · greedy · max {args.max_tokens} tokens · tune on the first "
        f"{args.tune_limit} prompts, bench --batch on the first {args.limit}"
    )
    print(
        f"torch {torch.__version__} · {args.threads} thread(s) · cpu · {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} before the run"
    )
    started = perf_counter()
    try:
        ks, holdout = resolve_ks(args.k_max, args.k, None)
        tune_cfg = MeasureConfig(**common, k=ks, limit=args.tune_limit, batch=args.levels, kind="tune")
        tuned = run_tune(tune_cfg, Silent(), k_max=args.k_max, holdout=holdout)
        section = (tuned.result.get("tune") or {}).get("batch")
        if tuned.exit_code or section is None:
            print("error: tune --batch did not finish (interrupted, or no source run)", file=sys.stderr)
            return 1
        print(f"  tune --batch done ({perf_counter() - started:.0f} s)", flush=True)
        bench_cfg = MeasureConfig(**common, k=args.k, limit=args.limit)
        runs = []
        for b in args.levels:
            runs += bench_at_batches(bench_cfg, [b], Silent())
            print(f"  bench --batch {b} done ({perf_counter() - started:.0f} s)", flush=True)
            if runs[-1].exit_code:
                print("error: a bench --batch run was interrupted", file=sys.stderr)
                return 130
    except MeasureError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except MeasureInterrupted as e:
        print(str(e), file=sys.stderr)
        return 130

    levels = args.levels
    predicted = predicted_speedups(section, [0, *args.k])
    predicted_best = best_k_by_batch(predicted)
    measured = {run.batch: {r["k"]: r["speedup_measured_decode"] for r in run.rows} for run in runs}
    cis = {(run.batch, r["k"]): r["speedup_measured_decode_ci"] for run in runs for r in run.rows}
    measured_best = best_k_by_batch(measured)
    cross_pred, cross_meas = crossover(predicted_best), crossover(measured_best)
    cross_tune = section["crossover_batch"]
    distance = abs(level_index(levels, cross_pred) - level_index(levels, cross_meas))

    head = "  ".join(f"{'E(B,' + str(k) + ') pred':>12}" for k in args.k)
    meas_head = "  ".join(f"{'E_meas(B,' + str(k) + ') [95% CI]':<24}" for k in args.k)
    print("\nE(B, k), decode-only, predicted by tune --batch and measured by bench --batch at each B:")
    print(
        f"  {'B':>3}  {head}  {'best k':>10}   {meas_head}  {'best k':>10}   tune's best k (0 … {args.k_max})"
    )
    for b in levels:
        pred_cells = "  ".join(f"{speedup(predicted[b].get(k)):>12}" for k in args.k)
        meas_cells = "  ".join(
            f"{speedup(measured[b].get(k))} {interval(cis.get((b, k))):<17}" for k in args.k
        )
        tune_best = section["best_k"].get(str(b))
        print(
            f"  {b:>3}  {pred_cells}  {best_text(predicted[b], predicted_best[b]):>10}   {meas_cells}  "
            f"{best_text(measured[b], measured_best[b]):>10}   {tune_best}"
        )
    verdict = "same level" if distance == 0 else "adjacent" if distance == 1 else f"{distance} levels apart"
    met = distance <= GOAL_LEVELS
    print(f"\ncrossover (first B whose best k among 0, {', '.join(map(str, args.k))} is 0):")
    print(f"  predicted (tune --batch)  {show(cross_pred, levels)}")
    print(f"  measured (bench --batch)  {show(cross_meas, levels)}")
    print(f"  {verdict}   goal: same level or adjacent: {'met' if met else 'MISSED'}")
    print(f"  tune's crossover over k = 0 … {args.k_max}: {show(cross_tune, levels)}")
    print(f"  tune's schedule: {section['schedule_description']}")
    print(f"    serve --k-schedule '{section['serve_k_schedule']}'")
    print(
        f"    vLLM num_speculative_tokens_per_batch_size: {section['num_speculative_tokens_per_batch_size']}"
    )
    if section["surface"]["noisy"]:
        print(f"  noisy surface points (B, k): {section['surface']['noisy']}")

    print("\nwhat else ran (the machine sampler of each run):")
    for name, result in [("tune", tuned.result), *((f"bench B={run.batch}", run.result) for run in runs)]:
        hygiene = result.get("hygiene") or {}
        message = f": {hygiene['message']}" if hygiene.get("message") else ""
        print(f"  {name:<12} {hygiene.get('verdict') or 'not sampled'}{message}")
    mismatched = [
        f"B={r['batch']} k={r['k']}"
        for run in runs
        for r in run.rows
        if not r["outputs_matched"] or r["outputs_matched"][0] != r["outputs_matched"][1]
    ]
    print(f"load average {os.getloadavg()[0]:.1f} after the run ({perf_counter() - started:.0f} s)")
    if args.json is not None:
        out = {
            "levels": levels,
            "k": args.k,
            "predicted": {str(b): {str(k): e for k, e in v.items()} for b, v in predicted.items()},
            "measured": {str(b): {str(k): e for k, e in v.items()} for b, v in measured.items()},
            "crossover_predicted": cross_pred,
            "crossover_measured": cross_meas,
            "crossover_tune": cross_tune,
            "levels_apart": distance,
            "schedule": section["num_speculative_tokens_per_batch_size"],
        }
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    if mismatched:
        print(
            f"FAIL: greedy speculative output differs from the batched baseline's at {', '.join(mismatched)}"
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
