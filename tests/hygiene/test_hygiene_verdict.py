"""The machine verdict: thresholds, reasons, the banner, and that more contention never reads as quieter."""

from __future__ import annotations

from typing import Any

import pytest

from specmeter.hygiene.section import build_section
from specmeter.hygiene.verdict import LEVELS, THRESHOLDS, assess, banner, is_flagged


def figures(other: float, *, cores: int = 2, threads: int | None = 2, steal: float = 0.0, **kw: Any) -> dict:
    return {
        "cores": cores,
        "threads": threads,
        "own_cores": kw.pop("own", None),
        "other_cores": other,
        "other_share": other / cores,
        "steal_share": steal,
        "top_processes": kw.pop("top", []),
        "gpu": kw.pop("gpu", {"available": False, "reason": "none"}),
        **kw,
    }


@pytest.mark.parametrize(
    ("fig", "expected"),
    [
        (figures(0.02), "quiet"),  # an idle host's background
        (figures(0.09), "quiet"),  # just under 0.10 core
        (figures(0.2), "busy"),  # all cores are the measurement's: 0.2 core was taken from it
        (figures(1.0), "unusable"),  # one CPU-bound process beside a 2-thread run on 2 cores
        (figures(1.0, threads=1), "busy"),  # on the core the measurement left free: caches, bandwidth
        (figures(1.7, threads=1), "unusable"),  # 0.7 core more than the free one
        (figures(0.3, cores=64, threads=8), "quiet"),  # far below 5 % of a big host, on spare cores
        (figures(4.0, cores=64, threads=8), "busy"),  # > 5 % of the cores: shares memory bandwidth
        (figures(40.0, cores=64, threads=8), "busy"),  # a lot, but on the 56 spare cores
        (figures(57.0, cores=64, threads=8), "unusable"),  # 1 core more than the spare ones
        (figures(0.0, steal=0.03), "busy"),
        (figures(0.0, steal=0.15), "unusable"),
        (figures(0.2, cores=8, threads=None, own=7.9), "busy"),  # threads unknown: measured use counts
        (figures(0.2, cores=8, threads=None, own=4.0), "quiet"),
    ],
)
def test_levels(fig: dict, expected: str) -> None:
    assert assess(fig)["verdict"] == expected


def test_reasons_carry_the_figures_and_the_busiest_process() -> None:
    v = assess(figures(1.02, top=[{"pid": 4242, "name": "hog", "cores": 0.98}]))
    assert v["verdict"] == "unusable"
    text = " ".join(v["reasons"])
    assert "1.02 cores on average, 1.02 cores more than the 0.00 cores the measurement left free" in text
    assert "hog pid 4242" in text and "0.98 core" in text
    assert v["excess_cores"] == pytest.approx(1.02)
    assert v["thresholds"] == THRESHOLDS


def test_banner_only_for_flagged_runs() -> None:
    quiet = build_section(figures(0.01))
    busy = build_section(figures(0.3))
    assert banner(quiet) is None and quiet["message"] is None and not is_flagged(quiet)
    assert is_flagged(busy) and busy["message"].startswith("MACHINE BUSY: other processes used 0.30 cores")
    assert busy["message"].endswith("speedups are unreliable.")
    unusable = build_section(figures(1.5))
    assert "not usable" in unusable["message"] and "specmeter doctor" in unusable["message"]


def test_a_window_too_short_to_measure_is_not_flagged() -> None:
    v = assess({"cores": 2, "other_cores": None, "other_share": None})
    assert v["verdict"] == "quiet" and "too short" in v["reasons"][0]


@pytest.mark.parametrize(
    ("cores", "threads"),
    [(c, t) for c in (1, 2, 8, 64) for t in (1, 2, 8, None) if t is None or t <= c],
)
def test_more_other_cpu_never_gives_a_quieter_verdict(cores: int, threads: int | None) -> None:
    previous = 0
    for i in range(0, 200):
        other = cores * i / 200
        level = LEVELS.index(assess(figures(other, cores=cores, threads=threads, own=1.0))["verdict"])
        assert level >= previous, (other, level, previous)
        previous = level
    assert previous == 2  # and the whole machine busy elsewhere is unusable


def gpu_section(*, ours: bool, others: list[dict], slowdowns: list[str]) -> dict:
    device = {"index": 0, "name": "H200", "used_by_measurement": ours, "other_processes": others,
              "slowdowns": slowdowns}  # fmt: skip
    return {"available": True, "reason": None, "devices": [device]}


def test_accelerator_shared_or_throttled_is_busy_only_when_the_measurement_used_it() -> None:
    other = [{"pid": 77, "name": "trainer", "memory_mib": 4096.0}]
    shared = assess(figures(0.0, gpu=gpu_section(ours=True, others=other, slowdowns=[])))
    assert shared["verdict"] == "busy" and "trainer pid 77" in shared["reasons"][0]
    hot = assess(figures(0.0, gpu=gpu_section(ours=True, others=[], slowdowns=["hardware thermal slowdown"])))
    assert hot["verdict"] == "busy" and "thermal" in hot["reasons"][0]
    elsewhere = assess(figures(0.0, gpu=gpu_section(ours=False, others=other, slowdowns=["sync boost"])))
    assert elsewhere["verdict"] == "quiet"
