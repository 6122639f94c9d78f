"""Hostile inputs to replay and the commands that read its results (issue 39): special files as inputs, shard
files that lie, results read back whose figures do not add up. Each case is one `error:` line and exit 2,
never a traceback, a hang or unbounded growth."""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner

from replay_results import write_log
from specmeter.bundled.models import bundled_model
from specmeter.cli.app import app

runner = CliRunner()
TARGET = bundled_model("target")
HEAD = bundled_model("eagle-legal")

pytestmark = pytest.mark.timeout(120)


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """Shards 0/2 and 1/2 of a replay of the hand-made log (ngram and suffix at k 2 and 4), as read back."""
    tmp = tmp_path_factory.mktemp("shards")
    log = write_log(tmp / "log.jsonl")
    out = []
    for i in range(2):
        path = tmp / f"s{i}.json"
        result = runner.invoke(app, [
            "replay", "--from", str(log), "--target", str(TARGET), "--model", "target", "--method", "ngram",
            "--method", "suffix", "--k", "2,4", "--shard", f"{i}/2", "--json", str(path), "--quiet",
        ])  # fmt: skip
        assert result.exit_code == 0, result.output
        out.append(json.loads(path.read_text("utf-8")))
    return out[0], out[1]


# ------------------------------------------------------------------------------------- special files


@pytest.mark.parametrize("kind", ["fifo", "zero", "urandom"])
def test_a_special_file_as_from_is_one_line(kind: str, tmp_path: Path) -> None:
    path = _fifo(tmp_path / "log.jsonl") if kind == "fifo" else Path(f"/dev/{kind}")
    result = runner.invoke(app, ["replay", "--from", str(path), "--target", str(TARGET), "--method", "ngram",
                                 "--no-store", "--quiet"])  # fmt: skip
    assert_usage_error(result, "--from", str(path), "not a regular file")


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_special_file_as_merge_or_select_from_is_one_line(kind: str, tmp_path: Path) -> None:
    path = _fifo(tmp_path / "shard.json") if kind == "fifo" else Path("/dev/zero")
    result = runner.invoke(app, ["replay", "--merge", str(path), "--no-store", "--quiet"])
    assert_usage_error(result, "--merge", str(path), "not a regular file")
    result = runner.invoke(app, ["select", "--from", str(path)])
    assert_usage_error(result, "--from", str(path), "not a regular file")


def test_a_fifo_as_a_heads_weights_is_one_line(tmp_path: Path) -> None:
    head = tmp_path / "head"
    head.mkdir()
    shutil.copy(HEAD / "config.json", head / "config.json")
    _fifo(head / "model.safetensors")
    log = write_log(tmp_path / "log.jsonl")
    result = runner.invoke(app, ["replay", "--from", str(log), "--target", str(TARGET), "--model", "target",
                                 "--method", f"eagle:head={head}", "--no-store", "--quiet"])  # fmt: skip
    assert_usage_error(result, "model.safetensors", "FIFO")


def test_a_heads_rms_norm_eps_that_is_no_number_is_one_line(tmp_path: Path) -> None:
    head = tmp_path / "head"
    shutil.copytree(HEAD, head)
    config = json.loads((head / "config.json").read_text("utf-8"))
    config["transformer_layer_config"]["rms_norm_eps"] = "abc"
    (head / "config.json").write_text(json.dumps(config), "utf-8")
    log = write_log(tmp_path / "log.jsonl")
    result = runner.invoke(app, ["replay", "--from", str(log), "--target", str(TARGET), "--model", "target",
                                 "--method", f"eagle:head={head}", "--no-store", "--quiet"])  # fmt: skip
    assert_usage_error(result, "rms_norm_eps")


# ------------------------------------------------------------------------------------- --merge


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        rows = d["replay"]["rows"]
        del rows[next(iter(rows))][0][key]

    return edit


def _first_row(d: dict[str, Any]) -> dict[str, Any]:
    rows: dict[str, Any] = d["replay"]["rows"][next(iter(d["replay"]["rows"]))][0]
    return rows


