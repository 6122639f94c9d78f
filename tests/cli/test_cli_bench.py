"""``specmeter bench`` through the CLI: bad input is a one-line error, results land on disk as specified.

Bad inputs must end with exit code 2 and one ``error:`` line naming the file, line or option, never a
traceback. A good run writes the JSON, CSV and JSONL of docs/results.md; an interrupted run (Ctrl-C) exits
with 130 and keeps every request finished before the interruption. Models are the session's tiny
checkpoints and outputs are 8 tokens long, so the whole file runs in well under a minute.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner, Result

from specmeter.cli.app import app
from specmeter.engine.speculative import speculative_decode

# The documented layouts (docs/results.md), spelled out here so a change to the writer cannot go unnoticed.
CSV_COLUMNS = [
    "run",
    "draft",
    "k",
    "id",
    "category",
    "prompt_tokens",
    "output_tokens",
    "latency_ms",
    "ttft_ms",
    "tpot_ms",
    "accepted_tokens",
    "drafted_tokens",
    "steps",
    "finish_reason",
    "matches_baseline",
    "error",
]
LOG_FIELDS = {
    "run",
    "draft",
    "k",
    "id",
    "category",
    "output_tokens",
    "latency_ms",
    "accepted_tokens",
    "drafted_tokens",
    "steps",
    "ttft_ms",
    "matches_baseline",
    "error",
}
SUMMARY_KEYS = {
    "requests",
    "steps",
    "drafted_tokens",
    "accepted_tokens",
    "emitted_tokens",
    "acceptance_rate",
    "acceptance_rate_ci",
    "beta",
    "acceptance_length",
    "per_position",
    "cost_ratio",
    "speedup_measured",
    "speedup_seed",
    "speedup_leviathan",
    "speedup_calibrated",
    "ttft_ms",
    "tpot_ms",
    "gap_ms",
    "jitter",
    "stalls",
    "tokens_per_s",
    "weight_bytes",
    "kv_bytes_per_token",
    "extra_memory_bytes",
    "weight_traffic_per_token",
    "danger_zone",
    "danger_reasons",
}
PROMPTS: list[dict[str, Any]] = [
    {"id": "legal-1", "category": "legal", "prompt": "The Supplier shall indemnify the Customer against"},
    {"id": "general-1", "category": "general", "prompt": "The children played in the garden until"},
    {"id": "general-2", "category": "general", "prompt": "To reset the device, hold the power button"},
]
FAST = ["--max-tokens", "8", "--cost-repeats", "2"]

runner = CliRunner()


def write_prompts(path: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in (PROMPTS if rows is None else rows)))
    return path


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def bench(tiny: Any, prompts: Path, *extra: str | Path, draft: Path | None = None) -> Result:
    return invoke(
        "bench", "--target", tiny.target, "--draft", draft or tiny.draft, "--prompts", prompts, *FAST, *extra
    )


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ------------------------------------------------------------------------------------------ bad inputs


def test_missing_target_dir(tiny: Any, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    result = invoke(
        "bench", "--target", missing, "--draft", tiny.draft, "--prompts", write_prompts(tmp_path / "p.jsonl")
    )
    assert_usage_error(result, str(missing), "no such directory")


def test_target_dir_without_config(tiny: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty-model"
    empty.mkdir()
    result = invoke(
        "bench", "--target", empty, "--draft", tiny.draft, "--prompts", write_prompts(tmp_path / "p.jsonl")
    )
    assert_usage_error(result, str(empty / "config.json"), "missing")


def test_unreadable_config(tiny: Any, tmp_path: Path) -> None:
    broken = tmp_path / "broken-model"
    shutil.copytree(tiny.target, broken)
    (broken / "config.json").write_text("{ this is not json")
    result = invoke(
        "bench", "--target", broken, "--draft", tiny.draft, "--prompts", write_prompts(tmp_path / "p.jsonl")
    )
    assert_usage_error(result, str(broken / "config.json"), "unreadable config")


def test_draft_without_tokenizer(tiny: Any, tmp_path: Path) -> None:
    bare = tmp_path / "bare-draft"
    bare.mkdir()
    for f in Path(tiny.draft).iterdir():
        if f.name == "config.json" or f.suffix == ".safetensors":
            shutil.copy(f, bare / f.name)
    result = bench(tiny, write_prompts(tmp_path / "p.jsonl"), draft=bare)
    assert_usage_error(result, str(bare), "no tokenizer")


def test_draft_with_another_tokenizer(tiny: Any, tmp_path: Path) -> None:
    result = bench(tiny, write_prompts(tmp_path / "p.jsonl"), draft=tiny.other_tokenizer_draft)
    assert_usage_error(result, str(tiny.other_tokenizer_draft), "tokenizer differs")


def test_prompts_file_missing(tiny: Any, tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    assert_usage_error(bench(tiny, missing), f"{missing}: file not found")


def test_prompts_file_empty(tiny: Any, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    assert_usage_error(bench(tiny, empty), str(empty), "empty file")


def test_prompts_bad_json_line(tiny: Any, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(PROMPTS[0]) + "\n{oops\n" + json.dumps(PROMPTS[1]) + "\n")
    assert_usage_error(bench(tiny, path), f"{path}:2:", "invalid JSON")


def test_prompts_duplicate_id(tiny: Any, tmp_path: Path) -> None:
    path = write_prompts(tmp_path / "dup.jsonl", [PROMPTS[0], PROMPTS[1], {**PROMPTS[2], "id": "legal-1"}])
    assert_usage_error(bench(tiny, path), f"{path}:3:", "duplicate id 'legal-1'", "line 1")


def test_prompt_too_long_for_context(tiny: Any, tmp_path: Path) -> None:
    long_text = " ".join(["The Supplier shall indemnify the Customer"] * 300)
    assert len(tiny.tokenizer(long_text)["input_ids"]) > 1024  # the tiny target's context
    path = write_prompts(tmp_path / "long.jsonl", [PROMPTS[0], {"id": "huge", "prompt": long_text}])
    assert_usage_error(bench(tiny, path), f"{path}:2:", "'huge'", "the target has 1024")


@pytest.mark.parametrize(
    ("option", "needles"),
    [
        (["--k", "0"], ["--k", "'0'"]),
        (["--k", "a,b"], ["--k", "'a,b'"]),
        (["--temperature=-0.5"], ["--temperature", "temperature must be >= 0"]),
        (["--top-p", "0"], ["--top-p", "top_p must be in (0, 1]"]),
        (["--max-tokens", "0"], ["--max-tokens"]),
        (["--limit", "0"], ["--limit"]),
        (["--implementation", "magic"], ["--implementation", "'magic'"]),
    ],
    ids=[
        "k-zero",
        "k-not-int",
        "negative-temperature",
        "top-p-zero",
        "max-tokens-zero",
        "limit-zero",
        "impl",
    ],
)
def test_bad_option(tiny: Any, tmp_path: Path, option: list[str], needles: list[str]) -> None:
    # Options after FAST win, so "--max-tokens 0" here overrides FAST's 8.
    assert_usage_error(bench(tiny, write_prompts(tmp_path / "p.jsonl"), *option), *needles)


def test_output_over_the_golden_set_is_refused(tiny: Any, tmp_path: Path) -> None:
    prompts = write_prompts(tmp_path / "p.jsonl")
    before = prompts.read_bytes()
    assert_usage_error(bench(tiny, prompts, "--csv", prompts), "--csv", "is --prompts", "never overwrites")
    assert prompts.read_bytes() == before


def test_two_outputs_on_one_file_are_refused(tiny: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = bench(tiny, write_prompts(tmp_path / "p.jsonl"), "--json", out, "--log", out)
    assert_usage_error(result, "--log", "is also --json")
    assert not out.exists()


# ------------------------------------------------------------------------------------------ happy path


@pytest.fixture(scope="module")
def greedy_run(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, dict[str, Path]]:
    out = tmp_path_factory.mktemp("bench")
    paths = {"json": out / "result.json", "csv": out / "requests.csv", "log": out / "requests.jsonl"}
    prompts = write_prompts(out / "golden.jsonl")
    # Module-scoped, so it runs before the function-scoped private_run_store: keep its store private too.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPECMETER_STORE", str(out / "runs.sqlite"))
        result = bench(
            tiny, prompts, "--k", "1,3", "--json", paths["json"], "--csv", paths["csv"], "--log", paths["log"]
        )
    return result, paths


def test_greedy_run_exits_cleanly(greedy_run: tuple[Result, dict[str, Path]]) -> None:
    result, _ = greedy_run
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "Verdict:" in result.stdout
    assert "draft @ k=1" in result.stdout and "draft @ k=3" in result.stdout


def test_greedy_run_json(tiny: Any, greedy_run: tuple[Result, dict[str, Path]]) -> None:
    _, paths = greedy_run
    data = json.loads(paths["json"].read_text())
    assert data["schema_version"] == 1
    assert data["kind"] == "bench"
    assert data["complete"] is True
    config = data["run"]["config"]
    assert config["target"] == str(tiny.target)
    assert config["drafts"] == [str(tiny.draft)]
    assert config["k"] == [1, 3]
    assert config["max_tokens"] == 8
    assert config["temperature"] == 0.0
    assert {"environment", "started_at", "models"} <= data["run"].keys()
    baseline = data["baseline"]["summary"]
    assert baseline.keys() >= SUMMARY_KEYS
    assert baseline["requests"] == 3
    assert baseline["acceptance_rate"] is None and baseline["drafted_tokens"] == 0
    assert [(c["draft"], c["k"]) for c in data["candidates"]] == [("draft", 1), ("draft", 3)]
    for cand in data["candidates"]:
        s = cand["summary"]
        assert s.keys() >= SUMMARY_KEYS
        assert s["requests"] == 3
        assert s["emitted_tokens"] == baseline["emitted_tokens"]  # greedy: same outputs
        assert 0 <= s["accepted_tokens"] <= s["drafted_tokens"]
        assert len(s["per_position"]) == cand["k"]
        assert set(cand["by_category"]) == {"legal", "general"}
        assert cand["by_category"]["legal"]["requests"] == 1
        assert cand["by_category"]["general"]["requests"] == 2


def test_greedy_run_csv(greedy_run: tuple[Result, dict[str, Path]]) -> None:
    _, paths = greedy_run
    columns, rows = read_csv(paths["csv"])
    assert columns == CSV_COLUMNS
    assert len(rows) == len(PROMPTS) * 3  # baseline + (draft, 1) + (draft, 3)
    assert sorted({r["run"] for r in rows}) == ["baseline", "draft@k=1", "draft@k=3"]
    for prompt in PROMPTS:
        mine = [r for r in rows if r["id"] == prompt["id"]]
        assert len(mine) == 3
        assert {r["category"] for r in mine} == {prompt["category"]}
        # Greedy speculative decoding is lossless: the same tokens, so the same count, and flagged so.
        assert len({r["output_tokens"] for r in mine}) == 1
    for row in rows:
        assert 1 <= int(row["output_tokens"]) <= 8
        if row["run"] == "baseline":
            assert (row["draft"], row["k"], row["drafted_tokens"], row["matches_baseline"]) == (
                "",
                "0",
                "0",
                "",
            )
        else:
            assert row["matches_baseline"] == "true"
            assert 0 <= int(row["accepted_tokens"]) <= int(row["drafted_tokens"])


def test_greedy_run_csv_agrees_with_json(greedy_run: tuple[Result, dict[str, Path]]) -> None:
    _, paths = greedy_run
    data = json.loads(paths["json"].read_text())
    _, rows = read_csv(paths["csv"])
    for cand in data["candidates"]:
        mine = [r for r in rows if r["run"] == f"{cand['draft']}@k={cand['k']}"]
        for key in ("accepted_tokens", "drafted_tokens", "steps"):
            assert sum(int(r[key]) for r in mine) == cand["summary"][key], key


def test_greedy_run_log(greedy_run: tuple[Result, dict[str, Path]]) -> None:
    _, paths = greedy_run
    lines = read_jsonl(paths["log"])
    assert len(lines) == len(PROMPTS) * 3
    for line in lines:
        assert set(line) == LOG_FIELDS
        assert line["matches_baseline"] is (None if line["run"] == "baseline" else True)


def test_limit(tiny: Any, tmp_path: Path) -> None:
    csv_path, json_path = tmp_path / "r.csv", tmp_path / "r.json"
    result = bench(
        tiny, write_prompts(tmp_path / "p.jsonl"), "--k", "2", "--limit", "2", "--quiet",
        "--csv", csv_path, "--json", json_path,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    _, rows = read_csv(csv_path)
    assert len(rows) == 2 * 2
    assert {r["id"] for r in rows} == {"legal-1", "general-1"}
    data = json.loads(json_path.read_text())
    assert data["run"]["config"]["limit"] == 2
    assert data["baseline"]["summary"]["requests"] == 2


def test_two_drafts(tiny: Any, tmp_path: Path) -> None:
    csv_path, json_path = tmp_path / "r.csv", tmp_path / "r.json"
    result = invoke(
        "bench", "--target", tiny.target, "--draft", tiny.draft, "--draft", tiny.random_draft,
        "--prompts", write_prompts(tmp_path / "p.jsonl"), *FAST, "--k", "2", "--quiet",
        "--csv", csv_path, "--json", json_path,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(json_path.read_text())
    assert [(c["draft"], c["k"]) for c in data["candidates"]] == [("draft", 2), ("random_draft", 2)]
    assert set(data["run"]["models"]["drafts"]) == {"draft", "random_draft"}
    alpha = {c["draft"]: c["summary"]["acceptance_rate"] for c in data["candidates"]}
    # The layer-skip draft shares most of the target; the independent random one shares nothing.
    assert alpha["random_draft"] < alpha["draft"]
    _, rows = read_csv(csv_path)
    assert len(rows) == len(PROMPTS) * 3
    assert all(r["matches_baseline"] == "true" for r in rows if r["run"] != "baseline")


def test_sampling_is_reproducible(tiny: Any, tmp_path: Path) -> None:
    def run(name: str) -> list[tuple[str, ...]]:
        csv_path = tmp_path / f"{name}.csv"
        result = bench(
            tiny, write_prompts(tmp_path / "p.jsonl"), "--k", "2", "--temperature", "0.8", "--seed", "3",
            "--quiet", "--csv", csv_path,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        _, rows = read_csv(csv_path)
        assert all(r["matches_baseline"] == "" for r in rows)  # no token-level claim under sampling
        keys = ("run", "id", "output_tokens", "accepted_tokens", "drafted_tokens", "steps", "finish_reason")
        return [tuple(r[key] for key in keys) for r in rows]

    first, second = run("first"), run("second")
    assert len(first) == len(PROMPTS) * 2
    assert first == second


def test_ctrl_c_keeps_finished_prompts(tiny: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    slots = 2  # baseline + (draft, k=2)
    # Warm-up decodes each slot once, then every prompt decodes each slot once: interrupt the first
    # decode of the third prompt, after two prompts have finished.
    interrupt_at = slots + 2 * slots + 1

    def flaky(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == interrupt_at:
            raise KeyboardInterrupt
        return speculative_decode(*args, **kwargs)

    # The runner imported the function by name, so patch its reference, which every decode goes through.
    monkeypatch.setattr("specmeter.engine.runner.speculative_decode", flaky)
    paths = {"json": tmp_path / "r.json", "csv": tmp_path / "r.csv", "log": tmp_path / "r.jsonl"}
    result = bench(
        tiny, write_prompts(tmp_path / "p.jsonl"), "--k", "2",
        "--json", paths["json"], "--csv", paths["csv"], "--log", paths["log"],
    )  # fmt: skip
    assert calls == interrupt_at
    assert result.exit_code == 130, result.output
    assert "Traceback" not in result.output
    assert "Interrupted after 2 of 3 prompts" in result.stdout
    data = json.loads(paths["json"].read_text())
    assert data["complete"] is False
    assert data["baseline"]["summary"]["requests"] == 2
    assert [c["summary"]["requests"] for c in data["candidates"]] == [2]
    _, rows = read_csv(paths["csv"])
    assert sorted((r["run"], r["id"]) for r in rows) == sorted(
        (run, pid) for run in ("baseline", "draft@k=2") for pid in ("legal-1", "general-1")
    )
    assert sorted((x["run"], x["id"]) for x in read_jsonl(paths["log"])) == sorted(
        (r["run"], r["id"]) for r in rows
    )
