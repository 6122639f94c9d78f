"""`specmeter drift` end to end: a planted drop in one domain is called, the unchanged one is not."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.metrics.records import Emission, RequestRecord, StepRecord
from specmeter.store import RunStore

runner = CliRunner()
CHANGE = 1796040000  # 2026-11-30T12:00:00Z


def write_log(path: Path, *, drop: str | None, seed: int = 0, n: int = 1600) -> Path:
    """Two days, a request every 108 s; per-prompt acceptance ~ Beta; ``drop``'s mean falls at CHANGE."""
    rng = np.random.default_rng(seed)
    means = {"legal": 0.8, "general": 0.6}
    lines = []
    for i in range(n):
        t = CHANGE - 86400 + i * 108
        domain = ("legal", "general")[i % 2]
        mean = means[domain] - (0.2 if domain == drop and t >= CHANGE else 0.0)
        p = rng.beta(mean * 6, (1 - mean) * 6)
        steps = int(rng.integers(8, 24))
        accepted = int(rng.binomial(4 * steps, p))
        row = {"time": t, "domain": domain, "accepted_tokens": accepted, "drafted_tokens": 4 * steps}
        lines.append(json.dumps(row | {"steps": steps, "output_tokens": accepted + steps, "latency_ms": 900}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_planted_drop_is_called_and_exit_code_says_so(tmp_path: Path) -> None:
    log = write_log(tmp_path / "prod.jsonl", drop="legal")
    out = tmp_path / "drift.json"
    result = runner.invoke(
        app, ["drift", "--requests", str(log), "--since", "2026-11-30T12:00", "--json", str(out)]
    )
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    legal = next(line for line in lines if line.startswith("legal α"))
    assert "since 2026-11-30 12:00, significant drop (p < 0.001" in legal
    assert float(legal.split()[2]) > float(legal.split()[4])  # "legal α 0.80 → 0.60 ..."
    assert all("no significant change" in line for line in lines if line.startswith("general"))
    data = json.loads(out.read_text("utf-8"))
    assert data["reference"]["requests"] == 800 and data["current"]["requests"] == 800
    legal_alpha = next(c for c in data["comparisons"] if c["key"] == "legal" and c["metric"] == "alpha")
    assert legal_alpha["significant"] and legal_alpha["direction"] == "drop"
    # The other direction: general drops, legal does not.
    other = write_log(tmp_path / "other.jsonl", drop="general", seed=1)
    result = runner.invoke(app, ["drift", "--requests", str(other), "--since", "2026-11-30T12:00"])
    assert result.exit_code == 1
    assert any(
        line.startswith("general α") and "significant drop" in line for line in result.stdout.splitlines()
    )
    assert all(
        "no significant change" in line for line in result.stdout.splitlines() if line.startswith("legal")
    )


def test_no_drift_exits_zero_and_default_window_is_the_last_day(tmp_path: Path) -> None:
    log = write_log(tmp_path / "calm.jsonl", drop=None, seed=2)
    result = runner.invoke(app, ["drift", "--requests", str(log)])
    assert result.exit_code == 0, result.output
    # The last day of the log (up to its last request, 2026-12-01 11:58) against the day before.
    assert "current:   2026-11-30 11:58 → 2026-12-01 11:58 (800 requests)" in result.stdout
    assert "reference: 2026-11-29 11:58 → 2026-11-30 11:58 (800 requests)" in result.stdout


def test_reference_from_another_log_and_from_a_stored_run(tmp_path: Path) -> None:
    yesterday = write_log(tmp_path / "yesterday.jsonl", drop=None, seed=3, n=400)
    today = write_log(tmp_path / "today.jsonl", drop="legal", seed=4)
    args = ["drift", "--requests", str(today), "--since", "2026-11-30T12:00", "--reference", str(yesterday)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and f"reference: {yesterday}" in result.stdout
    # A stored bench run as the reference: its speculative slot, categories as domains.
    store = tmp_path / "runs.sqlite"
    rng = np.random.default_rng(5)
    rows = []
    for i in range(60):
        domain = ("legal", "general")[i % 2]
        steps = tuple(
            StepRecord(4, int(a), int(a) + 1, 0.001, 0.01, 4)
            for a in rng.binomial(4, 0.8 if domain == "legal" else 0.6, size=12)
        )
        tokens = sum(s.emitted for s in steps)
        record = RequestRecord(f"p{i}", domain, 10, tokens, 0.5, 0.02, 0.02, steps, (Emission(0.5, tokens),))
        rows.append(("draft@k=4", "draft", 4, record))
    with RunStore(store) as db:
        run_id = db.begin_run({"kind": "bench"})
        db.add_requests(run_id, rows)
    env = {**os.environ, "SPECMETER_STORE": str(store)}
    result = runner.invoke(
        app,
        ["drift", "--requests", str(today), "--since", "2026-11-30T12:00", "--reference", "latest"],
        env=env,
    )
    assert "reference: stored run latest (60 requests)" in result.stdout, result.output
    assert result.exit_code == 1
    assert_usage_error(
        runner.invoke(
            app, ["drift", "--requests", str(today), "--reference", "latest", "--slot", "x@k=1"], env=env
        ),
        "--slot",
    )


def test_drift_mistakes(tmp_path: Path) -> None:
    log = write_log(tmp_path / "l.jsonl", drop=None, n=50)
    assert_usage_error(runner.invoke(app, ["drift", "--requests", str(tmp_path / "none")]), "does not exist")
    assert_usage_error(runner.invoke(app, ["drift", "--requests", str(log), "--level", "2"]), "--level")
    assert_usage_error(runner.invoke(app, ["drift", "--requests", str(log), "--since", "soon"]), "--since")
    assert_usage_error(
        runner.invoke(app, ["drift", "--requests", str(log), "--json", str(log)]), "never overwrites"
    )
    assert_usage_error(runner.invoke(app, ["drift", "--requests", str(log), "--slot", "a"]), "--slot")


def test_a_logs_domain_matches_a_stored_runs_sub_categories_and_slot_mistakes_name_the_run(
    tmp_path: Path,
) -> None:
    """A log's ``legal`` is compared with a bench run's ``legal/…`` (prefix match, docs/monitoring.md); a
    --slot that ``latest`` lacks names latest's kind and slots and the run that holds it (issue 32)."""
    today = write_log(tmp_path / "today.jsonl", drop="legal", seed=4)
    store = tmp_path / "runs.sqlite"
    rng = np.random.default_rng(6)
    rows = []
    for i in range(80):
        category = ("legal/nda", "legal/liability", "general/news", "general/chat")[i % 4]
        p = 0.8 if category.startswith("legal") else 0.6
        steps = tuple(StepRecord(4, int(a), int(a) + 1, 0.001, 0.01, 4) for a in rng.binomial(4, p, size=12))
        tokens = sum(s.emitted for s in steps)
        record = RequestRecord(
            f"p{i}", category, 10, tokens, 0.5, 0.02, 0.02, steps, (Emission(0.5, tokens),)
        )
        rows.append(("draft-legal@k=4", "draft-legal", 4, record))
    with RunStore(store) as db:
        bench = db.begin_run({"kind": "bench"})
        db.add_requests(bench, rows)
        tune = db.begin_run({"kind": "tune"})
        db.add_requests(tune, [("draft-legal@k=2", "draft-legal", 2, rows[0][3])])
    env = {**os.environ, "SPECMETER_STORE": str(store)}
    since = ["--since", "2026-11-30T12:00"]
    result = runner.invoke(
        app,
        ["drift", "--requests", str(today), *since, "--reference", "latest~1", "--slot", "draft-legal@k=4",
         "--json", str(tmp_path / "d.json")],
        env=env,
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    rows_out = json.loads((tmp_path / "d.json").read_text())["comparisons"]
    alpha = {r["domain"]: r for r in rows_out if r["metric"] == "alpha"}
    assert set(alpha) == {"legal", "general"}
    assert alpha["legal"]["requests_before"] == 40 and alpha["legal"]["direction"] == "drop"
    assert alpha["general"]["requests_before"] == 40 and alpha["general"]["direction"] == "none"
    slot = runner.invoke(
        app,
        ["drift", "--requests", str(today), "--reference", "latest", "--slot", "draft-legal@k=4"],
        env=env,
    )
    message = assert_usage_error(slot, "--slot")
    assert f"run {tune}, a tune run of draft-legal@k=2" in message
    assert f"the newest run holding it is run {bench}: --reference {bench}" in message