def _set_step(value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        _first_row(d)["steps"][0] = value

    return edit


def _duplicate(d: dict[str, Any]) -> None:
    part = d["replay"]["rows"][next(iter(d["replay"]["rows"]))]
    part[1]["i"] = part[0]["i"]


# What a probe wrote into shard 0 and what the one error line must name.
LIES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "missing row field": (_drop("steps"), "steps"),
    "row field of the wrong type": (lambda d: _first_row(d).update(output_tokens="many"), "output_tokens"),
    "short step tuple": (_set_step([0, 0, 1]), "steps[0]"),
    "10^11 steps": (_set_step([0, 0, 1, 0, 10**11]), "steps"),
    "shard count 10^10": (lambda d: d["replay"]["shard"].update(count=10**10), "0/10000000000"),
    "negative step count": (_set_step([0, 0, 1, 0, -3]), "steps[0]"),
    "negative measured": (lambda d: d["replay"]["log"].update(measured=-8), "replay.log.measured"),
    "accepted above drafted": (_set_step([1, 4, 5, 0, 1]), "accepted <= drafted"),
    "duplicate request index": (_duplicate, "appears twice"),
    "numeric model name": (lambda d: d["run"]["config"].update(model=7), "run.config.model"),
    "missing config": (lambda d: d["run"].pop("config"), "run.config"),
    "candidates not a list": (lambda d: d.update(candidates=3), "candidates"),
    "rows of another shard": (lambda d: _first_row(d).update(i=1), "not one of shard 0/2"),
}


