"""Benchmark: specmeter's engine against transformers' own generation, same models, prompts and k, greedy.

Four systems decode every prompt, interleaved in a rotating order so drift of a shared machine hits them
alike, over several passes: specmeter's speculative decoding, specmeter's baseline (the same loop without a
draft), transformers' assisted generation (k tokens per step, constant schedule, no confidence-based early
stop) and transformers' plain greedy ``generate``. It prints wall-time ratios measured side by side in this
one run, never absolute claims; E_meas and E_cal from specmeter's own metrics; where speculative decoding's
time went next to what the cost curve predicts; and it checks that all four produce the same greedy tokens
(exit 1 if not). Goals on the project's 2-core CPU: specmeter ≥ 1.3x faster than assisted generation, and
E_meas ≥ 0.9·E_cal. How to read the output: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter
from typing import Any

import torch

from specmeter.engine.base import synchronize
from specmeter.engine.costs import measure_cost_curve
from specmeter.engine.loader import LoadedModel, load_model
from specmeter.engine.runner import PreparedPrompt as Prompt
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import Generation, speculative_decode
from specmeter.metrics.costmodel import step_mix
from specmeter.metrics.records import CostCurve, RequestRecord, RunRecord
from specmeter.metrics.speedup import speedup_calibrated
from specmeter.metrics.summary import summarize
from specmeter.modeldir import ModelDirError
from specmeter.workloads import WorkloadError, load_workload, render_prompt

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "src" / "specmeter" / "assets"
BUNDLED = (ASSETS / "models" / "target", ASSETS / "models" / "draft-legal", ASSETS / "golden" / "legal.jsonl")
SYSTEMS = ("specmeter speculative", "specmeter baseline", "hf assisted", "hf greedy")
SPEC, BASE, HF_ASSISTED, HF_GREEDY = SYSTEMS
# Goals of issue 2, checked and printed (not enforced: they depend on the machine and its load).
GOAL_VS_ASSISTED = 1.3
GOAL_MEAS_OVER_CAL = 0.9


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--target", type=Path, help="target model directory (default: the bundled target)")
    ap.add_argument("--draft", type=Path, help="draft model directory")
    ap.add_argument("--prompts", type=Path, help="golden set (specmeter JSONL or Spec-Bench question.jsonl)")
    ap.add_argument("--k", type=int, default=4, help="draft length (default 4)")
    ap.add_argument("--max-tokens", type=int, default=64, help="output tokens per request (default 64)")
    ap.add_argument("--limit", type=int, default=16, help="first N prompts (default 16)")
    ap.add_argument("--repeats", type=int, default=2, help="passes over the prompts (default 2)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1, see README)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    ap.add_argument("--quick", action="store_true", help="smoke run (~15-30 s): 4 prompts, 32 tokens, 1 pass")
    ap.add_argument("--smoke", action="store_true", help="test run (seconds): 2 prompts, 8 tokens, 1 pass")
    ap.add_argument("--profile", type=Path, help="also write a cProfile of specmeter's speculative decoding")
    args = ap.parse_args(argv)
    if args.quick:
        args.limit, args.max_tokens, args.repeats = min(args.limit, 4), min(args.max_tokens, 32), 1
    if args.smoke:
        args.limit, args.max_tokens, args.repeats = min(args.limit, 2), min(args.max_tokens, 8), 1
    for name in ("k", "max_tokens", "limit", "repeats", "threads"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    given = [args.target is not None, args.draft is not None, args.prompts is not None]
    if any(given) and not all(given):
        ap.error("give all of --target, --draft and --prompts, or none of them")
    return args


def resolve_inputs(args: argparse.Namespace) -> tuple[Path, Path, Path]:
    """(target, draft, prompts): the user's, or the bundled target, legal draft and legal golden set."""
    if args.target is not None:
        return args.target, args.draft, args.prompts
    return BUNDLED


def load_prompts(path: Path, tokenizer: Any, limit: int, max_tokens: int) -> list[Prompt]:
    workload = load_workload(path).limit(limit)
    return [
        Prompt(p.id, p.category, tuple(render_prompt(p, tokenizer)), p.max_tokens or max_tokens)
        for p in workload.prompts
    ]


