"""``specmeter whatif``: forced acceptance on real forwards, the surface, break-even, overlay, errors."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.metrics.slo import wilson_interval
from specmeter.metrics.synthetic import geometric_profile
from specmeter.workloads import bundled_prompts

runner = CliRunner()


def _run(*args: object):
    return runner.invoke(app, [*map(str, args)])


def test_whatif_draws_the_requested_acceptance_and_reports_the_surface(tiny, tmp_path: Path) -> None:
    out, rows = tmp_path / "whatif.json", tmp_path / "whatif.csv"
    result = _run(
        "whatif", "--target", tiny.target, "--draft", tiny.random_draft,
        "--prompts", bundled_prompts("smoke"),
        "--alpha", "0,0.5,1", "--k", "3", "--batch", "1,2", "--limit", 6, "--max-tokens", 24,
        "--cost-repeats", 2, "--json", out, "--csv", rows, "--no-store",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["kind"] == "whatif" and data["complete"] is True
    s = data["whatif"]
    assert s["synthetic"] is True and "not the target's text" in s["note"]
    assert s["batches"] == [1, 2] and s["ks"] == [3] and s["cost_ratio"] > 0
    assert len(s["cells"]) == 3 * 2 and len(s["baselines"]) == 2
    for cell in s["cells"]:
        # EOS is ignored in every run: the same number of tokens as the baseline, so E is a time ratio.
        assert cell["tokens"] == 6 * 24 == s["baselines"][0]["tokens"]
        assert cell["e"] > 0 and cell["e_decode"] > 0
        if cell["alpha"] == 1.0:
            assert cell["measured_alpha"] == 1.0 and cell["measured_tau"] > 3.5
        elif cell["alpha"] == 0.0:
            assert cell["measured_alpha"] == 0.0 and cell["measured_tau"] == 1.0
        else:
            # A random draft accepts almost nothing for real: this α is the verifier's forced draw.
            want = geometric_profile(0.5, 3)
            assert cell["rates"] == pytest.approx(list(want.rates))
            for pos in cell["per_position"]:
                assert pos["reached"] > 10
                # The draws are seeded (deterministic) Bernoulli trials: the requested conditional rate must
                # lie in their 99.9% Wilson interval (3 positions × 2 batch sizes checked).
                interval = wilson_interval(pos["accepted"], pos["reached"], z=3.29)
                assert interval is not None and interval[0] <= pos["requested"] <= interval[1], pos
    with rows.open(encoding="utf-8") as fh:
        labels = {r["run"] for r in csv.DictReader(fh)}
    assert labels == {"baseline B=1", "baseline B=2"} | {
        f"α={a:.2f}@k=3 B={b}" for a in (0, 0.5, 1) for b in (1, 2)
    }
    assert "E_meas(α, k, B)" in result.output and "not the target's text" in result.output
    assert s["break_even"]["best"] and s["best_k"]


def test_standin_draft_and_overlay(tiny, tmp_path: Path) -> None:
    bench = tmp_path / "bench.json"
    r = _run(
        "bench", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
        "--k", 2, "--limit", 3, "--max-tokens", 8, "--cost-repeats", 2, "--json", bench, "--no-store",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    out = tmp_path / "whatif.json"
    result = _run(
        "whatif", "--target", tiny.target, "--standin", 0.3, "--prompts", bundled_prompts("smoke"),
        "--alpha", "0.2,0.9", "--k", 2, "--limit", 3, "--max-tokens", 12, "--cost-repeats", 2,
        "--overlay", bench, "--at-alpha", 0.8, "--json", out, "--no-store",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    s = json.loads(out.read_text())["whatif"]
    assert s["draft"]["standin"] == {"fraction": 0.3, "layers": 2, "of_layers": 6}
    assert s["draft"]["name"].startswith("stand-in (2/6 layers of")
    assert 0 < s["cost_ratio"] < 1.5
    measured = json.loads(bench.read_text())["candidates"][0]["by_category"]
    assert {row["domain"] for row in s["overlay"]} == set(measured)
    for row in s["overlay"]:
        assert row["k_used"] == 2 and row["at"]["alpha"] == 0.8 and row["surface"][0]["e"] is not None
    assert "today α" in result.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--alpha", "1.5"], "--alpha"),
        (["--standin", "1.0"], "--standin"),
        (["--rates", "0.5,0.8"], "--rates"),
        (["--rates", "0.9,0.8,0.7"], "k = 3"),
        (["--batch", "0"], "--batch"),
        (["--overlay", "/nonexistent.json"], "--overlay"),
    ],
)
def test_bad_grids_are_one_line(tiny, tmp_path: Path, args: list[str], needle: str) -> None:
    result = _run(
        "whatif", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
        "--k", 2, "--limit", 2, "--no-store", *args,
    )  # fmt: skip
    assert_usage_error(result, needle)


def test_standin_needs_a_native_target_and_excludes_a_draft(tiny) -> None:
    result = _run(
        "whatif", "--target", tiny.target, "--draft", tiny.draft, "--standin", 0.5,
        "--prompts", bundled_prompts("smoke"), "--no-store",
    )  # fmt: skip
    assert_usage_error(result, "--standin", "not both")
    result = _run(
        "bench",
        "--target",
        tiny.target,
        "--standin",
        0.5,
        "--prompts",
        bundled_prompts("smoke"),
        "--no-store",
    )
    assert result.exit_code == 2  # bench has no --standin option at all
