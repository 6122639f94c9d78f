"""A hand-built, realistic whole-result dict (the docs/results.md structure) for the report tests.

A uniquely named module rather than conftest.py, so that tests can import it without clashing with the
conftest.py of other test folders.
"""

from __future__ import annotations

from typing import Any

GIB = 1024**3
MIB = 1024**2


def dist(p50: float | None, p99: float | None) -> dict[str, float | None]:
    return {"p50": p50, "p90": None if p50 is None else p50 * 1.5, "p99": p99, "mean": p50}


def summary(**overrides: Any) -> dict[str, Any]:
    """A candidate summary with every key of docs/results.md; overrides replace single keys."""
    s: dict[str, Any] = {
        "requests": 40,
        "steps": 766,
        "target_forwards": 770,
        "drafted_tokens": 2000,
        "accepted_tokens": 1304,
        "emitted_tokens": 2070,
        "acceptance_rate": 0.652,
        "acceptance_rate_ci": [0.61, 0.69],
        "beta": 0.71,
        "beta_ci": [0.68, 0.74],
        "rejections": 533,
        "acceptance_length": 2.70,
        "acceptance_length_ci": [2.55, 2.86],
        "per_position": [
            {"position": 1, "cumulative": 0.81, "conditional": 0.81, "count": 500},
            {"position": 2, "cumulative": 0.66, "conditional": 0.81, "count": 500},
            {"position": 3, "cumulative": 0.52, "conditional": 0.79, "count": 500},
            {"position": 4, "cumulative": 0.40, "conditional": 0.77, "count": 500},
        ],
        "cost_ratio": 0.12,
        "cost_curve": {"target_ms": [10.0, 10.4, 10.9, 11.5, 12.0], "draft_ms": 1.2},
        "speedup_measured": 2.41,
        "speedup_measured_ci": [2.2, 2.6],
        "speedup_measured_decode": 2.55,
        "speedup_seed": 2.34,
        "speedup_leviathan": 2.61,
        "speedup_calibrated": 2.38,
        "ttft_ms": dist(45.0, 80.0),
        "tpot_ms": dist(12.3, 19.8),
        "gap_ms": dist(30.5, 61.0),
        "gap_per_token_ms": dist(11.0, 24.0),
        "latency_ms": dist(1650.0, 2900.0),
        "jitter": 0.42,
        "gap_p99_over_p50": 2.0,
        "stalls": 12,
        "stall_rate": 0.016,
        "tokens_per_s": 81.3,
        "weight_bytes": {"target": 13 * GIB, "draft": 2 * GIB},
        "kv_bytes_per_token": {"target": 512 * 1024, "draft": 88 * 1024},
        "extra_memory_bytes": 2 * GIB + 300 * MIB,
        "weight_traffic_per_token": 5.6 * GIB,
        "baseline_weight_traffic_per_token": 13 * GIB,
        "bandwidth_efficiency": 3.2 * GIB,
        "danger_zone": False,
        "danger_reasons": [],
    }
    s.update(overrides)
    return s


def baseline_summary() -> dict[str, Any]:
    return summary(
        steps=0,
        drafted_tokens=0,
        accepted_tokens=0,
        acceptance_rate=None,
        acceptance_rate_ci=None,
        beta=None,
        beta_ci=None,
        rejections=0,
        acceptance_length=None,
        acceptance_length_ci=None,
        per_position=[],
        cost_ratio=None,
        cost_curve=None,
        speedup_measured=None,
        speedup_measured_ci=None,
        speedup_measured_decode=None,
        speedup_seed=None,
        speedup_leviathan=None,
        speedup_calibrated=None,
        tpot_ms=dist(24.8, 27.1),
        jitter=0.08,
        gap_p99_over_p50=1.2,
        stalls=0,
        stall_rate=0.0,
        tokens_per_s=40.2,
        weight_bytes={"target": 13 * GIB, "draft": None},
        extra_memory_bytes=None,
        weight_traffic_per_token=13 * GIB,
        bandwidth_efficiency=None,
    )


LEGAL_REASONS = [
    "Acceptance rate α = 0.21 is below 0.5.",
    "Measured speedup E_meas = 0.84× is below 1.0: speculation is slower than the baseline.",
]


def make_result() -> dict[str, Any]:
    """Two candidates × two categories; draft-a falls into the danger zone on legal text."""
    draft_a = summary(
        acceptance_rate=0.48,
        acceptance_rate_ci=[0.44, 0.52],
        accepted_tokens=960,
        speedup_measured=1.12,
        speedup_measured_ci=[1.02, 1.21],
        speedup_calibrated=None,  # no cost curve for this draft
        cost_curve=None,
        danger_zone=True,
        danger_reasons=["Acceptance rate α = 0.48 is below 0.5."],
    )
    draft_a_legal = summary(
        requests=20,
        acceptance_rate=0.21,
        acceptance_rate_ci=[0.17, 0.25],
        accepted_tokens=210,
        drafted_tokens=1000,
        acceptance_length=1.31,
        speedup_measured=0.84,
        speedup_measured_ci=[0.79, 0.9],
        jitter=0.77,
        danger_zone=True,
        danger_reasons=LEGAL_REASONS,
    )
    draft_a_general = summary(requests=20, acceptance_rate=0.75, speedup_measured=1.6, jitter=None)
    draft_c = summary()
    return {
        "schema_version": 1,
        "kind": "bench",
        "complete": True,
        "run": {
            "config": {
                "target": "demo-target",
                "drafts": ["draft-a", "draft-c"],
                "k": [4],
                "temperature": 0.0,
                "top_p": 1.0,
                "max_tokens": 128,
                "prompts": "golden.jsonl",
                "limit": None,
                "seed": 0,
            },
            "environment": {"specmeter": "0.1.0", "python": "3.11.7", "device": "cpu", "threads": 2},
            "started_at": "2026-11-29T16:00:00+00:00",
            "models": {"target": None, "drafts": {}},
        },
        "baseline": {"summary": baseline_summary(), "by_category": {}},
        "candidates": [
            {
                "draft": "draft-a",
                "k": 4,
                "summary": draft_a,
                "by_category": {"general": draft_a_general, "legal": draft_a_legal},
            },
            {
                "draft": "draft-c",
                "k": 4,
                "summary": draft_c,
                "by_category": {"general": summary(requests=20), "legal": summary(requests=20)},
            },
        ],
    }
