"""specmeter roi: the seed's case end to end, speedups from a result file, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from sweep_states import stored_sweep

runner = CliRunner()
SEED = ["--monthly-tokens", "1B", "--baseline-throughput", "1000", "--baseline-price", "4",
        "--spec-price", "7", "--engineering-cost", "20,000"]  # fmt: skip


def result_file(tmp_path: Path) -> Path:
    def cand(draft: str, k: int, e: float | None) -> dict[str, Any]:
        return {"draft": draft, "k": k, "summary": {"speedup_measured": e}, "by_category": {}}

    data = {"schema_version": 1, "kind": "bench", "baseline": {"summary": {}},
            "candidates": [cand("general-7b", 4, 1.3), cand("legal-1b", 4, 2.5), cand("legal-1b", 8, 2.2),
                           cand("broken", 4, None)]}  # fmt: skip
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    return path


def test_the_seed_case_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "roi.json"
    res = runner.invoke(app, ["roi", "--speedup", "2.5", *SEED, "--json", str(out)], env={"COLUMNS": "120"})
    assert res.exit_code == 0, res.output
    assert "-30.0%" in res.output and "ROI over 12 months" in res.output
    data = json.loads(out.read_text())
    assert data["savings_fraction"] == pytest.approx(0.30)
    assert data["cost_after"] / data["cost_before"] == pytest.approx(0.70)
    assert data["inputs"]["monthly_tokens"] == 1e9 and data["inputs"]["engineering_cost"] == 20_000


def test_speedup_from_a_result_file(tmp_path: Path) -> None:
    path = str(result_file(tmp_path))
    best = runner.invoke(app, ["roi", path, *SEED], env={"COLUMNS": "120"})
    assert best.exit_code == 0 and "2.50× (E_meas of legal-1b@k=4" in best.output and "-30.0%" in best.output
    chosen = runner.invoke(app, ["roi", path, "--candidate", "legal-1b@8", *SEED], env={"COLUMNS": "120"})
    assert chosen.exit_code == 0 and "2.20×" in chosen.output
    ambiguous = runner.invoke(app, ["roi", path, "--candidate", "legal-1b", *SEED])
    assert ambiguous.exit_code == 2 and "matches 2 candidates" in ambiguous.output
    slower = runner.invoke(app, ["roi", "--speedup", "0.8", *SEED])
    assert slower.exit_code == 0 and "costs more than it saves" in slower.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--speedup", "2", "--monthly-tokens", "lots", *SEED[2:]],
            "--monthly-tokens: 'lots' is not a number",
        ),
        (["--speedup", "2", *SEED[:4], "--baseline-price", "-4"], "--baseline-price must be"),
        (SEED, "give a RUN"),
        (["nothing.json", *SEED], "no such result file"),
    ],
)
def test_errors_are_one_line(args: list[str], message: str) -> None:
    res = runner.invoke(app, ["roi", *args])
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output


def test_roi_from_sweep(tmp_path: Path) -> None:
    sweep = {
        "kind": "sweep",
        "sweep": {
            "best": [{"level": "c=1", "k": 4, "e": 2.0}],
            "capacity": {
                "source": "slo", "slo": "ttft_p99_ms=500", "assumption": "highest level meeting the SLO",
                "baseline": {"run": "k=0", "level": "c=8", "requests_per_s": 1.0},
                "speculative": {"run": "k=4", "level": "c=16", "requests_per_s": 2.5},
            },
        },
    }  # fmt: skip
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(sweep))
    out = tmp_path / "roi.json"
    result = CliRunner().invoke(app, ["roi", "--from-sweep", str(path), "--traffic", "10", "--price-baseline",
                                      "4", "--price-speculative", "7", "--json", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "10 → 4" in result.stdout  # measured: ⌈10 / 2.5⌉
    assert "10 → 5" in result.stdout  # batch-1: E = 2 at c=1 gives ⌈10 / (1 · 2)⌉
    data = json.loads(out.read_text())
    assert (data["instances_before"], data["instances_after"]) == (10, 4)
    args = ["roi", "--from-sweep", str(path), "--price-baseline", "4"]
    bad = CliRunner().invoke(app, args)
    assert bad.exit_code == 2 and "--traffic" in bad.stderr
    bad = CliRunner().invoke(app, [*args, "--traffic", "-1"])
    assert bad.exit_code == 2 and "--traffic" in bad.stderr
    bad = CliRunner().invoke(app, [*args, "--traffic", "1", "--speedup", "2"])
    assert bad.exit_code == 2 and "drop RUN" in bad.stderr


def _whatif(tmp_path: Path, verdict: str | None = None) -> Path:
    """A what-if surface: E = 0.5 + 2α at k=4, B=1; E = 0.4 + α at B=8 (its run judged ``verdict``)."""
    cells = [
        {"alpha": a, "k": 4, "batch": b, "e": (0.5 + 2 * a) if b == 1 else (0.4 + a)}
        for a in (0.2, 0.4, 0.6, 0.8)
        for b in (1, 8)
    ]
    path = tmp_path / "whatif.json"
    data: dict[str, Any] = {"kind": "whatif", "whatif": {"cells": cells, "batches": [1, 8]}}
    if verdict is not None:
        data["hygiene"] = {"verdict": verdict}
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("verdict", ["busy", "unusable", "quiet"])
def test_roi_from_a_whatif_timed_on_a_busy_machine_says_so(tmp_path: Path, verdict: str) -> None:
    w, out = _whatif(tmp_path, verdict), tmp_path / "roi.json"
    res = runner.invoke(app, ["roi", "--from-whatif", str(w), "--alpha", "0.6", "--batch", "1", *SEED,
                              "--json", str(out)], env={"COLUMNS": "200"})  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["at_alpha"]["speedup"] == pytest.approx(1.7)  # the figure stays; its trust is named
    if verdict == "quiet":
        assert "warnings" not in data and "judged" not in res.output
    else:
        assert data["warnings"] == [
            f"whatif.json's what-if surface was timed on a machine judged {verdict}: every predicted E is "
            "uncertain; time it again on a quiet machine"
        ]
        assert f"judged {verdict}" in res.output


def _baseline_sweep(tmp_path: Path, level: str = "c=6") -> Path:
    """A sweep of the baseline alone: 2 req/s per instance within the SLO at ``level``."""
    sweep = {"kind": "sweep", "sweep": {"best": [], "capacity": {
        "source": "slo", "slo": "ttft_p99_ms=500", "assumption": "highest level meeting the SLO",
        "baseline": {"run": "k=0", "level": level, "requests_per_s": 2.0}, "speculative": {}}}}  # fmt: skip
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(sweep))
    return path


def test_roi_from_whatif_sizes_the_fleet_at_an_assumed_capacity(tmp_path: Path) -> None:
    import math

    w, s, out = _whatif(tmp_path), _baseline_sweep(tmp_path), tmp_path / "roi.json"
    prices = ["--price-baseline", "4", "--price-speculative", "4.4", "--engineering-cost", "40k"]
    res = runner.invoke(app, ["roi", "--from-whatif", str(w), "--alpha", "0.7", "--from-sweep", str(s),
                              "--traffic", "40", *prices, "--target-roi", "6", "--json", str(out)],
                        env={"COLUMNS": "200"})  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    cap = data["capacity"]
    # The sweep's baseline capacity level is c=6: the measured B nearest it is 8, where E(0.7) = 1.1.
    assert data["batch"] == 8 and "c=6" in data["batch_from"]
    assert cap["speedup"] == pytest.approx(1.1) and cap["speculative_capacity"] == pytest.approx(2.2)
    assert (cap["instances_before"], cap["instances_after"]) == (20, math.ceil(40 / 2.2))
    assert cap["monthly_savings"] == pytest.approx(730 * (20 * 4 - 19 * 4.4))
    assert "assumed" in cap["assumption"] and "SLO-bound" in cap["assumption"]
    assert "ASSUMED" in res.output and "may not scale with E" in res.output
    # Paying 40k back within 6 months needs 16 instances (730 · (80 − 16 · 4.4) · 6 ≥ 40k > with 17):
    # E ≥ 40 / (2 · 16) = 1.25, which the surface reaches at α 0.85 (extrapolated at B=8).
    pay = cap["payback"]
    assert pay["speedup_needed"] == pytest.approx(1.25) and pay["alpha_needed"] == pytest.approx(0.85)
    assert pay["extrapolated"] is True and "a draft must reach α ≥ 0.85" in res.output
    assert "at_alpha" not in data  # no monthly tokens given: no token pricing


def test_roi_from_whatif_with_a_given_capacity_beside_token_pricing(tmp_path: Path) -> None:
    w, out = _whatif(tmp_path), tmp_path / "roi.json"
    res = runner.invoke(app, ["roi", "--from-whatif", str(w), "--alpha", "0.65", "--batch", "1",
                              "--traffic", "40", "--baseline-capacity", "2", "--monthly-tokens", "3B",
                              "--baseline-throughput", "250", "--price-baseline", "4", "--json", str(out)],
                        env={"COLUMNS": "200"})  # fmt: skip
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["at_alpha"]["speedup"] == pytest.approx(1.8)  # the monthly-token table, as before
    cap = data["capacity"]
    assert cap["baseline_capacity_from"] == "--baseline-capacity" and cap["speculative_capacity"] == 3.6
    assert (cap["instances_before"], cap["instances_after"]) == (20, 12)
    assert "ROI at α 0.65" in res.output and "Fleet at 40 req/s" in res.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--traffic", "40"], "--from-sweep S.json or --baseline-capacity"),
        (["--baseline-capacity", "2"], "give --traffic"),
        (["--traffic", "40", "--baseline-capacity", "2", "--from-sweep", "SWEEP"], "one of them"),
        (["--traffic", "40", "--baseline-capacity", "0"], "--baseline-capacity"),
        (["--traffic", "-1", "--baseline-capacity", "2"], "--traffic"),
        (["--traffic", "40", "--baseline-capacity", "2", "--batch", "3"], "--batch 3"),
        (["--traffic", "40", "--baseline-capacity", "2"], "--batch: "),  # two B measured, no load to match
        (["--traffic", "40", "--from-sweep", "BENCH"], "not a sweep result"),
    ],
)
def test_roi_from_whatif_fleet_mistakes_are_one_line(tmp_path: Path, extra: list[str], message: str) -> None:
    w, s = _whatif(tmp_path), _baseline_sweep(tmp_path, level="rate=2/s")
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"kind": "bench"}))
    extra = [str(s) if a == "SWEEP" else str(bench) if a == "BENCH" else a for a in extra]
    res = runner.invoke(
        app, ["roi", "--from-whatif", str(w), "--alpha", "0.6", "--price-baseline", "4", *extra]
    )
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output
    alone = runner.invoke(app, ["roi", "--speedup", "2", *SEED, "--baseline-capacity", "2"])
    assert alone.exit_code == 2 and "only with --from-whatif" in alone.output


def test_roi_prices_a_stored_sweep_at_the_sweeps_e(tmp_path: Path) -> None:
    """Issue 28 (3): `roi RUN` on a sweep priced E against the first baseline run, labelled "k=4@k=4"."""
    store = stored_sweep(tmp_path / "s.sqlite")
    res = runner.invoke(app, ["roi", "1", "--store", str(store), *SEED], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "ROI at 1.80× (E_meas of k=4 at c=1 in run 1)" in res.output
    chosen = runner.invoke(app, ["roi", "1", "--store", str(store), "--candidate", "k=4 at c=1", *SEED],
                           env={"COLUMNS": "200"})  # fmt: skip
    assert chosen.exit_code == 0 and "ROI at 1.80×" in chosen.output
