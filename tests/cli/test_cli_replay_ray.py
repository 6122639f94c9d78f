"""`replay --ray` without a Ray cluster (the default suite; `make test-ray` runs it against a real one):
the option checks, Ray missing, what a worker runs (`replay_shard`) merged as the driver merges it, and how a
failed task becomes one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from ray_logs import write_log
from specmeter import __version__
from specmeter.cli.app import app
from specmeter.replay.config import MAX_SHARDS, EmptyShard, ReplayConfig, ReplayError
from specmeter.replay.merge import merge_shards
from specmeter.replay.ray_run import ShardFailed, _failed, replay_shard

runner = CliRunner()
METHODS = ("suffix", "ngram:min=1,max=2")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return write_log(tmp_path / "serve.jsonl", n=12)


def _config(tiny: Any, log: Path, **kw: Any) -> ReplayConfig:
    return ReplayConfig(
        sources=(log,), methods=METHODS, ks=(2, 3), target=tiny.target, category_field="domain", warm=1, **kw
    )


def test_option_checks(tiny: Any, log: Path, tmp_path: Path) -> None:
    base = ["replay", "--from", str(log), "--target", str(tiny.target), "--method", "ngram", "--no-store"]
    assert_usage_error(runner.invoke(app, [*base, "--shards", "2"]), "--shards needs --ray")
    assert_usage_error(
        runner.invoke(app, [*base, "--ray", "local", "--shard", "0/2", "--json", str(tmp_path / "s.json")]),
        "--ray runs every shard itself: drop --shard",
    )
    for bad in ("0", str(MAX_SHARDS + 1)):
        assert_usage_error(
            runner.invoke(app, [*base, "--ray", "local", "--shards", bad]),
            f"--shards must be in 1..{MAX_SHARDS}",
        )
    assert_usage_error(runner.invoke(app, [*base, "--ray", " "]), "--ray: give the cluster's address")
    merge = ["replay", "--merge", str(tmp_path / "s.json"), "--ray", "local", "--no-store"]
    assert_usage_error(
        runner.invoke(app, merge), "--merge takes shard results only (no --from, --method, --ray"
    )


def test_shard_count_is_the_option_else_the_clusters_cpus(tiny: Any, log: Path) -> None:
    assert _config(tiny, log, ray="auto", shards=5).shard_count(64.0) == 5
    on_cluster = _config(tiny, log, ray="auto")
    assert [on_cluster.shard_count(c) for c in (0.0, 0.5, 1.0, 7.0, 7.9, 1e9)] == [1, 1, 1, 7, 7, MAX_SHARDS]


def test_ray_missing_is_one_line_naming_the_extra(
    tiny: Any, log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, installed or not
    out = tmp_path / "r.json"
    args = ["replay", "--from", str(log), "--target", str(tiny.target), "--method", "ngram", "--ray", "auto",
            "--json", str(out), "--no-store"]  # fmt: skip
    result = runner.invoke(app, args)
    assert_usage_error(result, "--ray needs Ray, an optional extra: pip install 'specmeter[ray]'")
    assert not out.exists()


def test_worker_shards_merged_equal_one_run(tiny: Any, log: Path, tmp_path: Path) -> None:
    """What each Ray task runs (`replay_shard`, called here in-process), merged as the driver merges,
    gives the single run's candidates; the rows in the merged CSV are the single run's."""
    single_json, single_csv = tmp_path / "one.json", tmp_path / "one.csv"
    args = ["replay", "--from", str(log), "--target", str(tiny.target), "--k", "2,3", "--category-field",
            "domain", "--warm", "1", "--json", str(single_json), "--csv", str(single_csv),
            "--no-store"]  # fmt: skip
    for m in METHODS:
        args += ["--method", m]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    one = json.loads(single_json.read_text("utf-8"))
    cfg = _config(tiny, log)
    shards = [replay_shard(cfg, i, 3, __version__) for i in (2, 0, 1)]
    assert [s["replay"]["shard"] for s in shards] == [{"index": i, "count": 3} for i in (2, 0, 1)]
    assert sum(s["replay"]["log"]["measured"] for s in shards) == one["replay"]["log"]["measured"] == 11
    merged_csv = tmp_path / "merged.csv"
    merged, _rows = merge_shards(
        [(f"task {s['replay']['shard']['index']}", s) for s in shards], None, merged_csv,
        config={"merged": 3},
    )  # fmt: skip
    assert merged["candidates"] == one["candidates"]
    assert merged["run"]["config"] == {"merged": 3}
    assert merged["replay"]["merged_from"] == ["task 0", "task 1", "task 2"]
    assert merged_csv.read_text("utf-8") == single_csv.read_text("utf-8")
    accepted = {(c["draft"], c["k"]): c["summary"]["accepted_tokens"] for c in one["candidates"]}
    assert all(a > 0 for a in accepted.values()), accepted  # the comparison is not of empty figures


def test_a_worker_with_another_version_refuses(tiny: Any, log: Path) -> None:
    with pytest.raises(ReplayError, match=f"this worker has specmeter {__version__}, the driver 0.0.0-other"):
        replay_shard(_config(tiny, log), 0, 2, "0.0.0-other")


class _TaskError(Exception):
    """Ray's RayTaskError carries what the task raised as ``cause``."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"traceback...\n{cause}")
        self.cause = cause