def load_hf(path: Path, device: torch.device) -> Any:
    from transformers import AutoModelForCausalLM

    model: Any = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32, local_files_only=True)
    return model.to(device).eval()


def configure_assistant(hf_draft: Any, k: int) -> dict[str, Any]:
    """Pin assisted generation to exactly k drafted tokens per step; returns the matching generate kwargs.

    transformers reads these three settings from the *assistant's* generation config; passed to generate()
    alone they change the target's config and the assistant keeps its defaults (an adaptive confidence
    threshold that stops drafting early), which would compare different algorithms.
    """
    settings: dict[str, Any] = dict(
        num_assistant_tokens=k, num_assistant_tokens_schedule="constant", assistant_confidence_threshold=0.0
    )
    for key, value in settings.items():
        setattr(hf_draft.generation_config, key, value)
    return settings


class Bench:
    """The four systems on one (target, draft, k), each a callable prompt -> (output ids, wall s, gen)."""

    def __init__(
        self, target: LoadedModel, draft: LoadedModel, hf_target: Any, hf_draft: Any, k: int
    ) -> None:
        self.target, self.draft, self.hf_target, self.hf_draft, self.k = target, draft, hf_target, hf_draft, k
        self.device = target.model.device
        self.pad = target.tokenizer.pad_token_id
        if self.pad is None:
            self.pad = next(iter(target.eos_ids), 0)
        self.assist_kwargs = configure_assistant(hf_draft, k)

    def systems(self) -> dict[str, Callable[[Prompt, int], tuple[tuple[int, ...], float, Generation | None]]]:
        return {
            SPEC: lambda p, n: self._ours(p, n, self.draft),
            BASE: lambda p, n: self._ours(p, n, None),
            HF_ASSISTED: lambda p, n: self._hf(p, n, assistant_model=self.hf_draft, **self.assist_kwargs),
            HF_GREEDY: lambda p, n: self._hf(p, n),
        }

    def _ours(self, prompt: Prompt, max_tokens: int, draft: LoadedModel | None) -> Any:
        synchronize(self.device)
        t0 = perf_counter()
        gen = speculative_decode(
            self.target.model, None if draft is None else draft.model, prompt.ids,
            k=self.k if draft is not None else 0, params=SamplingParams(), max_tokens=max_tokens,
            eos_ids=self.target.eos_ids,
        )  # fmt: skip
        synchronize(self.device)
        return gen.output_ids, perf_counter() - t0, gen

    def _hf(self, prompt: Prompt, max_tokens: int, **extra: Any) -> Any:
        synchronize(self.device)
        t0 = perf_counter()
        with torch.inference_mode():
            ids = torch.tensor([prompt.ids], device=self.device)
            out = self.hf_target.generate(
                ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=max_tokens,
                pad_token_id=self.pad, **extra,
            )  # fmt: skip
        synchronize(self.device)
        return tuple(out[0, len(prompt.ids) :].tolist()), perf_counter() - t0, None

    def check_assisted_schedule(self, prompt: Prompt, max_tokens: int) -> list[int]:
        """Tokens fed to the target per assisted-generation decode forward (untimed): k+1 until the end."""
        fed: list[int] = []

        def hook(_module: Any, args: Any, kwargs: Any) -> None:
            ids = kwargs.get("input_ids", args[0] if args else None)
            if ids is not None:
                fed.append(int(ids.shape[1]))

        handle = self.hf_target.register_forward_pre_hook(hook, with_kwargs=True)
        try:
            self.systems()[HF_ASSISTED](prompt, max_tokens)
        finally:
            handle.remove()
        return fed[1:]  # the first forward is the prefill


