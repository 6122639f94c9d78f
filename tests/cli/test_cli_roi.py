"""specmeter roi: the seed's case end to end, speedups from a result file, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app

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
