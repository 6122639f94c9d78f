"""Messages that must not contradict the facts beside them (issue 32, item 9): tune's busy machine, select's
memory tie-break, sweep's server logs, roi's payback, and the modes of the files commands write."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from rich.console import Console
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.report.files import RequestSink, write_json_atomic
from specmeter.report.html import write_report
from specmeter.selection.select_analysis import recommendation_lines
from specmeter.selection.view_tune import render_tune

runner = CliRunner()
MIB = 2**20


def _tune_result(verdict: str | None) -> dict[str, Any]:
    row = {"k": 1, "run": True, "held_out": False, "requests": 3}
    return {
        "run": {"config": {"target": "t", "drafts": ["d"]}},
        "hygiene": None if verdict is None else {"verdict": verdict},
        "tune": {
            "by_k": {"all": [row]},
            "overhead": {
                "per_forward_ms": 0.1,
                "per_draft_token_ms": 0.01,
                "fitted_on_k": [0, 1],
                "runs": [],
                "r2": 0.2,
            },
            "best_k": {},
        },
    }


def _rendered(result: dict[str, Any]) -> str:
    console = Console(record=True, width=400)
    render_tune(result, console)
    return console.export_text()


def test_tune_blames_a_busy_machine_only_when_the_machine_was_busy() -> None:
    quiet = _rendered(_tune_result("quiet"))
    assert "not a line in k here (R² 0.20), on a quiet machine" in quiet and "probably busy" not in quiet
    assert "the machine was busy during the run" in _rendered(_tune_result("busy"))
    assert "busy" not in _rendered(_tune_result(None))


def _section(first: str, second: str, held: dict[str, int]) -> dict[str, Any]:
    ranking = [{"draft": first, "k": 4}, {"draft": second, "k": 2}]
    return {
        "ranking": ranking,
        "memory": {name: {"extra_memory_bytes": n} for name, n in held.items()},
        "separation": {
            "second": f"{second}@k=2",
            "difference": 0.01,
            "difference_ci": [-0.1, 0.1],
            "separated": False,
        },
        "recommendation": {
            "single": {"draft": first, "k": 4, "speedup_weighted": 1.5, "speedup_weighted_ci": [1.4, 1.6]},
            "by_domain": {},
            "router": {"gain_over_single": None},
        },
    }


def test_select_names_the_smaller_draft_only_when_memory_differs() -> None:
    same = " ".join(recommendation_lines(_section("a", "b", {"a": int(6.15 * MIB), "b": int(6.15 * MIB)})))
    assert "holds less memory" not in same and "both drafts hold 6.15 MiB" in same
    differ = " ".join(recommendation_lines(_section("a", "b", {"a": 8 * MIB, "b": 2 * MIB})))
    assert "prefer b, which holds less memory (2.00 MiB against 8.00 MiB)" in differ
    one = " ".join(recommendation_lines(_section("a", "a", {"a": 8 * MIB})))
    assert "both are a: either k will do" in one


def test_sweep_with_endpoints_names_no_server_logs(tmp_path: Path, monkeypatch: Any) -> None:
    import specmeter.sweep.run as sweep_run
    import specmeter.sweep.view as sweep_view

    seen: list[dict[str, Any]] = []

    async def fake(cfg: Any, *, config: dict[str, Any], **kwargs: Any) -> tuple[dict[str, Any], None]:
        seen.append(config)
        return {"sweep": {"requests": {"sent": 1, "failed": 0, "errors": {}}}}, None

    monkeypatch.setattr(sweep_run, "execute_sweep", fake)
    monkeypatch.setattr(sweep_view, "render_sweep", lambda result, console: None)
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "a", "prompt": "x"}) + "\n")
    out = tmp_path / "sweep.json"
    result = runner.invoke(app, ["sweep", "--endpoint", "0=http://127.0.0.1:9", "--endpoint",
                                 "2=http://127.0.0.1:9", "--prompts", str(prompts), "--json", str(out),
                                 "--no-store"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "server logs" not in result.output  # specmeter started no server
    assert seen[-1]["logs"] is None
    assert not (tmp_path / "sweep-logs").exists()


def test_roi_without_engineering_cost_pays_back_immediately() -> None:
    result = runner.invoke(app, ["roi", "--speedup", "2", "--monthly-tokens", "1B", "--baseline-throughput",
                                 "1000", "--baseline-price", "4"], env={"COLUMNS": "120"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "immediate" in result.stdout and "0.0 months" not in result.stdout


def test_json_and_html_outputs_get_the_mode_csv_and_jsonl_get(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_json_atomic(tmp_path / "r.json", {"a": 1})
        write_report(tmp_path / "r.html", "<html></html>")
        RequestSink(tmp_path / "r.csv", tmp_path / "r.jsonl").close()
        os.umask(0o077)
        write_json_atomic(tmp_path / "private.json", {"a": 1})
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes == {
        "r.json": 0o644,
        "r.html": 0o644,
        "r.csv": 0o644,
        "r.jsonl": 0o644,
        "private.json": 0o600,
    }
