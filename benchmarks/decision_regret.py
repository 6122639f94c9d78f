"""Benchmark: the regret of ``select --from --costs``' pick from a log, against live ``bench`` (issue 37).

"From a log to a recommendation" (docs/replay.md) end to end, on the bundled models, with the decision
checked on traffic it has not seen. Each bundled golden set is a domain (``legal``, ``general``: the file);
each sub-category's prompts alternate into half A (the "production traffic" that gets logged) and half B
(held out), so both halves hold the same mix (:func:`stratified`). Every step is the specmeter command a user
runs, as its own process:

1. ``specmeter serve --target T --log LOG --log-output`` (no draft) on a free 127.0.0.1 port, in its own
   process group (``sweep.launch.ServerProcess``), answers half A sent by ``specmeter load --concurrency 1
   --temperature 0`` (each prompt's domain as the request's ``metadata.domain``, which serve logs); stopped;
2. ``specmeter replay --from LOG --method M … --k 2,4,6 --category-field domain``: every candidate's
   per-position acceptance per domain, without running the target (but for the EAGLE head's forwards);
3. ``specmeter tune --prompts <half A> --draft D … --k 2,4,6 --k-max 6 --batch 1,B``: the cost file (the cost
   surface t_step(B, k)), every candidate passed as a ``--draft`` (models first) so that each one's proposing
   is timed: a model's surface, a model-free method's lookups on the engine's proposer. With
   ``--single-cost-draft`` only the first is timed and the others borrow its cost (the pricing before issue
   37, for comparison; the output says so);
4. ``specmeter select --from replay.json --costs costs.json --batch 1`` and ``--batch B``: the pick per domain
   (method and k, or no speculation) and every candidate's predicted E per domain;
5. ``specmeter bench --prompts <half B> --draft <every candidate> --k 2,4,6`` and the same with ``--batch B``:
   the live truth on the held-out half, every candidate and the baseline interleaved request by request (wave
   by wave at B, each wave kept at B rows by background requests until its last request ends, as continuous
   batching under load keeps it) in one run; decode-only E_meas per candidate × k × domain (``by_category``).

Printed per domain and batch size: the pick with its predicted and measured E, the best candidate by
measured E (no speculation counts as a candidate at 1.00×), the regret 1 − E_meas(pick) / E_meas(best), and
every candidate's predicted E, measured E and error E_pred / E_meas − 1; then the regret per domain and the
median and largest |error| against the goals (regret ≤ 5% in every domain at B = 1 and B; |error| median ≤ 5%,
max ≤ 10%), and the machine sampler's verdict on the whole run. E is decode-only on both sides (the cost
surface prices decode steps; prefill is the same with and without speculation). How to read it:
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "src" / "specmeter" / "assets"
MODELS = ASSETS / "models"
DOMAINS = ("legal", "general")
DEFAULT_METHODS = (
    str(MODELS / "draft-legal"), str(MODELS / "draft-general"), str(MODELS / "draft-tiny"),
    f"eagle:head={MODELS / 'eagle-legal'}", "layers:n=4", "ngram", "ngram:min=2,max=4", "suffix",
)  # fmt: skip
# --smoke: two draft models, so that tune is asked to time several drafts. Not a model-free method: bench
# --batch's surface sampler tries each (B, k > 0) cell of one for 50 × (steps + 2) + 100 steps before giving
# it up (it has no draft forwards to time), about 45 s of the smoke run's 2 minutes on a busy 2-core VM.
SMOKE_METHODS = (str(MODELS / "draft-legal"), str(MODELS / "draft-tiny"))
GOAL_REGRET = 0.05
GOAL_ERROR_MEDIAN = 0.05
GOAL_ERROR_MAX = 0.10
HEALTH_TIMEOUT_S = 180.0
NONE = "no speculation"


def int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give positive integers")
    return sorted(set(values))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--target", type=Path, default=MODELS / "target", help="default: the bundled target")
    ap.add_argument(
        "--methods", nargs="+", metavar="M",
        help="candidates: draft directories, method specs, bundled:NAME (default: draft-legal, "
        "draft-general, draft-tiny, eagle:head=eagle-legal, layers:n=4, ngram, ngram:min=2,max=4, suffix)",
    )  # fmt: skip
    ap.add_argument("--k", type=int_list, default=[2, 4, 6], help="draft lengths (default 2,4,6)")
    ap.add_argument("--batch", type=int, default=4, help="the batched level besides B = 1 (default 4)")
    ap.add_argument(
        "--prompts-per-half",
        type=int,
        default=44,
        help="prompts per domain in each half (default 44: 4 of each of legal's 11 sub-categories)",
    )
    ap.add_argument("--max-tokens", type=int, default=64, help="output tokens per request (default 64)")
    ap.add_argument("--tune-limit", type=int, default=4, help="tune's --limit per half-A file (default 4)")
    ap.add_argument("--cost-repeats", type=int, default=9, help="tune's --cost-repeats (default 9)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of every command (default 1)")
    ap.add_argument(
        "--single-cost-draft", action="store_true",
        help="pass only the first model-based candidate to tune (a tune that takes one --draft)",
    )  # fmt: skip
    ap.add_argument("--out", type=Path, help="keep every intermediate file (logs, results) in this folder")
    ap.add_argument("--json", type=Path, help="write the table and the summary as JSON")
    ap.add_argument(
        "--smoke", action="store_true",
        help="test run: draft-legal, draft-tiny, k = 2, B = 1 and 2, 3 prompts per domain per half, 8 tokens",
    )  # fmt: skip
    args = ap.parse_args(argv)
    if args.smoke:
        args.methods = args.methods or list(SMOKE_METHODS[:2])
        args.methods, args.k, args.batch = args.methods[:2], [min(args.k)], min(args.batch, 2)
        args.prompts_per_half, args.max_tokens = min(args.prompts_per_half, 3), min(args.max_tokens, 8)
        args.tune_limit, args.cost_repeats = min(args.tune_limit, 2), 1
    args.methods = list(args.methods or DEFAULT_METHODS)
    for name in ("batch", "prompts_per_half", "max_tokens", "tune_limit", "cost_repeats", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.batch == 1:
        ap.error("--batch is the batched level besides B = 1: give 2 or more")
    return args


class StepError(RuntimeError):
    """A command of the pipeline failed; the message names it and ends with its output's tail."""


