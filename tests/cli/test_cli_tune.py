"""``specmeter tune``: one tiny sweep end to end, and every user mistake as a one-line error."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.workloads import bundled_prompts

runner = CliRunner()


def _tune(*args: object):
    return runner.invoke(app, ["tune", *map(str, args)])


def test_tune_sweep_writes_the_tune_section(tiny, tmp_path: Path) -> None:
    out, rows = tmp_path / "tune.json", tmp_path / "rows.csv"
    result = _tune(
        "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
        "--k-max", 4, "--k", "1,2,4", "--limit", 3, "--max-tokens", 8, "--cost-repeats", 2,
        "--json", out, "--csv", rows,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["kind"] == "tune" and data["complete"] is True
    assert [(c["draft"], c["k"]) for c in data["candidates"]] == [("draft", 1), ("draft", 2), ("draft", 4)]
    t = data["tune"]
    assert t["k_run"] == [1, 2, 4] and t["holdout"] == 2 and t["source_k"] == 4  # auto holdout
    curve = t["cost_curve"]
    assert curve["n"] == [1, 2, 3, 4, 5] and len(curve["target_spread_ms"]) == 5 and curve["repeats"] == 2
    assert curve["verification_factor"][0] == 1.0
    rows_all = t["by_k"]["all"]
    assert [r["run"] for r in rows_all] == [True, True, False, True]
    # k = 3 was not run: predicted from k = 4's per-position rates; measured figures absent
    assert rows_all[2]["speedup_measured"] is None and rows_all[2]["acceptance_length_predicted"] is not None
    for r in (rows_all[0], rows_all[1], rows_all[3]):
        for key in ("speedup_seed", "speedup_leviathan", "speedup_calibrated", "speedup_measured"):
            assert r[key] is not None and r[key] > 0
    assert set(t["by_k"]) == {"all", "general/narration"}
    check = t["holdout_check"]["all"]
    assert check["k"] == 2 and check["acceptance_length"]["measured"] == rows_all[1]["acceptance_length"]
    assert t["best_k"]["all"]["measured"]["k"] in (1, 2, 4)
    assert t["overhead"]["fitted_on_k"] == [0, 1, 4]
    # greedy: every speculative output matches the baseline's; one CSV row per run and prompt
    with rows.open() as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 4 * 3
    assert {r["matches_baseline"] for r in table if r["run"] != "baseline"} == {"true"}
    assert "best k" in result.output and "cost curve" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k-max", "0"], "--k-max: must be between 1 and 64, got 0"),
        (["--k-max", "65"], "--k-max: must be between 1 and 64, got 65"),
        (["--k-max", "4", "--k", "2,6"], "--k: 6 is above --k-max 4"),
        (["--k", "0"], "--k: '0' is not a positive integer"),
        (
            ["--k", "1,2,4", "--holdout", "4"],
            "--holdout: 4 must be one of the k values run, below the largest",
        ),
        (["--k", "1,2,4", "--holdout", "3"], "--holdout: 3 must be one of the k values run"),
        (["--cost-repeats", "0"], "--cost-repeats must be >= 1"),
        (["--implementation", "onnx"], "--implementation: 'onnx' is not one of"),
    ],
)
def test_bad_options_fail_in_one_line(tiny, args: list[str], message: str) -> None:
    result = _tune(
        "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"), *args
    )
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_bad_model_directories_fail_in_one_line(tiny, tmp_path: Path) -> None:
    smoke = bundled_prompts("smoke")
    result = _tune("--target", tmp_path / "nope", "--draft", tiny.draft, "--prompts", smoke, "--k-max", 2)
    assert result.exit_code == 2 and "nope: no such directory" in result.stderr
    result = _tune(
        "--target", tiny.target, "--draft", tiny.other_tokenizer_draft, "--prompts", smoke, "--k-max", 2
    )
    assert result.exit_code == 2 and "its tokenizer differs from the target's" in result.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("[")
    result = _tune("--target", tiny.target, "--draft", broken, "--prompts", smoke, "--k-max", 2)
    assert result.exit_code == 2 and "config.json: unreadable config" in result.stderr
    assert "Traceback" not in result.output


def test_interrupted_sweep_keeps_what_was_measured(tiny, tmp_path: Path, monkeypatch) -> None:
    import specmeter.engine.runner as runner_module

    real = runner_module.run_interleaved

    def one_prompt_then_ctrl_c(state, prompts, **kw):
        real(state, prompts[:1], **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner_module, "run_interleaved", one_prompt_then_ctrl_c)
    out, log = tmp_path / "tune.json", tmp_path / "log.jsonl"
    result = _tune(
        "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"), "--k-max", 2,
        "--limit", 3, "--max-tokens", 6, "--cost-repeats", 1, "--json", out, "--log", log, "--quiet",
    )  # fmt: skip
    assert result.exit_code == 130
    data = json.loads(out.read_text())
    assert data["complete"] is False
    assert data["baseline"]["summary"]["requests"] == 1
    assert data["tune"]["k_run"] == [1, 2] and data["tune"]["by_k"]["all"][0]["requests"] == 1
    assert len(log.read_text().splitlines()) == 3  # baseline + two k, one prompt each
