"""The sweep's measured crossover against ``tune --batch``'s predicted one, on the bundled models: the
first level from which no k beats k = 0 agrees within one level (slow: a tune and a sweep of real servers).

Both compare the same draft lengths (0, 2, 4); the prediction's best k per B is taken among those from its
E(B, k) table, and the sweep's levels are the same batch sizes (closed loop at concurrency c, ``serve
--max-batch`` ≥ c, so the batch holds at most c rows).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specmeter.bundled.models import bundled_model
from specmeter.cli.app import app
from specmeter.workloads.bundled import bundled_prompts

LEVELS = (1, 2, 4, 8)
KS = (0, 2, 4)
SPECMETER = Path(sys.executable).with_name("specmeter")


def _index(crossover: int | None) -> int:
    return len(LEVELS) if crossover is None else LEVELS.index(crossover)


@pytest.mark.slow
def test_predicted_and_measured_crossover_agree_within_one_level(tmp_path: Path) -> None:
    target, draft = bundled_model("target"), bundled_model("draft-legal")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("\n".join(bundled_prompts("legal").read_text().splitlines()[:16]) + "\n")
    runner = CliRunner()
    tune = runner.invoke(app, [
        "tune", "--target", str(target), "--draft", str(draft), "--prompts", str(prompts), "--k-max", "4",
        "--k", "2,4", "--limit", "8", "--max-tokens", "32", "--batch", ",".join(map(str, LEVELS)),
        "--json", str(tmp_path / "tune.json"), "--no-store",
    ])  # fmt: skip
    assert tune.exit_code == 0, tune.output
    table = json.loads((tmp_path / "tune.json").read_text())["tune"]["batch"]["table"]
    predicted = None
    for row in table:
        es = {c["k"]: c["speedup_predicted"] for c in row["by_k"] if c["k"] in KS}
        if max(KS, key=lambda k: (es[k] or 0.0, -k)) == 0:
            predicted = row["batch"]
            break
    launch = f"{SPECMETER} serve --target {target} --draft {{draft}} --k {{k}} --port {{port}} --max-batch 8"
    sweep = runner.invoke(app, [
        "sweep", "--launch", launch, "--draft", str(draft), "--k", ",".join(map(str, KS)),
        "--concurrency", ",".join(map(str, LEVELS)), "--prompts", str(prompts), "--limit", "16",
        "--max-tokens", "32", "--json", str(tmp_path / "sweep.json"), "--no-store",
    ])  # fmt: skip
    assert sweep.exit_code == 0, sweep.output
    section = json.loads((tmp_path / "sweep.json").read_text())["sweep"]
    measured = section["crossover"]
    measured_c = None if measured is None else int(measured.removeprefix("c="))
    assert abs(_index(predicted) - _index(measured_c)) <= 1, (predicted, measured, section["best"])