def _tool() -> str:
    path = Path(sys.executable).parent / "specmeter"
    return str(path) if path.exists() else "specmeter"


class Pipeline:
    """Runs the steps' commands, each as its own process, and remembers them as a user would type them."""

    def __init__(self, folder: Path, threads: int) -> None:
        self.folder = folder
        self.env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        self.commands: list[str] = []
        self.started = time.perf_counter()

    def shown(self, argv: Sequence[str]) -> str:
        """The command with the repository's and the work folder's paths shortened."""
        text = " ".join(a if a and " " not in a else repr(a) for a in ["specmeter", *argv[1:]])
        return text.replace(str(self.folder) + "/", "$OUT/").replace(str(ROOT) + "/", "")

    def run(self, name: str, argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
        self.commands.append(self.shown(argv))
        t0 = time.perf_counter()
        done = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, check=False)
        (self.folder / f"{name}.out").write_text(done.stdout + done.stderr, encoding="utf-8")
        print(
            f"  {self.shown(argv)}\n    ({time.perf_counter() - t0:.0f} s, exit {done.returncode})",
            flush=True,
        )
        if check and done.returncode != 0:
            raise StepError(f"{name} exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
        return done


def label_of(method: str) -> str:
    """The label a result gives the candidate (a method spec's label, a draft directory's name)."""
    from specmeter.methods import MethodSpec, parse_candidate

    parsed = parse_candidate(method)
    return parsed.label if isinstance(parsed, MethodSpec) else Path(method).name


def model_free(method: str) -> bool:
    from specmeter.methods import MethodSpec, parse_candidate

    parsed = parse_candidate(method)
    return isinstance(parsed, MethodSpec) and parsed.model_free


def short(label: str) -> str:
    """``eagle:head=/long/path/eagle-legal`` → ``eagle:head=…/eagle-legal`` for the table."""
    head, sep, path = label.partition(":head=")
    return f"{head}{sep}…/{Path(path).name}" if sep else label


def stratified(rows: Sequence[Mapping[str, Any]], start: int) -> list[Mapping[str, Any]]:
    """One half of a golden set, stratified by sub-category: each sub-category's prompts alternate between
    the halves (``start`` 0: its 1st, 3rd, …; 1: its 2nd, 4th, …), and the half takes the sub-categories
    in turn, so its first n prompts hold every sub-category ⌊n / c⌋ or ⌈n / c⌉ times, as the other half's
    do. Two halves of the same traffic mix: what differs between them is the prompts, not the mix (a plain
    alternation of 40 legal prompts gave one half 4 redline prompts and the other 3)."""
    by_category: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_category.setdefault(str(r.get("category")), []).append(r)
    columns = [group[start::2] for group in by_category.values()]
    # [[a1, a2], [b1], [c1, c2]] -> [a1, b1, c1, a2, c2]
    return [r for rank in itertools.zip_longest(*columns) for r in rank if r is not None]


def split(folder: Path, per_half: int) -> dict[str, dict[str, Path]]:
    """Each domain's golden set split into half A and half B by :func:`stratified`, the first ``per_half``
    of each; a prompt's category becomes its domain. Also A.jsonl: half A with the domains interleaved, the
    order the log receives them in."""
    files: dict[str, dict[str, Path]] = {"A": {}, "B": {}}
    halves: dict[str, dict[str, list[str]]] = {"A": {}, "B": {}}
    for domain in DOMAINS:
        lines = (ASSETS / "golden" / f"{domain}.jsonl").read_text(encoding="utf-8").splitlines()
        rows = [json.loads(x) for x in lines if x.strip()]
        for half, start in (("A", 0), ("B", 1)):
            chosen = stratified(rows, start)[:per_half]
            text = [json.dumps({"id": r["id"], "category": domain, "prompt": r["prompt"]}) for r in chosen]
            halves[half][domain] = text
            path = folder / f"{half}-{domain}.jsonl"
            path.write_text("".join(t + "\n" for t in text), encoding="utf-8")
            files[half][domain] = path
    mixed = [t for pair in zip(*halves["A"].values(), strict=False) for t in pair]
    longest = max(halves["A"].values(), key=len)
    mixed += longest[len(mixed) // len(DOMAINS) :]
    (folder / "A.jsonl").write_text("".join(t + "\n" for t in mixed), encoding="utf-8")
    files["A"]["all"] = folder / "A.jsonl"
    return files


def log_half_a(p: Pipeline, args: argparse.Namespace, prompts: Path) -> Path:
    """Step 1: a baseline ``serve --log-output`` answers half A, sent by ``load``; returns serve's log."""
    from specmeter.sweep.launch import LaunchError, ServerProcess, free_port

    log = p.folder / "serve-log.jsonl"
    log.unlink(missing_ok=True)  # serve appends to a log of its own kind: an --out folder's old one is gone
    port = free_port()
    argv = [
        _tool(), "serve", "--target", str(args.target), "--log", str(log), "--log-output",
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
    ]  # fmt: skip
    p.commands.append(p.shown(argv))
    print(f"  {p.shown(argv)}", flush=True)
    server = ServerProcess("serve", argv, f"http://127.0.0.1:{port}", p.folder / "serve.out")
    try:
        server.start(env={"OMP_NUM_THREADS": str(args.threads)})
        waited = asyncio.run(server.wait_healthy(HEALTH_TIMEOUT_S))
        print(f"    healthy after {waited:.0f} s", flush=True)
        p.run("load", [
            _tool(), "load", "--endpoint", server.url, "--prompts", str(prompts), "--api", "completions",
            "--concurrency", "1", "--max-tokens", str(args.max_tokens), "--temperature", "0", "--warmup", "0",
            "--warmup-per-level", "0", "--json", str(p.folder / "load.json"), "--quiet",
        ])  # fmt: skip
    except LaunchError as e:
        raise StepError(f"serve: {e}") from None
    finally:
        server.stop()
    return log


def cost_file(
    p: Pipeline, args: argparse.Namespace, half_a: Mapping[str, Path]
) -> tuple[Path, list[str], str]:
    """Step 3: ``tune --batch`` on half A; returns (costs.json, the drafts timed, a note)."""
    # Models first (tune's k sweep is the first --draft's), then the model-free methods: tune times their
    # lookups in the loop on the engine's own proposers, the ones bench runs (replay's indexed n-gram and
    # suffix walk are faster than the engine's, so replay's own lookup time would price them too cheap).
    drafts = [m for m in args.methods if not model_free(m)] + [m for m in args.methods if model_free(m)]
    costs = p.folder / "costs.json"

    def argv(chosen: Sequence[str]) -> list[str]:
        return [
            _tool(), "tune", "--target", str(args.target),
            *(a for d in DOMAINS for a in ("--prompts", str(half_a[d]))),
            *(a for d in chosen for a in ("--draft", d)),
            "--k", ",".join(map(str, args.k)), "--k-max", str(max(args.k)),
            "--batch", f"1,{args.batch}", "--limit", str(args.tune_limit),
            "--max-tokens", str(args.max_tokens), "--cost-repeats", str(args.cost_repeats),
            "--threads", str(args.threads), "--json", str(costs), "--no-store", "--quiet",
        ]  # fmt: skip

    note = ""
    if args.single_cost_draft or len(drafts) == 1:
        chosen = drafts[:1]
        if len(drafts) > 1:
            note = "--single-cost-draft"
    else:
        chosen = drafts
        done = p.run("tune", argv(chosen), check=False)
        if done.returncode == 0:
            return costs, chosen, note
        if "given twice" not in done.stdout + done.stderr:
            raise StepError(f"tune exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
        chosen = drafts[:1]
        note = "this tune takes one --draft"
        print(f"    {note}: the cost file times {label_of(chosen[0])} only", flush=True)
    p.run("tune", argv(chosen))
    return costs, chosen, note


def _rows(result: Mapping[str, Any]) -> dict[tuple[str, int], Mapping[str, Any]]:
    return {(str(c["draft"]), int(c["k"])): c for c in result.get("candidates") or []}


def measured(bench: Mapping[str, Any]) -> dict[str, dict[tuple[str, int], tuple[float | None, float | None]]]:
    """(decode-only, end-to-end) E_meas per domain and (label, k), from a bench result's ``by_category``."""
    out: dict[str, dict[tuple[str, int], tuple[float | None, float | None]]] = {d: {} for d in DOMAINS}
    for key, cand in _rows(bench).items():
        for domain, s in (cand.get("by_category") or {}).items():
            if domain in out:
                out[domain][key] = (s.get("speedup_measured_decode"), s.get("speedup_measured"))
    return out


def predicted(select: Mapping[str, Any], batch: int) -> dict[str, Any]:
    """Per domain: the pick (label, k, E) or None, and every ranked candidate's predicted E at ``batch``."""
    section = select["select"]
    out: dict[str, Any] = {}
    for domain in DOMAINS:
        rows = section["by_domain"].get(domain) or []
        pick = (section["recommendation"].get("by_domain") or {}).get(domain)
        out[domain] = {
            "pick": None if pick is None else (str(pick["draft"]), int(pick["k"]), pick["speedup_predicted"]),
            "e": {
                (str(r["draft"]), int(r["k"])): (r.get("speedup_by_batch") or {}).get(str(batch))
                for r in rows
            },
            "lower_bound": {(str(r["draft"]), int(r["k"])) for r in rows if r.get("lower_bound")},
            "ci": {
                (str(r["draft"]), int(r["k"])): (r.get("speedup_by_batch_ci") or {}).get(str(batch))
                for r in rows
            },
        }
    return out


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1%}"


def _name(key: tuple[str, int] | None) -> str:
    return NONE if key is None else f"{short(key[0])} k={key[1]}"


def decide(
    keys: Sequence[tuple[str, int]], pred: Mapping[str, Any], meas: Mapping[tuple[str, int], tuple[Any, Any]]
) -> dict[str, Any]:
    """One (domain, B): the pick, the best by E_meas, the regret and every candidate's error."""
    pick = pred["pick"]
    pick_key = None if pick is None else (pick[0], pick[1])
    e_meas = {k: meas.get(k, (None, None))[0] for k in keys}
    found = [(e, k) for k, e in e_meas.items() if e is not None]
    best_e, best_key = max(found, default=(1.0, None))
    if best_e < 1.0:
        best_e, best_key = 1.0, None  # no speculation beats every candidate
    pick_e = 1.0 if pick_key is None else e_meas.get(pick_key)
    regret = None if pick_e is None else 1.0 - pick_e / best_e
    rows = []
    for key in keys:
        p, (m, m_e2e) = pred["e"].get(key), meas.get(key, (None, None))
        error = None if p is None or not m else p / m - 1.0
        ci = pred.get("ci", {}).get(key)
        rows.append({
            "draft": key[0], "k": key[1], "predicted": p, "predicted_ci": ci, "measured": m,
            "measured_end_to_end": m_e2e, "error": error, "lower_bound": key in pred["lower_bound"],
            "covered": None if ci is None or not m else ci[0] <= m <= ci[1],
        })  # fmt: skip
    pick_draft, pick_k = pick_key or (None, None)
    best_draft, best_k = best_key or (None, None)
    return {
        "pick": {
            "draft": pick_draft, "k": pick_k, "predicted": 1.0 if pick is None else pick[2],
            "measured": pick_e,
        },
        "best": {"draft": best_draft, "k": best_k, "measured": best_e},
        "regret": regret,
        "candidates": rows,
    }  # fmt: skip


def print_case(domain: str, batch: int, case: Mapping[str, Any]) -> None:
    pick, best = case["pick"], case["best"]
    pick_key = None if pick["draft"] is None else (pick["draft"], pick["k"])
    best_key = None if best["draft"] is None else (best["draft"], best["k"])
    regret = "—" if case["regret"] is None else f"{case['regret']:.1%}"
    print(f"\n{domain}, B = {batch}:")
    print(f"  pick  {_name(pick_key)}: predicted {_x(pick['predicted'])}, measured {_x(pick['measured'])}")
    print(f"  best  {_name(best_key)}: measured {_x(best['measured'])}    regret {regret}")
    print(f"  {'candidate':<28} {'k':>2} {'E pred':>8} {'interval':>14} {'E meas':>8} {'error':>8}")
    for r in case["candidates"]:
        mark = "≥" if r["lower_bound"] else " "
        tag = "  ← pick" if (r["draft"], r["k"]) == pick_key else ""
        tag += "  ← best" if (r["draft"], r["k"]) == best_key else ""
        note = "  (not in select's table)" if r["predicted"] is None else ""
        ci = r.get("predicted_ci")
        interval = "—" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]" + (" " if r.get("covered") else "!")
        print(
            f"  {short(r['draft']):<28} {r['k']:>2} {mark}{_x(r['predicted']):>7} {interval:>14} "
            f"{_x(r['measured']):>8} {_pct(r['error']):>8}{tag}{note}"
        )


def summary(cases: Mapping[str, Mapping[int, Mapping[str, Any]]], batches: Sequence[int]) -> dict[str, Any]:
    regrets = {d: {b: cases[d][b]["regret"] for b in batches} for d in cases}
    known = [r for by_b in regrets.values() for r in by_b.values()]
    regret_met = bool(known) and all(r is not None and r <= GOAL_REGRET + 1e-12 for r in known)
    errors = [
        (abs(r["error"]), d, b, r["draft"], r["k"])
        for d in cases for b in batches for r in cases[d][b]["candidates"] if r["error"] is not None
    ]  # fmt: skip
    median = statistics.median(e[0] for e in errors) if errors else None
    worst = max(errors, default=None)
    print(f"\nregret = 1 − E_meas(pick) / E_meas(best), decode-only (goal ≤ {GOAL_REGRET:.0%}):")
    print(f"  {'domain':<10}" + "".join(f"{'B = ' + str(b):>10}" for b in batches))
    for d, by_b in regrets.items():
        cells = "".join(f"{'—' if r is None else f'{r:.1%}':>10}" for r in by_b.values())
        print(f"  {d:<10}{cells}")
    print(f"  goal ≤ {GOAL_REGRET:.0%} in every domain at every B: {'met' if regret_met else 'MISSED'}")
    print(
        f"prediction error |E pred / E meas − 1| over {len(errors)} candidates "
        "(method × k × domain × B, decode-only):"
    )
    median_met = median is not None and median <= GOAL_ERROR_MEDIAN
    max_met = worst is not None and worst[0] <= GOAL_ERROR_MAX
    print(
        f"  median {'—' if median is None else f'{median:.1%}'} "
        f"(goal ≤ {GOAL_ERROR_MEDIAN:.0%}: {'met' if median_met else 'MISSED'})"
    )
    if worst is not None:
        where = f"{short(worst[3])} k={worst[4]}, {worst[1]}, B = {worst[2]}"
        verdict = "met" if max_met else "MISSED"
        print(f"  max {worst[0]:.1%} at {where} (goal ≤ {GOAL_ERROR_MAX:.0%}: {verdict})")
    coverage: dict[str, Any] = {}
    for b in batches:
        rows = [r for d in cases for r in cases[d][b]["candidates"]]
        flags = [r["covered"] for r in rows if r.get("covered") is not None]
        if flags:
            coverage[str(b)] = {"covered": sum(flags), "count": len(flags)}
    shown = ", ".join(f"B = {b}: {c['covered']} of {c['count']}" for b, c in coverage.items())
    print(
        "the truth inside select's 95% prediction interval (the log's acceptance sampling only; "
        f"'!' above marks a miss): {shown or 'no interval (select gives one from 10 requests per domain)'}"
    )
    return {
        "regret": {d: {str(b): r for b, r in by_b.items()} for d, by_b in regrets.items()},
        "regret_goal": GOAL_REGRET, "regret_met": regret_met,
        "error_count": len(errors), "error_median": median, "error_median_goal": GOAL_ERROR_MEDIAN,
        "error_median_met": median_met, "error_max": None if worst is None else worst[0],
        "error_max_at": None if worst is None else {"draft": worst[3], "k": worst[4], "domain": worst[1],
                                                    "batch": worst[2]},
        "error_max_goal": GOAL_ERROR_MAX, "error_max_met": max_met, "coverage": coverage,
    }  # fmt: skip


def pipeline(p: Pipeline, args: argparse.Namespace) -> dict[str, Any]:
    files = split(p.folder, args.prompts_per_half)
    ks = ",".join(map(str, args.k))
    batches = [1, args.batch]
    half = {d: len(files["A"][d].read_text(encoding="utf-8").splitlines()) for d in DOMAINS}
    print(
        f"target {str(args.target).replace(str(ROOT) + '/', '')} · {len(args.methods)} candidates × "
        f"k = {ks} · "
        f"half A (logged) / half B (held out): {', '.join(f'{d} {n}' for d, n in half.items())} prompts each "
        f"· {args.max_tokens} tokens · greedy · {args.threads} torch thread(s)"
    )
    print("1. log half A: serve --log-output, load", flush=True)
    log = log_half_a(p, args, files["A"]["all"])
    print("2. replay the log with every candidate", flush=True)
    replay = p.folder / "replay.json"
    p.run("replay", [
        _tool(), "replay", "--from", str(log), "--target", str(args.target),
        *(a for m in args.methods for a in ("--method", m)), "--k", ks, "--category-field", "domain",
        "--json", str(replay), "--no-store", "--quiet",
    ])  # fmt: skip
    print("3. the cost file: tune --batch on half A", flush=True)
    costs, timed, cost_note = cost_file(p, args, files["A"])
    print("4. select --from --costs at each B", flush=True)
    chosen: dict[int, dict[str, Any]] = {}
    for b in batches:
        out = p.folder / f"select-b{b}.json"
        p.run(f"select-b{b}", [
            _tool(), "select", "--from", str(replay), "--costs", str(costs), "--batch", str(b),
            "--json", str(out), "--no-store", "--quiet",
        ])  # fmt: skip
        chosen[b] = predicted(json.loads(out.read_text(encoding="utf-8")), b)
    print("5. live truth on half B: bench, every candidate and the baseline interleaved", flush=True)
    truth: dict[int, Any] = {}
    cost_only: dict[int, list[float]] = {}
    machines: dict[str, Any] = {}
    for b in batches:
        out = p.folder / f"bench-b{b}.json"
        p.run(f"bench-b{b}", [
            _tool(), "bench", "--target", str(args.target),
            *(a for d in DOMAINS for a in ("--prompts", str(files["B"][d]))),
            *(a for m in args.methods for a in ("--draft", m)), "--k", ks,
            *(("--batch", str(b)) if b > 1 else ()), "--max-tokens", str(args.max_tokens),
            "--cost-repeats", "1", "--threads", str(args.threads), "--json", str(out), "--no-store",
            "--quiet",
        ])  # fmt: skip
        result = json.loads(out.read_text(encoding="utf-8"))
        truth[b] = measured(result)
        cost_only[b] = price_held_out(costs, result, b)
        machines[f"bench B={b}"] = (result.get("hygiene") or {}).get("verdict")
    machines["tune"] = (json.loads(costs.read_text(encoding="utf-8")).get("hygiene") or {}).get("verdict")

    keys = [(label_of(m), k) for m in args.methods for k in args.k]
    cases = {d: {b: decide(keys, chosen[b][d], truth[b][d]) for b in batches} for d in DOMAINS}
    timed_labels = [label_of(d) for d in timed]
    priced = [label_of(m) for m in args.methods]
    print(
        f"\ncost file: tune timed {', '.join(short(x) for x in timed_labels)}"
        + (
            f" only ({cost_note}): {', '.join(short(x) for x in priced if x not in timed_labels)} priced at "
            f"{short(timed_labels[0])}'s proposing cost"
            if set(priced) - set(timed_labels)
            else ""
        )
    )
    print("E = decode-only speedup: predicted by select --from --costs, measured by bench on half B")
    for d in DOMAINS:
        for b in batches:
            print_case(d, b, cases[d][b])
    figures = summary(cases, batches)
    figures["cost_only"] = cost_only_summary(cost_only)
    return {
        "cases": {d: {str(b): c for b, c in by_b.items()} for d, by_b in cases.items()},
        "summary": figures, "cost_drafts": timed_labels, "cost_note": cost_note or None,
        "machine_by_step": machines, "prompts_per_half": half,
    }  # fmt: skip


def price_held_out(costs: Path, result: Mapping[str, Any], batch: int) -> list[float]:
    """|E_pred / E_meas − 1| of every candidate × domain when the cost file prices half B's *own* measured
    acceptance (its bench summaries): the cost model's error alone, without the two halves' difference in
    acceptance (which a log of a few prompts per domain cannot avoid)."""
    from specmeter.pricing import predictor

    predict = predictor(costs)
    errors = []
    for c in result.get("candidates") or []:
        for d in DOMAINS:
            s = (c.get("by_category") or {}).get(d) or {}
            e_meas = s.get("speedup_measured_decode")
            row = predict([{"draft": c["draft"], "k": c["k"], "summary": s}])["rows"][0]
            e = (row.get("e") or {}).get(str(batch))
            if isinstance(e_meas, int | float) and e_meas > 0 and isinstance(e, int | float):
                errors.append(abs(e / e_meas - 1.0))
    return errors


def cost_only_summary(cost_only: Mapping[int, Sequence[float]]) -> dict[str, Any]:
    """Print and return the cost model's own error per B (:func:`price_held_out`)."""
    out: dict[str, Any] = {}
    print("the cost model alone (half B's own acceptance priced with the cost file, against its E_meas):")
    for b, errors in cost_only.items():
        if not errors:
            continue
        med, top = statistics.median(errors), max(errors)
        print(f"  B = {b}: median |error| {med:.1%}, max {top:.1%} over {len(errors)} candidate × domain")
        out[str(b)] = {"median": med, "max": top, "count": len(errors)}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from specmeter.bundled.names import resolve_bundled_args
    from specmeter.hygiene.section import MachineWatch

    args.methods = resolve_bundled_args(args.methods)
    args.target = Path(resolve_bundled_args([str(args.target)])[0])
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} before the run")
    with tempfile.TemporaryDirectory(prefix="decision-regret-") as tmp:
        folder = args.out if args.out is not None else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        folder = folder.resolve()
        p = Pipeline(folder, args.threads)
        watch = MachineWatch.start(threads=args.threads, gpu=False)
        try:
            figures = pipeline(p, args)
        except StepError as e:
            watch.finish()
            print(f"error: {e}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            watch.finish()
            print("interrupted", file=sys.stderr)
            return 130
        machine = watch.finish() or {}
    seconds = time.perf_counter() - p.started
    message = f": {machine['message']}" if machine.get("message") else ""
    verdict = machine.get("verdict") or "not sampled"
    print(f"what else ran (the machine sampler, the whole run): {verdict}{message}")
    steps = ", ".join(f"{k} {v or '—'}" for k, v in figures["machine_by_step"].items())
    print(f"  each measuring command's own verdict: {steps}")
    print(f"load average {os.getloadavg()[0]:.1f} after the run ({seconds:.0f} s)")
    if args.json is not None:
        out = {
            "target": str(args.target), "methods": args.methods, "k": args.k, "batches": [1, args.batch],
            "max_tokens": args.max_tokens, "tune_limit": args.tune_limit, "commands": p.commands,
            "machine": machine.get("verdict"), "machine_message": machine.get("message"), "seconds": seconds,
            **figures,
        }  # fmt: skip
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
