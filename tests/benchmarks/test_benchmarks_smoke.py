"""Benchmarks do not rot: each script in benchmarks/ runs end to end with ``--smoke`` (`make test-slow`).

``--smoke`` shrinks a benchmark to its smallest sizes — a few prompts, a few tokens, one pass, the smallest
levels — while keeping every step it takes (model loading, servers started and stopped, the measuring core,
the tables and ratio lines it prints, the files it writes). Each script runs as users run it, a separate
process of this interpreter from the repository root, with its outputs in a temporary folder. The tests check
that it exits 0, printed its table headers and ratio lines, and wrote its files; never the figures (a smoke
run's ratios measure nothing) nor how long it took.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
TIMEOUT_S = 300  # a smoke run takes seconds to a minute on a busy 2-core machine

# (test id, script, arguments after --smoke ({tmp}: the test's folder), lines the output must contain,
#  files under {tmp} the run must write)
CASES = [
    (
        "engine_vs_hf",
        "engine_vs_hf.py",
        ["--profile", "{tmp}/profile.out"],
        [
            "wall-time ratios, measured side by side",
            "hf assisted / specmeter speculative",
            "hf greedy / specmeter baseline",
            "E_meas / E_cal",
            "where specmeter's speculative time went:",
            "E_cal with the in-loop draft time",
            "identical greedy tokens from all four systems",
            "cProfile of specmeter speculative decoding",
        ],
        ["profile.out"],
    ),
    (
        "load_client",
        "load_client.py",
        ["--json", "{tmp}/load_client.json"],
        [
            "server sends as fast as possible",
            "TTFT err p50",
            "streams in lockstep",
            "streams started at random points",
            "sustained concurrent streams, flooding server",
            "median TTFT error at concurrency 64, staggered",
        ],
        ["load_client.json"],
    ),
    (
        "load_client_ttft_table",
        "load_client.py",
        ["--ttft-table", "1,2", "--json", "{tmp}/ttft.json"],
        ["paced server on", "client procs", "load average"],
        ["ttft.json"],
    ),
    (
        "batched_spec",
        "batched_spec.py",
        ["--json", "{tmp}/batched.json"],
        [
            "E_meas decode [95% CI]",
            "E_pred waves",
            "goal (issue 13): decode-only E_meas within",
            "what else ran",
            "identical greedy tokens, speculative vs baseline",
        ],
        ["batched.json"],
    ),
    (
        "serve_batching",
        "serve_batching.py",
        ["--json", "{tmp}/serve.json"],
        [
            "healthy after",
            "tokens/s",
            "throughput ratio, measured side by side",
            "serve --max-batch 2 / --max-batch 1",
            "output tokens of the two servers",
        ],
        ["serve.json"],
    ),
    (
        "crossover",
        "crossover.py",
        ["--json", "{tmp}/crossover.json"],
        [
            "E(B, k), decode-only, predicted by tune --batch and measured by bench --batch",
            "best k",
            "predicted (tune --batch)",
            "measured (bench --batch)",
            "goal: same level or adjacent",
            "tune's schedule",
        ],
        ["crossover.json"],
    ),
    (
        "whatif_truth",
        "whatif_truth.py",
        [],
        ["α real", "E real", "E pred", "what-if run: machine", "worst |error|"],
        [],
    ),
    (
        "from_your_logs",
        "from_your_logs.py",
        ["--dir", "{tmp}/logs"],
        ["records:", "duplicates removed", "written", "drift exit code"],
        [
            "logs/gateway.jsonl",
            "logs/chats.json",
            "logs/tickets.csv",
            "logs/golden.jsonl",
            "logs/before.jsonl",
            "logs/after.jsonl",
        ],
    ),
    (
        "replay_speed",
        "replay_speed.py",
        ["--json", "{tmp}/replay_speed.json"],
        ["requests/s", "suffix", "goal (issue 27)"],
        ["replay_speed.json"],
    ),
    (
        "decision_regret",
        "decision_regret.py",
        ["--out", "{tmp}/out", "--json", "{tmp}/regret.json"],
        [
            "1. log half A: serve --log-output, load",
            "healthy after",
            "cost file: tune timed",
            "E pred",
            "E meas",
            "regret = 1 − E_meas(pick) / E_meas(best)",
            "goal ≤ 5% in every domain at every B",
            "prediction error |E pred / E meas − 1|",
            "the truth inside select's 95% prediction interval",
            "what else ran (the machine sampler, the whole run)",
        ],
        [
            "regret.json",
            "out/serve-log.jsonl",
            "out/replay.json",
            "out/costs.json",
            "out/select-b1.json",
            "out/select-b2.json",
            "out/bench-b1.json",
            "out/bench-b2.json",
        ],
    ),
    (
        "load_observer",
        "load_observer.py",
        ["--json", "{tmp}/observer.json"],
        ["round 1 default", "server e2e ms", "server ITL ms", "e2e / default", "ITL / default"],
        ["observer.json"],
    ),
    (
        "soak",
        "soak.py",
        ["--json", "{tmp}/soak.json"],
        [
            "quiet reference pass",
            "requests by kind",
            "good outputs identical to the quiet run",
            "poison HTTP status",
            "disconnects mid-stream",
            "server errors:",
            "RSS MB (server and children",
            "RSS slope over the last 80% of the run",
            "/health latency during the soak",
            "server alive at the end",
        ],
        ["soak.json"],
    ),
]


def run_script(script: str, args: list[str], cwd: Path) -> tuple[int, str]:
    """The script as a user runs it: its own process group, so that a run past the timeout is interrupted
    (SIGINT: its ``finally`` blocks stop the servers it started) and then killed, never left running."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(
        [sys.executable, str(BENCHMARKS / script), "--smoke", *args],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        pytest.fail(f"{script} --smoke still ran after {TIMEOUT_S} s:\n{out[-4000:]}")
    return proc.returncode, out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "args", "expected", "files"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_benchmark_smoke_runs_end_to_end(
    script: str, args: list[str], expected: list[str], files: list[str], tmp_path: Path
) -> None:
    code, out = run_script(script, [a.format(tmp=tmp_path) for a in args], ROOT)
    assert code == 0, f"{script} --smoke exited {code}:\n{out[-4000:]}"
    missing = [line for line in expected if line not in out]
    assert not missing, f"{script} --smoke did not print {missing}:\n{out[-4000:]}"
    absent = [name for name in files if not (tmp_path / name).is_file()]
    assert not absent, f"{script} --smoke did not write {absent}"


def test_every_benchmark_has_a_smoke_case() -> None:
    """A new script in benchmarks/ gets a smoke case here, or it is never run and rots."""
    scripts = {p.name for p in BENCHMARKS.glob("*.py")}
    assert scripts == {c[1] for c in CASES}