def to_record(prompt: Prompt, gen: Generation) -> RequestRecord:
    return RequestRecord(
        id=prompt.id, category=prompt.category, prompt_tokens=len(prompt.ids),
        output_tokens=len(gen.output_ids), latency_s=gen.latency_s, ttft_s=gen.ttft_s,
        prefill_s=gen.prefill_s, steps=gen.steps, emissions=gen.emissions, output_ids=gen.output_ids,
        finish_reason=gen.finish_reason,
    )  # fmt: skip


@dataclass
class Measurements:
    times: dict[str, list[float]]  # system -> wall seconds per (pass, prompt), all in the same order
    spec: list[RequestRecord]
    base: list[RequestRecord]
    mismatches: list[str]
    curves: list[CostCurve]  # [0]: one burst before the run, as `specmeter bench` does; then one per prompt

    def curve_along(self) -> CostCurve:
        """Point-wise median of the cost curves sampled after every prompt.

        One burst of timings catches whatever load the machine had at that moment, while E_meas averages
        over the whole run; sampling the curve along the run exposes it to the same conditions.
        """
        along = self.curves[1:] or self.curves
        return CostCurve(
            target_s=tuple(statistics.median(xs) for xs in zip(*(c.target_s for c in along), strict=True)),
            draft_s=statistics.median(c.draft_s for c in along),
            repeats=sum(c.repeats for c in along),
        )


def measure(bench: Bench, prompts: list[Prompt], repeats: int) -> Measurements:
    """Every prompt through all four systems, rotating their order, ``repeats`` times."""
    systems = bench.systems()
    m = Measurements({name: [] for name in SYSTEMS}, [], [], [], [])

    def sample_costs(repeats: int) -> None:
        t, d = bench.target.model, bench.draft.model
        m.curves.append(measure_cost_curve(t, d, prompts[0].ids, bench.k + 1, repeats=repeats))

    sample_costs(9)  # the runner's default
    started = perf_counter()
    for r in range(repeats):
        for n, prompt in enumerate(prompts):
            shift = (r * len(prompts) + n) % len(SYSTEMS)
            outputs: dict[str, tuple[int, ...]] = {}
            for name in SYSTEMS[shift:] + SYSTEMS[:shift]:
                out, wall, gen = systems[name](prompt, prompt.max_tokens)
                outputs[name] = out
                m.times[name].append(wall)
                if gen is not None:
                    (m.spec if name == SPEC else m.base).append(to_record(prompt, gen))
            differ = [name for name in SYSTEMS if outputs[name] != outputs[HF_GREEDY]]
            m.mismatches += [f"{prompt.id} (pass {r + 1}): {name}" for name in differ]
            sample_costs(3)
        print(f"  pass {r + 1}/{repeats} done ({perf_counter() - started:.0f} s)", flush=True)
    return m


def ratio_line(label: str, slow: list[float], fast: list[float], goal: float | None = None) -> str:
    total = sum(slow) / sum(fast)
    median = statistics.median(s / f for s, f in zip(slow, fast, strict=True))
    line = f"  {label:<48} {total:5.2f}x   (median per request {median:5.2f}x)"
    if goal is not None:
        line += f"   goal ≥ {goal:.1f}x: {'met' if total >= goal else 'MISSED'}"
    return line