@pytest.mark.parametrize("lie", sorted(LIES))
def test_a_shard_that_lies_is_refused_in_one_line(
    lie: str, shards: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    edit, needle = LIES[lie]
    first = copy.deepcopy(shards[0])
    edit(first)
    paths = [tmp_path / "s0.json", tmp_path / "s1.json"]
    for path, data in zip(paths, (first, shards[1]), strict=True):
        path.write_text(json.dumps(data), "utf-8")
    result = runner.invoke(app, ["replay", "--merge", str(paths[0]), "--merge", str(paths[1]), "--no-store",
                                 "--quiet"])  # fmt: skip
    line = assert_usage_error(result, "--merge", needle)
    assert len(line) < 400


def test_shards_of_other_methods_are_refused(
    shards: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    second = copy.deepcopy(shards[1])
    dropped = second["candidates"].pop()
    del second["replay"]["rows"][f"{dropped['draft']}@k={dropped['k']}"]
    paths = [tmp_path / "s0.json", tmp_path / "s1.json"]
    for path, data in zip(paths, (shards[0], second), strict=True):
        path.write_text(json.dumps(data), "utf-8")
    result = runner.invoke(app, ["replay", "--merge", str(paths[0]), "--merge", str(paths[1]), "--no-store"])
    assert_usage_error(result, "--merge", "other methods or k")


def test_honest_shards_still_merge(shards: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path) -> None:
    paths = [tmp_path / "s0.json", tmp_path / "s1.json"]
    for path, data in zip(paths, shards, strict=True):
        path.write_text(json.dumps(data), "utf-8")
    result = runner.invoke(app, ["replay", "--merge", str(paths[1]), "--merge", str(paths[0]), "--no-store",
                                 "--quiet", "--json", str(tmp_path / "m.json")])  # fmt: skip
    assert result.exit_code == 0, result.output
    merged = json.loads((tmp_path / "m.json").read_text("utf-8"))
    assert merged["replay"]["log"]["measured"] == 16


# ------------------------------------------------------------------------- results read back


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from replay_results import replay_result

    path = replay_result(TARGET, tmp_path_factory.mktemp("replayed"))
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def _inflate(s: dict[str, Any]) -> None:
    s["accepted_tokens"] = 10 * s["drafted_tokens"]


def _rising(s: dict[str, Any]) -> None:
    s["per_position"][1]["cumulative"] = 1.0
    s["per_position"][0]["cumulative"] = 0.1


def _reached(s: dict[str, Any]) -> None:
    s["per_position"][0]["reached"] = s["per_position"][0]["count"] + 5


READ_BACK_LIES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "accepted ten times drafted": (_inflate, "accepted_tokens"),
    "per-position rate that rises": (_rising, "cumulative"),
    "reached above its count": (_reached, "reached"),
    "alpha that is not accepted / drafted": (lambda s: s.update(acceptance_rate=0.999), "acceptance_rate"),
}


@pytest.mark.parametrize("lie", sorted(READ_BACK_LIES))
@pytest.mark.parametrize("part", ["summary", "by_category"])
def test_a_result_whose_figures_do_not_add_up_is_neither_ranked_nor_priced(
    lie: str, part: str, replayed: dict[str, Any], tmp_path: Path
) -> None:
    edit, needle = READ_BACK_LIES[lie]
    data = copy.deepcopy(replayed)
    (c,) = [c for c in data["candidates"] if (c["draft"], c["k"]) == ("suffix", 4)]
    edit(c["summary"] if part == "summary" else next(iter(c["by_category"].values())))
    path = tmp_path / "lie.json"
    path.write_text(json.dumps(data), "utf-8")
    assert_usage_error(runner.invoke(app, ["select", "--from", str(path)]), "--from", needle)
    whatif = tmp_path / "w.json"
    cells = [{"alpha": a, "k": 4, "batch": 1, "e": 0.5 + 2 * a} for a in (0.0, 0.5, 1.0)]
    whatif.write_text(json.dumps({"kind": "whatif", "whatif": {"cells": cells, "batches": [1]}}), "utf-8")
    result = runner.invoke(app, [
        "roi", "--from-whatif", str(whatif), "--alpha-from", str(path), "--candidate", "suffix@4", "--batch",
        "1", "--monthly-tokens", "3B", "--baseline-throughput", "250", "--price-baseline", "4",
        "--price-speculative", "4.4", "--engineering-cost", "40k",
    ])  # fmt: skip
    assert_usage_error(result, "--alpha-from", needle)


def test_an_honest_result_is_still_ranked(replayed: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "honest.json"
    path.write_text(json.dumps(replayed), "utf-8")
    result = runner.invoke(app, ["select", "--from", str(path)])
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------- what a model cannot hold


def _hostile_log(path: Path) -> Path:
    """Four requests any method replays, one longer than the target's context (1024), one whose prompt
    holds an id beyond the vocabulary (2048) while its output ids are fine."""
    fine = {"temperature": 0.0, "model": "target", "prompt_ids": [1, 2, 3], "output_ids": [5, 6, 7, 8, 9] * 4,
            "finish_reason": "length", "max_tokens": 20}  # fmt: skip
    lines = [{**fine, "id": f"ok{i}"} for i in range(4)]
    lines.append({**fine, "id": "long", "output_ids": [5, 6, 7, 8] * 300, "max_tokens": 1200})
    lines.append(
        {**fine, "id": "oov", "prompt_ids": [1, 2, 99_999], "output_ids": [5, 6, 7], "max_tokens": 3}
    )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    return path


@pytest.mark.parametrize("method", ["layers:n=2", "eagle:head", "draft", "ngram"])
def test_what_the_model_cannot_hold_is_set_aside_with_a_reason(method: str, tmp_path: Path) -> None:
    spec = {"eagle:head": f"eagle:head={HEAD}", "draft": str(bundled_model("draft-legal"))}.get(
        method, method
    )
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["replay", "--from", str(_hostile_log(tmp_path / "log.jsonl")), "--target",
                                 str(TARGET), "--method", spec, "--json", str(out), "--no-store",
                                 "--quiet"])  # fmt: skip
    assert result.exit_code == 0, result.output
    log = json.loads(out.read_text("utf-8"))["replay"]["log"]
    reasons = {x["id"]: x["reason"] for x in log["set_aside_listed"]}
    assert "prompt token ids beyond the vocabulary" in reasons["oov"]
    if method == "ngram":  # a model-free method holds any length
        assert log["set_aside"] == {"tokenizer": 1} and log["measured"] == 5
    else:
        assert log["set_aside"] == {"context": 1, "tokenizer": 1} and log["measured"] == 4
        assert "context of 1024" in reasons["long"]


# ------------------------------------------------------------------------------- log lines


def test_a_bad_typed_first_response_is_a_bad_line_and_a_huge_line_is_not_held(tmp_path: Path) -> None:
    fine = {"temperature": 0.0, "model": "target", "prompt_ids": [1, 2, 3], "output_ids": [5, 6, 7, 8, 9] * 4,
            "finish_reason": "length", "max_tokens": 20}  # fmt: skip
    bad = {**fine, "id": "bad", "output": 5, "output_ids": None}
    huge = {**fine, "id": "huge", "output_ids": [5] * 5_000_000}  # 15 MB on one line
    log = tmp_path / "log.jsonl"
    with open(log, "w", encoding="utf-8") as fh:
        for line in (bad, huge, *({**fine, "id": f"ok{i}"} for i in range(3))):
            fh.write(json.dumps(line) + "\n")
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["replay", "--from", str(log), "--target", str(TARGET), "--method", "ngram",
                                 "--json", str(out), "--no-store", "--quiet"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text("utf-8"))["replay"]["log"]
    assert data["measured"] == 3 and data["bad_lines"] == 2
    assert "field 'output': must be text" in data["problems"][0]
    assert "more than 8,388,608" in data["problems"][1]


# --------------------------------------------------------------------------------------- --store


@pytest.mark.parametrize("kind", ["corrupt", "foreign"])
def test_a_store_that_cannot_record_is_refused_before_any_work(kind: str, tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    store.write_bytes(os.urandom(5000) if kind == "corrupt" else b'{"not": "a store"}\n')
    before = store.read_bytes()
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["replay", "--from", str(write_log(tmp_path / "log.jsonl")), "--target",
                                 str(TARGET), "--method", "ngram", "--store", str(store), "--json", str(out),
                                 "--quiet"])  # fmt: skip
    assert_usage_error(result, "--store", str(store))
    assert not out.exists() and store.read_bytes() == before


def test_a_response_beyond_a_drafts_shorter_context_is_set_aside(tmp_path: Path) -> None:
    draft = tmp_path / "short-draft"
    shutil.copytree(bundled_model("draft-legal"), draft)
    config = json.loads((draft / "config.json").read_text("utf-8"))
    config["max_position_embeddings"] = 256  # the target holds 1024
    (draft / "config.json").write_text(json.dumps(config), "utf-8")
    fine = {"temperature": 0.0, "model": "target", "prompt_ids": [1, 2, 3], "output_ids": [5, 6, 7, 8, 9] * 4,
            "finish_reason": "length", "max_tokens": 20}  # fmt: skip
    lines = [{**fine, "id": f"ok{i}"} for i in range(3)]
    lines.append({**fine, "id": "mid", "output_ids": [5, 6, 7, 8] * 100, "max_tokens": 400})
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["replay", "--from", str(log), "--target", str(TARGET), "--method",
                                 str(draft), "--json", str(out), "--no-store", "--quiet"])  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text("utf-8"))["replay"]["log"]
    assert data["set_aside"] == {"context": 1} and data["measured"] == 3
    assert "context of 256" in data["set_aside_listed"][0]["reason"]


def test_a_fifo_in_the_target_directory_is_one_line(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    shutil.copy(TARGET / "config.json", target / "config.json")
    _fifo(target / "tokenizer.json")  # the tokenizer library would block opening it
    result = runner.invoke(app, ["replay", "--from", str(write_log(tmp_path / "log.jsonl")), "--target",
                                 str(target), "--model", "target", "--method", "ngram", "--no-store",
                                 "--quiet"])  # fmt: skip
    assert_usage_error(result, "--target", "tokenizer.json", "FIFO")
