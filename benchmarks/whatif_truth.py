"""Benchmark: does the what-if surface predict a real draft's speedup? (issue "What-if", truth check)

On the bundled legal pair (target + draft-legal, legal golden set, greedy, k = 4) this measures, in one run:

1. the real draft at batch 1 (``bench``) and at batch B (``bench --batch B``): its α and E_meas;
2. the what-if surface with the same draft's proposals timed (``whatif --draft draft-legal``) at a grid of
   forced α around the real one, at batch 1 and B;

then reads the surface at the real α (linear in α, ``selection.whatif_surface.surface_e``) and prints
predicted against measured E at each batch size, end to end and decode-only, with the relative error; and
the same reading corrected for the spread of the real requests' acceptance
(``selection.whatif_surface.spread_prediction`` with the real run's per-request α and output lengths,
docs/metrics.md "What if": requests that differ).
Goal: within 10% at B = 1 and at the batched level. Measurements run one after another (not
interleaved), so drift of the machine between them is part of the error; run it on a quiet machine and
say what else ran.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specmeter.measuring.bench_run import run_bench
from specmeter.measuring.config import MeasureConfig
from specmeter.measuring.progress import Silent
from specmeter.measuring.whatif_run import WhatifConfig, run_whatif
from specmeter.selection.whatif_surface import spread_prediction, surface_e

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "src" / "specmeter" / "assets"
GOAL = 0.10


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--target", type=Path, default=ASSETS / "models" / "target")
    ap.add_argument("--draft", type=Path, default=ASSETS / "models" / "draft-legal")
    ap.add_argument("--prompts", type=Path, default=ASSETS / "golden" / "legal.jsonl")
    ap.add_argument("--limit", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--batch", type=int, default=4, help="the batched level (besides B = 1)")
    ap.add_argument("--alpha", default="0.5,0.6,0.7,0.8,0.9", help="the what-if grid around the real α")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--smoke", action="store_true", help="test run (seconds): B = 1, 2; 2 prompts, 8 tokens")
    args = ap.parse_args(argv)
    if args.smoke:  # one torch thread unless told: two stall on a shared machine (README, engine_vs_hf)
        args.limit, args.max_tokens, args.batch = min(args.limit, 2), min(args.max_tokens, 8), 2
        args.alpha, args.threads = "0.5,0.9", args.threads or 1
    return args


def _cfg(args: argparse.Namespace, **fields: Any) -> MeasureConfig:
    if args.smoke:  # the smallest cost curves: a test run checks the code paths, not the machine
        fields.setdefault("cost_repeats", 1)
    return MeasureConfig(
        target=args.target, prompts=args.prompts, drafts=[args.draft], k=[args.k], limit=args.limit,
        max_tokens=args.max_tokens, threads=args.threads, store=None, **fields,
    )  # fmt: skip


def _per_request(csv_path: Path) -> list[tuple[float, int]]:
    """The candidate's requests as (α_i, decode tokens_i), from the run's per-request CSV."""
    out = []
    with csv_path.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            drafted = int(row["drafted_tokens"] or 0)
            if row["draft"] and drafted > 0:
                out.append((int(row["accepted_tokens"]) / drafted, max(0, int(row["output_tokens"]) - 1)))
    return out


def _real(args: argparse.Namespace, batch: int) -> Mapping[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "requests.csv"
        cfg = _cfg(args, batch=() if batch == 1 else (batch,), csv_out=csv_path)
        out = run_bench(cfg, Silent()).result
        requests = _per_request(csv_path)
    summary = out["candidates"][0]["summary"]
    return {
        "alpha": summary["acceptance_rate"],
        "e": summary["speedup_measured"],
        "e_decode": summary["speedup_measured_decode"],
        "verdict": (out.get("hygiene") or {}).get("verdict"),
        "requests": requests,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    alphas = [float(a) for a in args.alpha.split(",")]
    t0 = time.perf_counter()
    real = {b: _real(args, b) for b in (1, args.batch)}
    whatif = run_whatif(
        WhatifConfig(measure=_cfg(args, kind="whatif"), alphas=alphas, batches=(1, args.batch)), Silent()
    ).result
    section = whatif["whatif"]
    print(
        f"bundled target + {args.draft.name}, {args.prompts.name} × {args.limit}, {args.max_tokens} "
        f"tokens, k={args.k}, greedy; what-if grid α = {args.alpha} (whatif runs requests to their limit)"
    )
    print(
        f"{'B':>3} {'α real':>7} {'E real':>7} {'E pred':>7} {'error':>7} {'E dec real':>10} "
        f"{'E dec pred':>10} {'error':>7}  machine   | spread: {'factor':>6} {'E pred':>7} {'error':>7} "
        f"{'E dec pred':>10} {'error':>7}"
    )
    worst = 0.0
    nan = float("nan")
    for b, r in real.items():
        cells = [c for c in section["cells"] if c["batch"] == b and c["k"] == args.k]
        decode = {"cells": [{**c, "e": c["e_decode"]} for c in cells]}
        pred = (surface_e(section, r["alpha"], args.k, b) or (nan, True))[0]
        pred_dec = (surface_e(decode, r["alpha"], args.k, b) or (nan, True))[0]
        e, e_dec = float(r["e"]), float(r["e_decode"])
        err, err_dec = pred / e - 1, pred_dec / e_dec - 1
        worst = max(worst, abs(err), abs(err_dec))
        # The same readings corrected for the real requests' spread (one factor, from the decode costs).
        spread = spread_prediction(section, r["alpha"], args.k, b, r["requests"], tokens=args.max_tokens - 1)
        factor = nan if spread is None else float(spread["factor"])
        print(
            f"{b:>3} {r['alpha']:>7.3f} {e:>6.2f}× {pred:>6.2f}× {err:>+7.1%} {e_dec:>9.2f}× "
            f"{pred_dec:>9.2f}× {err_dec:>+7.1%}  {r['verdict']!s:<9} | spread: {factor:>6.3f} "
            f"{pred * factor:>6.2f}× {pred * factor / e - 1:>+7.1%} {pred_dec * factor:>9.2f}× "
            f"{pred_dec * factor / e_dec - 1:>+7.1%}"
        )
        if spread is not None:
            costs = ", ".join(f"t({pb},{pk}) {ms:.1f}" for pb, pk, ms in spread["step_ms"])
            print(f"    B = {b}: the spread factor priced steps at (ms per step) {costs}")
    verdict = (whatif.get("hygiene") or {}).get("verdict")
    print(
        f"what-if run: machine {verdict}; cost ratio c = {section.get('cost_ratio'):.3f}; "
        f"worst |error| {worst:.1%} (goal ≤ {GOAL:.0%}); {time.perf_counter() - t0:.0f} s in all"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
