"""`specmeter replay --ray` against a real Ray (make test-ray): a head started with `ray start` on loopback,
the driver a separate `specmeter` process. N shards as Ray tasks, merged, equal one run (suffix decoding,
which learns across requests, and an n-gram method); the error cases are one line each, and nothing merged
is written when a shard fails."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ray_helpers import Head, outlived, ray_head, run_specmeter, short_temp_dir
from typer.testing import CliRunner

from engine_helpers import free_port
from ray_logs import write_log
from specmeter.cli.app import app

pytestmark = pytest.mark.ray

METHODS = ("suffix", "ngram:min=1,max=2")


@pytest.fixture(scope="module")
def head() -> Iterator[Head]:
    with ray_head() as h:
        yield h


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_log(tmp_path_factory.mktemp("ray") / "serve.jsonl", n=30)


def _base(tiny: Any, log: Path) -> list[str]:
    args = ["replay", "--from", str(log), "--target", str(tiny.target), "--k", "2,4", "--category-field",
            "domain", "--warm", "2", "--no-store"]  # fmt: skip
    for m in METHODS:
        args += ["--method", m]
    return args


@pytest.fixture(scope="module")
def single(tiny: Any, log: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The single-process run (in this process), and its CSV's text."""
    out = tmp_path_factory.mktemp("single")
    result = CliRunner().invoke(
        app, [*_base(tiny, log), "--json", str(out / "one.json"), "--csv", str(out / "one.csv")]
    )
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads((out / "one.json").read_text("utf-8"))
    data["csv"] = (out / "one.csv").read_text("utf-8")
    assert all(c["summary"]["accepted_tokens"] > 0 for c in data["candidates"])  # not empty figures
    return data


def test_shards_on_a_ray_cluster_equal_one_run(
    tiny: Any, log: Path, head: Head, single: dict[str, Any], tmp_path: Path
) -> None:
    out, csv = tmp_path / "ray.json", tmp_path / "ray.csv"
    done = run_specmeter(
        *_base(tiny, log), "--ray", head.address, "--shards", "3", "--json", str(out), "--csv", str(csv)
    )
    assert done.returncode == 0, done.stderr
    merged = json.loads(out.read_text("utf-8"))
    assert merged["complete"] is True
    assert merged["candidates"] == single["candidates"]
    assert csv.read_text("utf-8") == single["csv"]
    assert merged["replay"]["log"] == single["replay"]["log"]
    assert merged["run"]["config"] == {**single["run"]["config"], "merged": 3, "ray": head.address}
    assert merged["replay"]["merged_from"] == [f"shard {i}/3 (Ray)" for i in range(3)]
    for i in range(3):  # a line per finished shard (in the order they finish)
        assert f"shard {i}/3 done:" in done.stderr, done.stderr
    assert "suffix" in done.stdout and "Traceback" not in done.stderr


def test_auto_finds_the_cluster_in_ray_address_and_shards_default_to_its_cpus(
    tiny: Any, log: Path, head: Head, single: dict[str, Any], tmp_path: Path
) -> None:
    # The log by a path relative to the driver's working directory, which the workers read it from.
    out, store = tmp_path / "ray.json", tmp_path / "runs.sqlite"
    args = [log.name if a == str(log) else a for a in _base(tiny, log) if a != "--no-store"]
    done = run_specmeter(
        *args, "--ray", "auto", "--json", str(out), "--store", str(store), "--quiet",
        extra_env={"RAY_ADDRESS": head.address}, cwd=log.parent,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text("utf-8"))["run"]["config"]["from"] == [log.name]
    assert "recorded as run 1" in done.stderr and store.is_file()  # the merged run, as a single run is
    merged = json.loads(out.read_text("utf-8"))
    assert merged["candidates"] == single["candidates"]
    assert merged["run"]["config"]["merged"] == 2  # the head's --num-cpus 2
    assert "done:" not in done.stderr  # --quiet: no progress lines


def test_a_shard_failing_on_the_cluster_is_one_line_and_nothing_is_written(
    tiny: Any, log: Path, head: Head, tmp_path: Path
) -> None:
    # 6 shards of 3 measured requests (--limit 3): shards 3, 4 and 5 have nothing to replay (as --shard 5/6).
    out, csv = tmp_path / "ray.json", tmp_path / "ray.csv"
    done = run_specmeter(
        *_base(tiny, log), "--limit", "3", "--ray", head.address, "--shards", "6", "--json", str(out),
        "--csv", str(csv),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("error: --ray: shard ") and "/6 holds no request to replay" in errors[0]
    assert errors[0].endswith("give fewer --shards")
    assert "Traceback" not in done.stderr
    assert not out.exists() and not csv.exists()


def test_an_unreachable_cluster_is_one_line(tiny: Any, log: Path, tmp_path: Path) -> None:
    out = tmp_path / "ray.json"
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    done = run_specmeter(*_base(tiny, log), "--ray", address, "--json", str(out), timeout=180)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [errors[0]] and f"--ray {address}: cannot connect" in errors[0], done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_local_starts_a_ray_for_the_run_alone(
    tiny: Any, log: Path, single: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "ray.json"
    with short_temp_dir() as temp:  # Ray's files go there, not to /tmp/ray; the processes end with the run
        done = run_specmeter(
            *_base(tiny, log), "--ray", "local", "--shards", "2", "--json", str(out), "--quiet",
            extra_env={"RAY_TMPDIR": str(temp)},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(out.read_text("utf-8"))["candidates"] == single["candidates"]
        assert list(temp.glob("ray/session_*")), "Ray did not use RAY_TMPDIR"
        assert not outlived(temp)


def test_a_task_error_from_ray_becomes_one_line() -> None:
    """Ray's own exception types, as `ray.get` raises them, through the driver's mapping."""
    import ray.exceptions

    from specmeter.replay.config import ReplayError
    from specmeter.replay.ray_run import ShardFailed, _failed

    wrapped = ray.exceptions.RayTaskError("replay_shard", "Traceback ...", ReplayError("--from: x missing"))
    bad = _failed(wrapped, 1, 3)
    assert isinstance(bad, ReplayError) and str(bad) == "--ray: shard 1/3: --from: x missing"
    crashed = _failed(ray.exceptions.WorkerCrashedError(), 2, 3)
    assert isinstance(crashed, ShardFailed) and str(crashed).startswith(
        "--ray: shard 2/3 failed on the cluster"
    )
    assert "\n" not in str(crashed)