def time_breakdown(m: Measurements, curve: CostCurve, e_meas: float) -> list[str]:
    """Where speculative decoding's time went, next to what the cost curve predicts for the same work."""
    steps = [s for rec in m.spec for s in rec.steps]
    prefill = sum(rec.prefill_s for rec in m.spec)
    drafting = sum(s.draft_s for s in steps)
    verifying = sum(s.verify_s for s in steps)
    rest = sum(rec.latency_s for rec in m.spec) - prefill - drafting - verifying
    draft_model = sum(s.draft_forwards for s in steps) * curve.draft_s
    verify_model = sum(curve.t_target(s.drafted + 1) for s in steps)
    base_tokens = sum(max(rec.output_tokens - 1, 0) for rec in m.base)
    base_decode = sum(rec.latency_s - rec.ttft_s for rec in m.base)
    # After a step that accepted every draft token, the draft has not seen the last one, so the next step's
    # first draft forward takes 2 tokens; split the per-forward draft time by that.
    after_full: list[float] = []
    after_reject: list[float] = []
    for rec in m.spec:
        for prev, step in zip(rec.steps, rec.steps[1:], strict=False):
            if step.draft_forwards and prev.drafted:
                full = prev.accepted == prev.drafted
                (after_full if full else after_reject).append(step.draft_s / step.draft_forwards)

    # E_cal again, for the run's measured step mix, with t_D(1) replaced by the draft's time per forward
    # inside the loop: how much of the E_meas / E_cal gap the isolated draft timing explains.
    in_loop = replace(curve, draft_s=drafting / max(sum(s.draft_forwards for s in steps), 1))
    e_loop = speedup_calibrated(step_mix(m.spec), in_loop) or float("nan")

    def vs(real: float, model: float) -> str:
        return f"{real * 1e3:8.0f} ms   cost curve predicts {model * 1e3:6.0f} ms ({real / model - 1:+.0%})"

    def ms(xs: list[float]) -> str:
        return f"{statistics.median(xs) * 1e3:.2f} ms" if xs else "-"

    return [
        f"  prefill (target + draft)   {prefill * 1e3:8.0f} ms",
        f"  drafting                   {vs(drafting, draft_model)}",
        f"  verification               {vs(verifying, verify_model)}",
        f"  loop bookkeeping           {rest * 1e3:8.0f} ms",
        f"  draft time per forward: {ms(after_reject)} after a rejection, {ms(after_full)} after a step that "
        f"accepted all ({len(after_full)} of {len(after_full) + len(after_reject)} steps; its first forward "
        f"takes 2 tokens); t_D(1) in the cost curve {curve.draft_s * 1e3:.2f} ms",
        f"  baseline decode: {base_decode / max(base_tokens, 1) * 1e3:.2f} ms per token; "
        f"t_T(1) in the cost curve {curve.target_s[0] * 1e3:.2f} ms",
        f"  E_cal with the in-loop draft time ({in_loop.draft_s * 1e3:.2f} ms per forward) for t_D(1): "
        f"{e_loop:.2f}x, E_meas / that {e_meas / e_loop:.3f}",
    ]


def report(args: argparse.Namespace, m: Measurements, target: LoadedModel, draft: LoadedModel) -> int:
    def summary(curve: CostCurve) -> dict[str, Any]:
        common: dict[str, Any] = dict(target=target.info, temperature=0.0, top_p=1.0, cost_curve=curve)
        base_run = RunRecord(draft=None, k=0, requests=tuple(m.base), **common)
        return summarize(RunRecord(draft=draft.info, k=args.k, requests=tuple(m.spec), **common), base_run)

    curve = m.curve_along()
    s, at_start = summary(curve), summary(m.curves[0])
    n_requests = len(m.times[SPEC])
    tokens = sum(rec.output_tokens for rec in m.spec)
    print(f"\n{n_requests} requests per system ({tokens} output tokens each)\n")
    print("median wall time per request (context only; the ratios below are the result):")
    for name in SYSTEMS:
        print(f"  {name:<24} {statistics.median(m.times[name]) * 1e3:8.1f} ms")
    print("\nwall-time ratios, measured side by side (ratio of totals; > 1: the second is faster):")
    t = m.times
    print(ratio_line("hf assisted / specmeter speculative", t[HF_ASSISTED], t[SPEC], GOAL_VS_ASSISTED))
    print(ratio_line("hf greedy / specmeter baseline", t[HF_GREEDY], t[BASE]))
    print(ratio_line("specmeter baseline / specmeter speculative", t[BASE], t[SPEC]))
    print(ratio_line("hf greedy / hf assisted", t[HF_GREEDY], t[HF_ASSISTED]))

    e_meas, e_dec, e_cal = s["speedup_measured"], s["speedup_measured_decode"], s["speedup_calibrated"]
    print("\nspecmeter's own metrics (speculative vs baseline; cost curve sampled after every prompt):")
    print(
        f"  α {s['acceptance_rate']:.3f} ({s['accepted_tokens']}/{s['drafted_tokens']}) · "
        f"τ {s['acceptance_length']:.2f} · c {s['cost_ratio']:.3f} · "
        f"t_T(1) {curve.target_s[0] * 1e3:.2f} ms · t_T(k+1) {curve.t_target(args.k + 1) * 1e3:.2f} ms · "
        f"t_D(1) {curve.draft_s * 1e3:.2f} ms"
    )
    print(
        f"  E_meas {e_meas:.2f}x (decode-only {e_dec:.2f}x) · E_cal {e_cal:.2f}x · "
        f"E_seed {s['speedup_seed']:.2f}x · E_lev {s['speedup_leviathan']:.2f}x"
    )
    verdict = "met" if e_meas / e_cal >= GOAL_MEAS_OVER_CAL else "MISSED"
    print(
        f"  E_meas / E_cal {e_meas / e_cal:.3f}   goal ≥ {GOAL_MEAS_OVER_CAL}: {verdict}   "
        f"(decode-only E_meas / E_cal {e_dec / e_cal:.3f})"
    )
    burst = at_start["speedup_calibrated"]
    print(
        f"  with one cost-curve burst before the run (as `specmeter bench` measures it): E_cal {burst:.2f}x, "
        f"E_meas / E_cal {e_meas / burst:.3f}"
    )
    print("\nwhere specmeter's speculative time went:")
    print("\n".join(time_breakdown(m, curve, e_meas)))

    if m.mismatches:
        print(f"\nFAIL: greedy outputs differ from transformers' plain generate in {len(m.mismatches)} runs:")
        print("\n".join(f"  {x}" for x in m.mismatches[:10]))
        return 1
    print(f"\nidentical greedy tokens from all four systems on all {n_requests} requests: yes")
    return 0


