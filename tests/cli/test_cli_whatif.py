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


@pytest.mark.slow  # 3.5 s or more on this VM (issue 37's stop): make test-slow, which CI runs
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
    (row,) = s["overlay"]  # the bench run as a whole, its categories nested
    assert row["domain"] == "smoke" and {c["domain"] for c in row["categories"]} == set(measured)
    assert row["k_used"] == 2 and row["at"]["alpha"] == 0.8 and row["surface"][0]["e"] is not None
    assert all(c["surface"][0]["e"] is not None for c in row["categories"])
    assert "today α" in result.output
    html = tmp_path / "report.html"
    report = _run("report", out, "--out", html)
    assert report.exit_code == 0, report.output
    text = html.read_text(encoding="utf-8")
    assert "What if: E_meas(α, k, B)" in text and "Measured domains on the surface" in text
    assert "not the target&#x27;s text" in text or "not the target's text" in text


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


def _whatif_file(path: Path) -> Path:
    """A what-if result with a known surface: E = 0.5 + 2α at k=4, B=1; E = 0.4 + α at B=8."""
    cells = [
        {"alpha": a, "k": 4, "batch": b, "e": (0.5 + 2 * a) if b == 1 else (0.4 + a)}
        for a in (0.2, 0.4, 0.6, 0.8)
        for b in (1, 8)
    ]
    path.write_text(json.dumps({"kind": "whatif", "whatif": {"cells": cells, "batches": [1, 8]}}))
    return path


MONEY = ["--monthly-tokens", "3B", "--baseline-throughput", "250", "--price-baseline", "4",
         "--price-speculative", "4.4", "--engineering-cost", "40k"]  # fmt: skip


def test_roi_from_whatif_prices_the_surface_at_alpha_and_finds_the_alpha_that_pays_back(
    tmp_path: Path,
) -> None:
    from specmeter.economics import RoiInputs, compute_roi
    from specmeter.economics.roi import speedup_for_payback

    src, out = _whatif_file(tmp_path / "w.json"), tmp_path / "roi.json"
    r = _run(
        "roi", "--from-whatif", src, "--alpha", 0.65, "--batch", 1, *MONEY, "--target-roi", 6, "--json", out
    )
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    at = data["at_alpha"]
    assert at["speedup"] == pytest.approx(0.5 + 2 * 0.65) and at["extrapolated"] is False and at["k"] == 4
    inputs = RoiInputs(3e9, 250, 4, 4.4, 0.5 + 2 * 0.65, 40e3)
    assert at["monthly_savings"] == pytest.approx(compute_roi(inputs).monthly_savings)
    needed = speedup_for_payback(inputs, 6)
    assert needed is not None and data["payback"]["speedup_needed"] == pytest.approx(needed)
    alpha = data["payback"]["alpha_needed"]
    assert 0.5 + 2 * alpha >= needed > 0.5 + 2 * (alpha - 0.001)  # the smallest α on the 0.001 grid
    assert "a draft must reach α ≥" in r.output
    # Beyond the α measured: extrapolated, and said.
    r = _run("roi", "--from-whatif", src, "--alpha", 0.9, "--batch", 8, *MONEY)
    assert r.exit_code == 0 and "extrapolated" in r.output


def test_roi_from_whatif_mistakes_are_one_line(tmp_path: Path) -> None:
    src = _whatif_file(tmp_path / "w.json")
    assert_usage_error(_run("roi", "--from-whatif", src, "--alpha", 0.6, *MONEY), "--batch", "B = 1, 8")
    assert_usage_error(_run("roi", "--from-whatif", src, "--alpha", 0.6, "--batch", 4, *MONEY), "--batch 4")
    assert_usage_error(_run("roi", "--from-whatif", src, "--batch", 1, *MONEY), "--alpha", "--target-roi")
    assert_usage_error(_run("roi", "--alpha", 0.6, *MONEY), "only with --from-whatif")
    other = tmp_path / "bench.json"
    other.write_text(json.dumps({"kind": "bench"}))
    assert_usage_error(_run("roi", "--from-whatif", other, "--alpha", 0.6, *MONEY), "not a whatif result")
    assert_usage_error(_run("roi", "--from-whatif", src, "--alpha", 1.5, "--batch", 1, *MONEY), "--alpha")


