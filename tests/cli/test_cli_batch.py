"""``tune --batch`` and ``bench --batch``: the surface, E(B, k), the schedule, measured vs predicted at B."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.engine.schedule import KSchedule
from specmeter.workloads import bundled_prompts

runner = CliRunner()


def _run(*args: object):
    return runner.invoke(app, [*map(str, args)])


def test_tune_batch_prints_and_stores_the_schedule(tiny, tmp_path: Path) -> None:
    out = tmp_path / "tune.json"
    result = _run(
        "tune", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
        "--k-max", 3, "--k", "1,3", "--limit", 3, "--max-tokens", 8, "--cost-repeats", 2,
        "--batch", "1,2,4", "--json", out, "--no-store",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    batch = json.loads(out.read_text())["tune"]["batch"]
    assert batch["batches"] == [1, 2, 4] and batch["source_k"] == 3
    assert {(p["batch"], p["k"]) for p in batch["surface"]["points"]} == {
        (b, k) for b in (1, 2, 4) for k in range(4)
    }
    for row in batch["table"]:
        es = [c["speedup_predicted"] for c in row["by_k"]]
        assert es[0] == 1.0 and all(e is not None and e > 0 for e in es)
        best = max(range(4), key=lambda k: (es[k], -k))
        assert row["best_k"] == best
    schedule = KSchedule.parse(batch["num_speculative_tokens_per_batch_size"])
    assert [schedule.k_for(b) for b in (1, 2, 4)] == [int(batch["best_k"][str(b)]) for b in (1, 2, 4)]
    assert batch["speculative_config"]["num_speculative_tokens_per_batch_size"] == schedule.to_json()
    assert KSchedule.parse(json.loads(batch["serve_k_schedule"])) == schedule
    crossover = batch["crossover_batch"]
    assert crossover is None or batch["best_k"][str(crossover)] == 0
    assert "E(B, k) predicted" in result.output and "--k-schedule" in result.output


def test_bench_batch_measures_and_predicts_at_b(tiny, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = _run(
        "bench", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
        "--k", "2,3", "--limit", 5, "--max-tokens", 10, "--cost-repeats", 3, "--batch", 2,
        "--json", out, "--no-store",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["run"]["config"]["batch"] == [2]
    section = data["bench"]["batch"]
    assert section["batch"] == 2 and [c["k"] for c in section["candidates"]] == [2, 3]
    for c in section["candidates"]:
        assert c["speedup_measured_decode"] > 0 and c["speedup_predicted_waves"] > 0
        assert c["error"] == c["speedup_measured_decode"] / c["speedup_predicted_waves"] - 1
    points = section["surfaces"]["draft"]["points"]
    assert {(p["batch"], p["k"]) for p in points} == {(b, k) for b in (1, 2) for k in (0, 2, 3)}
    # The summaries price steps at batch 2 and every output is the target's own (greedy, lossless).
    for cand in data["candidates"]:
        assert cand["summary"]["speedup_calibrated"] is not None
    assert "measured (waves of 2)" in result.output


def test_batch_option_mistakes(tiny) -> None:
    base = ["--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke")]
    assert_usage_error(_run("bench", *base, "--batch", 0), "--batch")
    assert_usage_error(_run("tune", *base, "--batch", "1,x"), "--batch")
    assert_usage_error(_run("tune", *base, "--batch", "1,999"), "--batch")


@pytest.mark.slow  # the bundled target and its EAGLE head: about 15 s on 2 cores
def test_tune_batch_times_every_candidates_own_proposing_cost(tmp_path: Path) -> None:
    """Issue 37: several --draft with --batch — the k sweep is the first's; each model gets a surface of
    its own (an EAGLE head and layers:n on the run's own target), a model-free method its lookup time."""
    models = Path(__file__).resolve().parents[2] / "src" / "specmeter" / "assets" / "models"
    out = tmp_path / "tune.json"
    result = _run(
        "tune", "--target", models / "target", "--draft", models / "draft-tiny",
        "--draft", f"eagle:head={models / 'eagle-legal'}", "--draft", "layers:n=4", "--draft", "suffix",
        "--prompts", bundled_prompts("smoke"), "--k-max", 2, "--k", "2", "--limit", 2, "--max-tokens", 16,
        "--cost-repeats", 1, "--batch", "1,2", "--json", out, "--no-store",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    batch = data["tune"]["batch"]
    assert set(batch["surfaces"]) == {"draft-tiny", f"eagle:head={models / 'eagle-legal'}", "layers:n=4"}
    for section in batch["surfaces"].values():
        assert {(p["batch"], p["k"]) for p in section["points"]} == {(b, k) for b in (1, 2) for k in range(3)}
    assert set(batch["lookups"]) == {"suffix"} and batch["lookups"]["suffix"]["per_row_ms"] > 0
    assert [c["draft"] for c in data["candidates"]] == ["draft-tiny"]  # the sweep is the first's alone
    # the cost file prices each at its own: nothing is borrowed
    from specmeter.pricing import predictor

    summary = data["candidates"][0]["summary"]
    rows = predictor(out)(
        [{"draft": name, "k": 2, "summary": summary} for name in [*batch["surfaces"], "suffix"]]
    )
    assert all(r["borrowed_from"] is None for r in rows["rows"])


def test_several_drafts_need_batch(tiny) -> None:
    result = _run("tune", "--target", tiny.target, "--draft", tiny.draft, "--draft", "suffix",
                  "--prompts", bundled_prompts("smoke"), "--no-store")  # fmt: skip
    assert_usage_error(result, "--draft: tune sweeps k with one draft", "needs --batch")