def profile(bench: Bench, prompts: list[Prompt], out: Path) -> None:
    """cProfile of specmeter's speculative decoding over the prompts; prints the top functions."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for prompt in prompts:
        bench.systems()[SPEC](prompt, prompt.max_tokens)
    profiler.disable()
    profiler.dump_stats(str(out))
    print(f"\ncProfile of specmeter speculative decoding (written to {out}):")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    target_dir, draft_dir, prompts_path = resolve_inputs(args)
    device = torch.device(args.device)
    try:
        target = load_model(target_dir, dtype="float32", device=args.device, implementation="native")
        draft = load_model(draft_dir, dtype="float32", device=args.device, implementation="native")
        prompts = load_prompts(prompts_path, target.tokenizer, args.limit, args.max_tokens)
    except (ModelDirError, WorkloadError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    hf_target, hf_draft = load_hf(target_dir, device), load_hf(draft_dir, device)
    bench = Bench(target, draft, hf_target, hf_draft, args.k)

    print(f"target  {target_dir} ({target.info.params / 1e6:.1f}M params, {target.info.num_layers} layers)")
    print(f"draft   {draft_dir} ({draft.info.params / 1e6:.1f}M params, {draft.info.num_layers} layers)")
    print(
        f"prompts {prompts_path} ({len(prompts)} used) · k={args.k} · greedy · max {args.max_tokens} tokens"
    )
    print(
        f"passes  {args.repeats} · torch {torch.__version__} · {torch.get_num_threads()} thread(s) · {device}"
    )
    for fn in bench.systems().values():  # warm-up: allocation and kernel selection stay out of the numbers
        fn(prompts[0], min(8, prompts[0].max_tokens))
    fed = bench.check_assisted_schedule(prompts[0], prompts[0].max_tokens)
    # Near the token limit both engines draft fewer than k, so only the last two forwards may be shorter.
    if any(n != args.k + 1 for n in fed[:-2]) or any(n > args.k + 1 for n in fed):
        print(f"FAIL: transformers' assisted generation did not draft k={args.k} per step: target fed {fed}")
        return 1
    measurements = measure(bench, prompts, args.repeats)
    status = report(args, measurements, target, draft)
    if args.profile is not None:
        profile(bench, prompts, args.profile)
    return status


if __name__ == "__main__":
    sys.exit(main())