def test_explicit_rates_are_measured_as_given(tiny, tmp_path: Path) -> None:
    out = tmp_path / "w.json"
    result = _run(
        "whatif", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
        "--rates", "1,1", "--rates", "0,0", "--k", 2, "--limit", 3, "--max-tokens", 16, "--cost-repeats", 2,
        "--json", out, "--no-store", "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    cells = {c["alpha"]: c for c in json.loads(out.read_text())["whatif"]["cells"]}
    assert set(cells) == {1.0, 0.0} and all(c["profile"] == "given" for c in cells.values())
    assert cells[1.0]["measured_alpha"] == 1.0 and cells[0.0]["measured_alpha"] == 0.0


def test_a_mean_acceptance_length_is_vllms_profile(tiny, tmp_path: Path) -> None:
    out = tmp_path / "w.json"
    result = _run(
        "whatif", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
        "--length", "2.5", "--k", 2, "--limit", 3, "--max-tokens", 16, "--cost-repeats", 2,
        "--json", out, "--no-store", "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    s = json.loads(out.read_text())["whatif"]
    (cell,) = s["cells"]
    # vLLM's synthetic_acceptance_length 2.5 at k=2: the first draft always accepted, the second half the
    # time.
    assert cell["profile"] == "length" and cell["rates"] == [1.0, 0.5] and cell["requested_tau"] == 2.5
    assert cell["alpha"] == pytest.approx(0.75) and s["lengths"] == [2.5] and s["profile"] == "length"
    assert cell["per_position"][0]["measured"] == 1.0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--length", "4"], "[1, 3]"),  # at k = 2 a step yields at most 3 tokens
        (["--length", "0.5"], "--length"),
        (["--length", "2", "--rates", "0.5,0.2"], "not both"),
        (["--length", "2", "--alpha", "0.5"], "not both"),
    ],
)
def test_bad_lengths_are_one_line(tiny, args: list[str], needle: str) -> None:
    result = _run(
        "whatif", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
        "--k", 2, "--limit", 2, "--no-store", *args,
    )  # fmt: skip
    assert_usage_error(result, needle)


@pytest.mark.parametrize(
    ("content", "field"),
    [
        # A bench result whose category summary is not an object: overlay_points raised AttributeError
        # after the whole measurement.
        ({"schema_version": 1, "kind": "bench", "baseline": {},
          "candidates": [{"draft": "d", "k": 2, "summary": {"acceptance_rate": 0.5},
                          "by_category": {"a": 3}}]},
         "candidates[0].by_category.a: expected an object or null, got 3"),
        ({"schema_version": 1, "kind": "bench", "baseline": {},
          "candidates": [{"draft": "d", "k": 2, "summary": {"acceptance_rate": "half"}}]},
         "candidates[0].summary.acceptance_rate: expected a number in [0, 1] or null, got 'half'"),
        # A monitor --requests --json file: its windows.
        ({"source": "log.jsonl", "windows": [{"domain": "legal", "acceptance_rate": "high"}]},
         "windows[0].acceptance_rate: expected a number in [0, 1] or null, got 'high'"),
        ({"source": "log.jsonl", "windows": {"domain": "legal"}}, "windows: expected a list or null"),
        ({"kind": "bench"}, "neither a specmeter result file"),
    ],
)  # fmt: skip
def test_a_malformed_overlay_is_one_line_before_any_model_loads(
    tiny, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: dict, field: str
) -> None:
    import specmeter.measuring.models as models

    def no_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("models were loaded although the overlay is malformed")

    monkeypatch.setattr(models, "load_models", no_load)
    bad = tmp_path / "overlay.json"
    bad.write_text(json.dumps(content))
    result = _run(
        "whatif", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
        "--k", 2, "--limit", 2, "--no-store", "--overlay", bad, "--json", tmp_path / "w.json",
    )  # fmt: skip
    assert_usage_error(result, f"--overlay {bad}: {field}")
    assert not (tmp_path / "w.json").exists()


def test_a_monitor_windows_file_overlays_without_a_measurement_check(tmp_path: Path) -> None:
    from specmeter.measuring.whatif_run import read_overlays

    good = tmp_path / "windows.json"
    windows = [{"domain": "legal", "tenant": None, "requests": 40, "acceptance_rate": 0.42,
                "acceptance_rate_ci": [0.4, 0.44], "acceptance_length": 2.1}]  # fmt: skip
    good.write_text(json.dumps({"source": "log.jsonl", "window_seconds": 300, "windows": windows}))
    ((name, data),) = read_overlays([good])
    assert name == str(good) and data["windows"] == windows


def test_an_overlay_is_never_overwritten(tiny, tmp_path: Path) -> None:
    # whatif --overlay X --json X overwrote the overlay and exited 0.
    overlay = tmp_path / "bench.json"
    overlay.write_text(json.dumps({"schema_version": 1, "kind": "bench", "baseline": {}, "candidates": []}))
    before = overlay.read_bytes()
    result = _run(
        "whatif", "--target", tiny.target, "--draft", tiny.draft, "--prompts", bundled_prompts("smoke"),
        "--k", 2, "--limit", 2, "--no-store", "--overlay", overlay, "--json", overlay,
    )  # fmt: skip
    assert_usage_error(result, "--json", "is --overlay", "an output never overwrites an input")
    assert overlay.read_bytes() == before


@pytest.mark.parametrize(
    ("cell", "field"),
    [
        ({"alpha": "high"}, "whatif.cells[0].alpha: expected a number in [0, 1], got 'high'"),
        ({"batch": None}, "whatif.cells[0].batch: expected an integer >= 1, got None"),
        ({"k": "four"}, "whatif.cells[0].k: expected an integer >= 1, got 'four'"),
    ],
)
def test_roi_from_a_malformed_whatif_cell_is_one_line(tmp_path: Path, cell: dict, field: str) -> None:
    # A cell's α as a string was a ValueError out of selection.whatif_surface.
    src = _whatif_file(tmp_path / "w.json")
    data = json.loads(src.read_text())
    data["whatif"]["cells"][0].update(cell)
    src.write_text(json.dumps(data))
    result = _run("roi", "--from-whatif", src, "--alpha", 0.6, "--batch", 1, *MONEY)
    assert_usage_error(result, f"--from-whatif: {src}: {field}")
