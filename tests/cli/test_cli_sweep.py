"""``specmeter sweep`` through the CLI: option mistakes, failing configurations (one line each, what was
measured kept, nothing left running), and a real sweep of ``specmeter serve`` with the bundled models whose
per-cell counters equal the server's own deltas."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner, Result

from specmeter.bundled.models import bundled_model
from specmeter.cli.app import app
from specmeter.engine.schedule import KSchedule
from specmeter.workloads.bundled import bundled_prompts

runner = CliRunner()
STUB = Path(__file__).parents[1] / "sweep" / "sweep_stub.py"
SPECMETER = Path(sys.executable).with_name("specmeter")


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, ["sweep", *[str(a) for a in args]])


def prompts(tmp_path: Path, n: int) -> Path:
    lines = bundled_prompts("legal").read_text(encoding="utf-8").splitlines()[:n]
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_option_mistakes(tmp_path: Path) -> None:
    p = prompts(tmp_path, 2)
    assert_usage_error(invoke("--prompts", p), "--launch", "--endpoint")
    assert_usage_error(invoke("--launch", "serve --k {k}", "--prompts", p), "{port}")
    assert_usage_error(
        invoke("--launch", "serve --port {port} {kk}", "--prompts", p), "unknown placeholder {kk}"
    )
    assert_usage_error(
        invoke("--launch", "s --port {port} --k {k}", "--k", "2,4", "--prompts", p), "baseline"
    )
    assert_usage_error(invoke("--launch", "s --port {port} --c {spec}", "--k", "0,2", "--prompts", p),
                       "--baseline-launch")  # fmt: skip
    assert_usage_error(invoke("--launch", "s --port {port}", "--k", "0,x", "--prompts", p), "--k")
    assert_usage_error(invoke("--launch", "s --port {port}", "--k", "0", "--prompts", p), "at least one")
    assert_usage_error(invoke("--endpoint", "4=http://127.0.0.1:1", "--prompts", p), "0=URL")
    assert_usage_error(invoke("--endpoint", "nope", "--prompts", p), "K=URL")
    assert_usage_error(
        invoke("--launch", "s --port {port}", "--prompts", p, "--rate", "1", "--validate"), "--concurrency"
    )
    out = tmp_path / "o.json"
    assert_usage_error(invoke("--launch", "s --port {port}", "--prompts", p, "--json", p), "--json")
    assert not out.exists()


@pytest.mark.slow  # the heaviest few run in make test-slow (CI runs it too)
def test_failing_configurations_one_line_each_measured_kept_nothing_left(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    out = tmp_path / "sweep.json"
    result = invoke(
        "--launch", f"{sys.executable} {STUB} --port {{port}} --k {{k}} --pids {pids}", "--k", "0,1,2,3",
        "--concurrency", "1,2", "--prompts", prompts(tmp_path, 4), "--limit", "4", "--warmup", "0",
        "--max-tokens", "4", "--startup-timeout", "4", "--stop-timeout", "2", "--json", out, "--quiet",
    )  # fmt: skip
    assert "Traceback" not in result.output
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 3, errors
    died, unhealthy, refused = errors
    assert died.startswith("error: k=1: the server exited with code 1 during level")
    assert unhealthy.startswith("error: k=2: not healthy after 4s") and "HTTP 503" in unhealthy
    assert refused.startswith("error: k=3: the server exited with code 3 before it was healthy")
    assert "refusing to start with k=3" in refused
    data = json.loads(out.read_text())
    assert data["complete"] is True
    section = data["sweep"]
    runs = {c["run"]: c for c in section["configurations"]}
    assert [r for r in runs] == ["k=0", "k=1", "k=2", "k=3", "k=0 (end)"]
    assert runs["k=0"]["status"] == runs["k=0 (end)"]["status"] == "ok"
    assert runs["k=1"]["status"] == "failed" and runs["k=1"]["levels"]  # what it measured is kept
    assert [c["run"] for c in section["cells"] if c["run"] == "k=1"]
    assert section["failures"] == [e.removeprefix("error: ") for e in errors]
    for run in runs.values():
        assert run["pid"] is None or gone(run["pid"]), run
    children = [int(f.read_text()) for f in pids.glob("child-*")]
    assert len(children) == 2  # both baseline runs started a child in their process group
    assert all(gone(pid) for pid in children)


@pytest.mark.slow  # the heaviest few run in make test-slow (CI runs it too)
def test_sweep_of_specmeter_serve_counters_equal_server_deltas(tmp_path: Path) -> None:
    target, draft = bundled_model("target"), bundled_model("draft-legal")
    out = tmp_path / "sweep.json"
    launch = f"{SPECMETER} serve --target {target} --draft {{draft}} --k {{k}} --port {{port}} --max-batch 4"
    result = invoke(
        "--launch", launch, "--draft", draft, "--k", "0,2", "--concurrency", "1,2", "--prompts",
        prompts(tmp_path, 6), "--limit", "6", "--max-tokens", "16", "--warmup", "1", "--json", out,
        "--csv", tmp_path / "rows.csv", "--schedule-out", tmp_path / "schedule.json", "--validate",
        "--validate-launch", launch.replace("--k {k}", "--k-schedule {schedule}"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(out.read_text())
    section = data["sweep"]
    cells = {(c["run"], c["level"]): c for c in section["cells"]}
    assert set(cells) == {(r, lv) for r in ("k=0", "k=2") for lv in ("c=1", "c=2")}
    for level in ("c=1", "c=2"):
        cell = cells[("k=2", level)]
        counters = cell["counters"]
        # The server's /metrics deltas around the cell equal the sum of its per-request reports.
        assert counters["drafted"] is not None and counters["drafted"] > 0
        assert counters["drafted"] == counters["per_request_drafted"]
        assert counters["accepted"] == counters["per_request_accepted"]
        assert counters["equal"] is True
        assert 0 < cell["alpha"] <= 1 and 1 <= cell["tau"] <= 3
        assert cell["e_first"] is not None and cell["e_end"] is not None
        assert cell["e"] is not None and min(cell["e_first"], cell["e_end"]) <= cell["e"] <= max(
            cell["e_first"], cell["e_end"])  # fmt: skip
        assert cell["ttft_ms"]["p50"] > 0 and cell["requests"] == 6
    assert [d["level"] for d in section["drift"]] == ["c=1", "c=2"]
    best = {b["level"]: b["k"] for b in section["best"]}
    assert set(best.values()) <= {0, 2}
    schedule = json.loads((tmp_path / "schedule.json").read_text())
    assert schedule == section["schedule"]["speculative_config"]
    assert schedule["num_speculative_tokens_per_batch_size"][0][0] == 1
    assert [c["draft"] for c in data["candidates"]].count("k=2") == 2
    validate = section["validate"]
    rows = (tmp_path / "rows.csv").read_text().splitlines()
    if validate is None:  # speculation never paid before the last baseline run: no schedule to launch
        assert len(rows) == 1 + 6 * 2 * 3  # header + 6 requests × 2 levels × (k=0, k=2, k=0 again)
    else:
        # The schedule's own server ran the ramp; every level has its E and the best static k beside it.
        assert validate["status"] == "ok"
        assert [r["level"] for r in validate["levels"]] == ["c=1", "c=2"]
        for r in validate["levels"]:
            assert r["e"] is not None and r["best_static_k"] in (0, 2)
            assert r["k_scheduled"] == KSchedule.parse(validate["schedule"]).k_for(int(r["level"][2:]))
        assert len(rows) == 1 + 6 * 2 * 4  # … and the schedule's run
        same = validate["schedule"] == schedule["num_speculative_tokens_per_batch_size"]
        assert same == (section["schedule"].get("validated") is None)
        assert "Validation" in result.stdout
    for run in section["configurations"]:
        assert run["status"] == "ok" and gone(run["pid"])
    assert "E_meas(k, level)" in result.stdout and "schedule:" in result.stdout
    # Into the run store, every request with it; and the HTML report shows the matrix.
    with sqlite3.connect(os.environ["SPECMETER_STORE"]) as db:
        ((kind, status, result_json),) = db.execute("SELECT kind, status, result_json FROM runs").fetchall()
        (requests,) = db.execute("SELECT COUNT(*) FROM requests").fetchone()
    assert (kind, status) == ("sweep", "complete") and requests == len(rows) - 1
    assert json.loads(result_json)["sweep"]["cells"] == section["cells"]
    html = tmp_path / "r.html"
    report = runner.invoke(app, ["report", str(out), "-o", str(html)])
    assert report.exit_code == 0, report.output
    assert "Sweep: E_meas(k, level)" in html.read_text()


@pytest.mark.slow  # the heaviest few run in make test-slow (CI runs it too)
def test_slo_capacity_search_and_roi(tmp_path: Path) -> None:
    # The stub refuses requests beyond 3 in flight without speculation, 6 with (k=4): capacity 3 → 6.
    out = tmp_path / "sweep.json"
    result = invoke(
        "--launch", f"{sys.executable} {STUB} --port {{port}} --k {{k}} --pids {tmp_path}", "--k", "0,4",
        "--concurrency", "1,2", "--prompts", prompts(tmp_path, 4), "--limit", "8", "--warmup", "0",
        "--max-tokens", "4", "--slo", "ttft_p99_ms=60000", "--search", "concurrency", "--search-range", "1:8",
        "--no-rerun-baseline", "--json", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    section = json.loads(out.read_text())["sweep"]
    capacity = section["capacity"]
    blocks = capacity["configurations"]
    assert (blocks["k=0"]["capacity"], blocks["k=0"]["first_failing"]) == (3, 4)
    assert (blocks["k=4"]["capacity"], blocks["k=4"]["first_failing"]) == (6, 7)
    assert capacity["speculative"]["run"] == "k=4"
    assert "moves SLO capacity from 3 to 6 concurrent requests" in capacity["headline"]
    assert "moves SLO capacity" in result.stdout
    loads = [p["load"] for p in blocks["k=0"]["probes"]]
    assert loads[:2] == [1, 8] and len(loads) == len(set(loads)) <= 6  # bisection, each level once
    for cell in section["cells"]:  # every grid cell judged against the SLO: all met at c ≤ 2
        assert cell["slo"]["attainment"]["share"] == 1.0
    # roi --from-sweep sizes the fleet with the goodput at each capacity.
    base_rps, spec_rps = blocks["k=0"]["requests_per_s"], blocks["k=4"]["requests_per_s"]
    roi = runner.invoke(app, ["roi", "--from-sweep", str(out), "--traffic", "100", "--price-baseline", "4",
                              "--json", str(tmp_path / "roi.json")])  # fmt: skip
    assert roi.exit_code == 0, roi.output
    data = json.loads((tmp_path / "roi.json").read_text())
    assert data["instances_before"] == math.ceil(100 / base_rps)
    assert data["instances_after"] == math.ceil(100 / spec_rps)


def test_slo_option_mistakes(tmp_path: Path) -> None:
    p = prompts(tmp_path, 2)
    base = ["--launch", "s --port {port} --k {k}", "--prompts", str(p), "--concurrency", "1,4"]
    assert_usage_error(invoke(*base, "--slo", "ttft=5"), "--slo", "ttft")
    assert_usage_error(invoke(*base, "--search", "concurrency"), "--search needs --slo")
    assert_usage_error(invoke(*base, "--slo", "ttft_p99_ms=5", "--search", "batch"), "--search")
    searching = [*base, "--slo", "ttft_p99_ms=5", "--search", "concurrency"]
    assert_usage_error(invoke(*searching, "--search-range", "8:2"), "--search-range")
    # Issue 29: a range beyond what the machine holds spun for ever; the bound is named now (load.limits).
    assert_usage_error(
        invoke(*searching, "--search-range", "1:1000000000"), "--search-range", "open-file limit"
    )
    assert_usage_error(invoke(*base, "--slo", "ttft_p99_ms=5", "--target", "1.5"), "--target")


@pytest.mark.parametrize(
    "signum",
    # SIGTERM's path is Ctrl-C's (the handler runs asyncio's); load's own SIGTERM test is the fast one.
    [
        pytest.param(signal.SIGINT, marks=pytest.mark.slow),
        pytest.param(signal.SIGTERM, marks=pytest.mark.slow),
    ],
    ids=["ctrl-c", "sigterm"],
)
def test_ctrl_c_stops_the_server_keeps_the_levels_and_exits_130(tmp_path: Path, signum: int) -> None:
    out = tmp_path / "sweep.json"
    launch = f"{sys.executable} {STUB} --port {{port}} --k {{k}} --pids {tmp_path}"
    cmd = [
        str(SPECMETER), "sweep", "--launch", launch,
        "--k", "0,4", "--concurrency", "1,2", "--prompts", str(prompts(tmp_path, 4)), "--limit", "40",
        "--warmup", "0", "--max-tokens", "4", "--json", str(out), "--no-store", "--quiet",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until the first level is in the file: the second runs
            time.sleep(0.2)
            try:
                runs = json.loads(out.read_text())["sweep"]["configurations"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if runs and runs[0]["levels"] == ["c=1"]:
                break
        time.sleep(0.5)
        proc.send_signal(signum)  # SIGTERM takes Ctrl-C's path (sweep.launch.sigterm_as_interrupt)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Interrupted" in stderr
    data = json.loads(out.read_text())
    assert data["complete"] is False
    (run,) = data["sweep"]["configurations"]
    assert run["status"] == "interrupted" and run["levels"] == ["c=1", "c=2"]
    cells = {c["level"]: c for c in data["sweep"]["cells"]}
    assert cells["c=1"]["requests"] == 40 and cells["c=1"]["complete"]
    assert cells["c=2"]["complete"] is False  # the level in flight, summarised from what finished
    assert gone(run["pid"])
    assert all(gone(int(f.read_text())) for f in tmp_path.glob("child-*"))


def _stub(tmp_path: Path, *fail: str) -> str:
    return f"{sys.executable} {STUB} --port {{port}} --k {{k}} --pids {tmp_path}" + "".join(
        f" --fail {f}" for f in fail
    )


def test_a_baseline_answering_only_http_500_measures_nothing_exits_1_and_writes_no_schedule(
    tmp_path: Path,
) -> None:
    out, schedule = tmp_path / "sweep.json", tmp_path / "schedule.json"
    result = invoke(
        "--launch", _stub(tmp_path, "0:0", "4:0"), "--k", "0,4", "--concurrency", "1,2", "--prompts",
        prompts(tmp_path, 2), "--limit", "2", "--warmup", "0", "--max-tokens", "4", "--stop-timeout", "2",
        "--json", out, "--schedule-out", schedule, "--quiet",
    )  # fmt: skip
    assert "Traceback" not in result.output
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: the baseline could not be measured, so nothing can be compared: k=0: none of the 4 requests "
        "completed at any level (first failure: HTTP 500: internal error)"
    ]
    assert not schedule.exists()
    section = json.loads(out.read_text())["sweep"]
    assert [c["status"] for c in section["configurations"]] == ["failed"]  # k=4 never started
    assert section["best"] == [] and section["schedule"] is None
    # Nothing measured: no empty partial run is left in the store.
    with sqlite3.connect(os.environ["SPECMETER_STORE"]) as db:
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)


def test_failed_configurations_and_cells_are_one_line_each_and_never_the_best_k(tmp_path: Path) -> None:
    # k=4 answers its first 2 requests (level c=1) and 500 to the rest (c=2); k=5 answers 500 to all;
    # the baseline its 4th (at c=2): 7 of the 12 requests sent failed.
    out, schedule = tmp_path / "sweep.json", tmp_path / "schedule.json"
    result = invoke(
        "--launch", _stub(tmp_path, "0:3", "4:2", "5:0"), "--k", "0,4,5", "--concurrency", "1,2",
        "--prompts", prompts(tmp_path, 2), "--limit", "2", "--warmup", "0", "--max-tokens", "4",
        "--stop-timeout", "2", "--no-rerun-baseline", "--json", out, "--schedule-out", schedule, "--quiet",
        "--max-error-rate", "0.8", "--warmup-per-level", "0",  # the stub counts every request it answers
    )  # fmt: skip
    assert "Traceback" not in result.output
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: k=4 at c=2: none of the 2 requests completed (first failure: HTTP 500: internal error)",
        "error: k=5: none of the 4 requests completed at any level (first failure: HTTP 500: internal error)",
    ]
    section = json.loads(out.read_text())["sweep"]
    runs = {c["run"]: c["status"] for c in section["configurations"]}
    assert runs == {"k=0": "ok", "k=4": "ok", "k=5": "failed"}
    cells = {(c["run"], c["level"]): c for c in section["cells"]}
    assert cells[("k=4", "c=2")]["error"] == errors[0].removeprefix("error: ")
    assert cells[("k=4", "c=2")]["e"] is None and cells[("k=5", "c=1")]["e"] is None
    assert cells[("k=4", "c=1")]["error"] is None and cells[("k=4", "c=1")]["e"] is not None
    # Only c=1 measured a speculative cell: c=2 has no best k (not k=0 by default), k=5 is never a candidate.
    assert [(b["level"], b["k"] in (0, 4)) for b in section["best"]] == [("c=1", True)]
    assert section["crossover"] in (None, "c=1")
    assert json.loads(schedule.read_text()) == section["schedule"]["speculative_config"]
    # What --max-error-rate judges (under 0.8: no line of its own; the rule: the next test).
    assert section["requests"] == {"sent": 12, "completed": 5, "failed": 7, "errors": {"HTTP 500": 7}}


def test_client_processes_and_max_error_rate_options(tmp_path: Path, monkeypatch: Any) -> None:
    import specmeter.sweep.run as sweeprun

    seen: list[Any] = []

    async def fake(cfg: Any, **kwargs: Any) -> tuple[dict[str, Any], None]:
        seen.append(cfg)
        return {"sweep": {"requests": {"sent": 4, "failed": 1, "errors": {"HTTP 500": 1}}}}, None

    monkeypatch.setattr(sweeprun, "execute_sweep", fake)
    p = prompts(tmp_path, 2)
    base = ["--endpoint", "0=http://127.0.0.1:9", "--endpoint", "2=http://127.0.0.1:9", "--prompts", str(p),
            "--no-store", "--quiet"]  # fmt: skip
    result = invoke(*base, "--client-processes", "3", "--max-error-rate", "0.25")
    assert result.exit_code == 0, result.output
    assert seen[-1].load.client_processes == 3
    result = invoke(*base, "--max-error-rate", "0.2")  # 1 of 4 failed
    assert result.exit_code == 1
    assert "error: --max-error-rate 0.2: 1 of 4 requests failed (25.0%: HTTP 500 ×1)" in result.stderr
    assert seen[-1].load.client_processes == "auto"  # the default: from the levels and the cores
    assert_usage_error(invoke(*base, "--client-processes", "0"), "--client-processes")
    assert_usage_error(invoke(*base, "--client-processes", "65"), "--client-processes")
    assert_usage_error(invoke(*base, "--max-error-rate", "1.5"), "--max-error-rate")


@pytest.mark.slow  # 3.5 s or more on this VM (issue 37's stop): make test-slow, which CI runs
def test_a_launch_that_daemonizes_is_measured_and_stopped(tmp_path: Path) -> None:
    # Issue 29.5: each launch double-forks and exits 0 at once; every configuration used to fail ("exited with
    # code 0 before it was healthy") and leave its daemon running (3 here).
    pids = tmp_path / "pids"
    out = tmp_path / "sweep.json"
    result = invoke(
        "--launch", f"{sys.executable} {STUB} --port {{port}} --k {{k}} --pids {pids} --daemonize",
        "--k", "0,4", "--concurrency", "1", "--prompts", prompts(tmp_path, 2), "--limit", "2",
        "--warmup", "0", "--max-tokens", "4", "--startup-timeout", "30", "--stop-timeout", "2",
        "--json", out, "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    runs = json.loads(out.read_text())["sweep"]["configurations"]
    assert [r["status"] for r in runs] == ["ok", "ok", "ok"]
    daemons = [int(f.read_text()) for f in pids.glob("daemon-*")]
    children = [int(f.read_text()) for f in pids.glob("child-*")]  # k = 0's child, in the daemon's group
    assert len(daemons) == 3 and len(children) == 2
    deadline = time.monotonic() + 10
    while not all(gone(p) for p in daemons + children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p for p in daemons + children if not gone(p)] == []
