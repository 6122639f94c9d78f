"""A real bench beside a deliberate CPU hog is flagged and ``--strict`` exits 4; a quiet bench is not.

The hog is a separate process spinning on one core, bounded in time and stopped by PID. The bench runs the
session's tiny models with one torch thread, so on a 2-core machine the hog takes the other core. What is
asserted is what the verdict measures — other processes' CPU — never a timing: the quiet test checks the
verdict against an independent count of other processes' CPU (a process scan before and after the run), so
on a shared development machine where someone else's job runs it checks that the run is flagged instead
of failing; in CI, where nothing else runs, it checks that a quiet run is not flagged.
"""

from __future__ import annotations

import json
import math
import os
import resource
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from hygiene_helpers import cpu_hog
from typer.testing import CliRunner, Result

from specmeter.cli.app import app
from specmeter.hygiene import probes
from specmeter.hygiene.verdict import EXIT_NOISY_MACHINE, THRESHOLDS

runner = CliRunner()
PROMPTS = [
    {"id": f"p{i}", "category": "general" if i % 2 else "legal", "prompt": text}
    for i, text in enumerate(
        [
            "The Supplier shall indemnify the Customer against",
            "The children played in the garden until",
            "To reset the device, hold the power button",
            "This Agreement shall be governed by the laws of",
            "The weather tomorrow will be",
            "Either party may terminate this Agreement upon",
        ]
        * 2
    )
]


def bench(tiny: Any, tmp_path: Path, *extra: str) -> tuple[Result, dict[str, Any]]:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps(r) + "\n" for r in PROMPTS))
    out = tmp_path / "result.json"
    args = ["bench", "--target", tiny.target, "--draft", tiny.draft, "--prompts", prompts,
            "--max-tokens", "24", "--cost-repeats", "2", "--threads", "1", "--json", out, "--no-store",
            *extra]  # fmt: skip
    result = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in result.output
    return result, json.loads(out.read_text())


def others_cpu_s(before: dict[int, probes.ProcessUsage], after: dict[int, probes.ProcessUsage]) -> float:
    """CPU seconds other processes used between two scans (ours and our children excluded)."""
    mine = probes.tree_of([os.getpid()], after) | probes.tree_of([os.getpid()], before)
    total = 0.0
    for pid, p in after.items():
        if pid in mine:
            continue
        prev = before.get(pid)
        if prev is not None and prev.create_time == p.create_time:
            total += max(0.0, p.cpu_s - prev.cpu_s)
        elif p.create_time >= min((q.create_time for q in before.values()), default=0.0):
            total += p.cpu_s
    return total


def test_a_bench_beside_a_cpu_hog_is_flagged_and_strict_exits_4(tiny: Any, tmp_path: Path) -> None:
    # One hog per started ten CPUs, so that on a large CI host too they are well above 5 % of the cores.
    with cpu_hog(seconds=120, count=math.ceil(probes.logical_cores() / 10)) as pid:
        result, data = bench(tiny, tmp_path, "--strict")
    h = data["hygiene"]
    assert h["verdict"] in ("busy", "unusable"), h
    assert h["figures"]["other_cores"] >= THRESHOLDS["busy_other_cores"]
    assert result.exit_code == EXIT_NOISY_MACHINE, result.output
    assert data["complete"] is True and data["candidates"]  # strict refuses the verdict, not the data
    lines = [line for line in result.output.splitlines() if line.strip()]
    banner = f"⚠ MACHINE {h['verdict'].upper()}:"
    assert lines[0].startswith(banner) and sum(line.startswith(banner) for line in lines) == 2
    assert "--strict: the machine was" in result.output
    hog = [p for p in h["figures"]["top_processes"] if p["pid"] == pid]
    if hog:  # named unless five busier processes ran beside it (a shared development machine)
        assert hog[0]["cores"] > 0.1
    assert h["figures"]["sampler"]["cpu_s"] < 0.1  # two process scans and a few readings a second


def busy_cpu_s() -> float:
    """CPU seconds every process has spent on this machine so far, those that already exited included
    (/proc/stat: user, nice, system, irq and softirq time; steal and idle left out)."""
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0))


def own_cpu_s() -> float:
    """CPU seconds of this process (every thread: the bench runs in it) and of its children that ended."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def test_a_quiet_bench_is_not_flagged(tiny: Any, tmp_path: Path) -> None:
    """The verdict against two independent observers of other processes' CPU over the run, which bracket
    the sampler's figure whatever else runs: a scan of processes before and after (it misses one that
    starts and ends between the scans, issue 39) and the machine's whole CPU time less this process's (it
    counts every process, short-lived ones and the kernel's work included)."""
    before, busy0, own0, t0 = probes.scan_processes(), busy_cpu_s(), own_cpu_s(), time.monotonic()
    result, data = bench(tiny, tmp_path, "--strict")
    after, busy1, own1, wall = probes.scan_processes(), busy_cpu_s(), own_cpu_s(), time.monotonic() - t0
    h = data["hygiene"]
    low = others_cpu_s(before, after) / wall
    high = max(low, (busy1 - busy0 - (own1 - own0)) / wall)
    sampled = h["figures"]["other_cores"]
    assert low - 0.15 <= sampled <= high + 0.15, (low, sampled, high)
    if high < THRESHOLDS["busy_other_cores"] / 2:  # nothing else ran (CI, `cpu measure`)
        assert h["verdict"] == "quiet", h
        assert result.exit_code == 0, result.output
        assert "MACHINE" not in result.output
    elif low >= 0.3:  # someone else's job shared the machine: then the flag must be there
        assert h["verdict"] in ("busy", "unusable"), h
        assert result.exit_code == EXIT_NOISY_MACHINE
    else:
        pytest.skip(f"other processes used {low:.2f} to {high:.2f} cores: either verdict is fair")
