"""``specmeter demo --quick``: builds its own models, benches them, and leaves the result files behind."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from specmeter.cli.app import app


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    # See test_cli_bench.py: one thread avoids OpenMP stalls on a shared 2-core machine.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def private_run_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # bench records every run in a run store; keep the tests' runs out of the user's data directory.
    monkeypatch.setenv("SPECMETER_STORE", str(tmp_path / "runs.sqlite"))


def test_demo_quick_writes_results(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(app, ["demo", "--quick", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "Verdict:" in result.stdout
    data = json.loads((out / "result.json").read_text())
    assert data["kind"] == "demo"
    assert data["complete"] is True
    assert len(data["candidates"]) == 1
    cand = data["candidates"][0]
    assert cand["k"] == 4
    requests = data["baseline"]["summary"]["requests"]
    assert requests >= 1 and cand["summary"]["requests"] == requests
    assert cand["summary"]["drafted_tokens"] > 0
    with (out / "requests.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * requests
    assert all(r["matches_baseline"] == "true" for r in rows if r["run"] != "baseline")
    assert len((out / "requests.jsonl").read_text().splitlines()) == 2 * requests
    assert (out / "models" / "target" / "config.json").is_file()