def test_a_failed_task_is_one_line_naming_the_shard() -> None:
    bad_input = _failed(_TaskError(ReplayError("--from: /logs/x.jsonl does not exist")), 2, 4)
    assert isinstance(bad_input, ReplayError)
    assert str(bad_input) == "--ray: shard 2/4: --from: /logs/x.jsonl does not exist"
    empty = _failed(_TaskError(EmptyShard("serve.jsonl: no usable request falls in --shard 7/8")), 7, 8)
    assert isinstance(empty, ReplayError) and str(empty) == (
        "--ray: shard 7/8 holds no request to replay (the log has fewer usable requests than --shards 8): "
        "give fewer --shards"
    )
    crash = _failed(_TaskError(MemoryError("out of memory\nkilled")), 1, 4)
    assert isinstance(crash, ShardFailed) and "\n" not in str(crash)
    assert str(crash) == "--ray: shard 1/4 failed on the cluster (MemoryError: killed); nothing was written"
    died = _failed(RuntimeError("The worker died unexpectedly"), 0, 4)  # no cause: the error itself
    assert isinstance(died, ShardFailed) and "RuntimeError: The worker died unexpectedly" in str(died)


def test_merge_writes_the_single_runs_csv(tiny: Any, log: Path, tmp_path: Path) -> None:
    """`--merge … --csv` (what the Ray driver writes too): the single run's CSV, row for row."""
    base = ["replay", "--from", str(log), "--target", str(tiny.target), "--method", "suffix", "--k", "2",
            "--no-store", "--quiet"]  # fmt: skip
    single = tmp_path / "one.csv"
    assert runner.invoke(app, [*base, "--csv", str(single)]).exit_code == 0
    shards = [tmp_path / f"s{i}.json" for i in range(2)]
    for i, path in enumerate(shards):
        result = runner.invoke(app, [*base, "--shard", f"{i}/2", "--json", str(path)])
        assert result.exit_code == 0, result.output
    merged = tmp_path / "merged.csv"
    args = [
        "replay",
        "--merge",
        str(shards[1]),
        "--merge",
        str(shards[0]),
        "--csv",
        str(merged),
        "--no-store",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert merged.read_text("utf-8") == single.read_text("utf-8")
    assert len(single.read_text("utf-8").splitlines()) == 1 + 12


def test_merge_prices_the_merged_figures_not_a_shards(tiny: Any, log: Path, tmp_path: Path) -> None:
    """Shards run with --costs: the merged predicted speedups are the single run's, and a cost file that is
    gone is one line."""
    cells = [{"concurrency": c, "k": 2, "e_decode": 1.0 + 0.1 * c, "tau": 2.5} for c in (1, 4)]
    costs = tmp_path / "sweep.json"
    costs.write_text(json.dumps({"kind": "sweep", "sweep": {"cells": cells}}), "utf-8")
    base = ["replay", "--from", str(log), "--target", str(tiny.target), "--method", "ngram:min=1,max=2",
            "--k", "2", "--costs", str(costs), "--no-store", "--quiet"]  # fmt: skip
    single = tmp_path / "one.json"
    assert runner.invoke(app, [*base, "--json", str(single)]).exit_code == 0
    shards = [tmp_path / f"s{i}.json" for i in range(2)]
    for i, path in enumerate(shards):
        assert runner.invoke(app, [*base, "--shard", f"{i}/2", "--json", str(path)]).exit_code == 0
    merged = tmp_path / "merged.json"
    merge = ["replay", "--merge", str(shards[0]), "--merge", str(shards[1]), "--no-store", "--quiet"]
    result = runner.invoke(app, [*merge, "--json", str(merged)])
    assert result.exit_code == 0, result.output
    one, both = (json.loads(p.read_text("utf-8"))["replay"]["costs"] for p in (single, merged))
    shard0 = json.loads(shards[0].read_text("utf-8"))["replay"]["costs"]
    assert both["rows"] == one["rows"] and shard0["rows"] != one["rows"]
    costs.unlink()
    assert_usage_error(runner.invoke(app, [*merge, "--json", str(tmp_path / "m2.json")]), "not a file here")
