"""Method specs wherever a draft is named (issue 26, item 4): bench, select, tune, serve, compat, the store,
the JSON, CSV and HTML, and one ``error:`` line (exit 2) for a bad spec in every command.

Greedy speculation with any method must reproduce the target's own output, so every record of a method run
``matches_baseline``; the result names each candidate's method with its keys and flags; a model-free
method adds no memory and ``layers:n`` adds n/L of the target's KV cache and no weights.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_usage_error
from typer.testing import CliRunner, Result

from specmeter.cli.app import app

runner = CliRunner()

# Prompts that repeat themselves, so the model-free lookups find something to copy.
PROMPTS: list[dict[str, Any]] = [
    {
        "id": "legal-1",
        "category": "legal/redline",
        "prompt": "The Supplier shall indemnify the Customer. The Supplier shall indemnify the Customer. "
        "The Supplier shall",
    },
    {
        "id": "general-1",
        "category": "general/home",
        "prompt": "To reset the device, hold the power button. To reset the device, hold the",
    },
    {"id": "general-2", "category": "general/home", "prompt": "The children played in the garden until"},
]
FAST = ["--max-tokens", "12", "--cost-repeats", "1"]


def write_prompts(path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in PROMPTS))
    return path


def invoke(*args: str | Path, columns: int = 200) -> Result:
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": str(columns)})


@pytest.fixture(scope="module")
def bench_run(tiny: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One bench over three methods and the layer-skip draft (k = 3), recorded to JSON, CSV and a store."""
    root = tmp_path_factory.mktemp("methods")
    out = {"json": root / "r.json", "csv": root / "r.csv", "store": root / "runs.sqlite", "root": root}
    result = invoke(
        "bench", "--target", tiny.target, "--prompts", write_prompts(root / "p.jsonl"),
        "--draft", "ngram:max=3,min=2", "--draft", "suffix", "--draft", "layers:n=2", "--draft", tiny.draft,
        "--k", "3", "--max-tokens", "24", "--cost-repeats", "1",
        "--json", out["json"], "--csv", out["csv"], "--store", out["store"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return {**out, "output": result.output, "data": json.loads(out["json"].read_text())}


def test_bench_runs_methods_and_every_greedy_output_is_the_targets(bench_run: dict[str, Any]) -> None:
    data = bench_run["data"]
    assert data["complete"] is True
    labels = [c["draft"] for c in data["candidates"]]
    assert labels == ["ngram:min=2,max=3", "suffix", "layers:n=2", "draft"]  # normalised, in the order given
    assert data["run"]["config"]["drafts"][:3] == ["ngram:min=2,max=3", "suffix", "layers:n=2"]
    with bench_run["csv"].open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for label in labels:
        mine = [r for r in rows if r["run"] == f"{label}@k=3"]
        assert len(mine) == len(PROMPTS) and {r["draft"] for r in mine} == {label}
        assert all(r["matches_baseline"] == "true" for r in mine), mine
    for c in data["candidates"]:
        assert c["summary"]["requests"] == len(PROMPTS)
    # The tiny target falls into a loop within 24 tokens: the n-gram lookup drafts it, the target accepts.
    ngram = data["candidates"][0]["summary"]
    assert ngram["drafted_tokens"] > 0 and ngram["accepted_tokens"] > 0


def test_bench_json_names_each_method_with_its_keys_and_flags(bench_run: dict[str, Any]) -> None:
    methods = {c["draft"]: c["method"] for c in bench_run["data"]["candidates"]}
    assert methods["ngram:min=2,max=3"] == {
        "name": "ngram", "label": "ngram:min=2,max=3", "keys": {"min": 2, "max": 3},
        "deterministic": True, "model_free": True,
    }  # fmt: skip
    assert methods["suffix"]["name"] == "suffix" and methods["suffix"]["keys"]["depth"] == 24
    assert methods["suffix"]["model_free"] is True
    assert methods["layers:n=2"] == {
        "name": "layers", "label": "layers:n=2", "keys": {"n": 2}, "deterministic": False,
        "model_free": False,
    }  # fmt: skip
    assert methods["draft"]["name"] == "draft_model" and methods["draft"]["model_free"] is False
    models = bench_run["data"]["run"]["models"]["drafts"]
    assert models["ngram:min=2,max=3"]["method"] == "ngram:min=2,max=3"
    assert models["draft"]["method"] is None


def test_bench_extra_memory_is_honest_per_method(bench_run: dict[str, Any]) -> None:
    data = bench_run["data"]
    s = {c["draft"]: c["summary"] for c in data["candidates"]}
    target = data["run"]["models"]["target"]
    assert s["ngram:min=2,max=3"]["extra_memory_bytes"] == 0
    assert s["suffix"]["extra_memory_bytes"] == 0
    assert s["ngram:min=2,max=3"]["cost_curve"]["draft_ms"] == 0  # no forward to time
    layers = data["run"]["models"]["drafts"]["layers:n=2"]
    assert layers["extra_weight_bytes"] == 0 and layers["num_layers"] == 2
    assert layers["kv_bytes_per_token"] == target["kv_bytes_per_token"] * 2 // target["num_layers"]
    context = max(r["prompt_tokens"] + r["output_tokens"] for r in _csv_rows(bench_run, "layers:n=2@k=3"))
    assert s["layers:n=2"]["extra_memory_bytes"] == layers["kv_bytes_per_token"] * context
    assert s["layers:n=2"]["cost_curve"]["draft_ms"] > 0  # its forwards are timed
    draft = data["run"]["models"]["drafts"]["draft"]
    assert s["draft"]["extra_memory_bytes"] >= draft["weight_bytes"] > 0


def _csv_rows(bench_run: dict[str, Any], run: str) -> list[dict[str, int]]:
    with bench_run["csv"].open(newline="", encoding="utf-8") as fh:
        return [
            {"prompt_tokens": int(r["prompt_tokens"]), "output_tokens": int(r["output_tokens"])}
            for r in csv.DictReader(fh)
            if r["run"] == run
        ]


def test_bench_table_html_and_store_carry_the_method(bench_run: dict[str, Any], tmp_path: Path) -> None:
    assert "│ method" in bench_run["output"] and "ngram:min=2,max=3 (model-free," in bench_run["output"]
    html_path = tmp_path / "r.html"
    made = invoke("report", bench_run["json"], "--out", html_path)
    assert made.exit_code == 0, made.output
    html = html_path.read_text()
    assert "<th>method</th>" in html and "ngram:min=2,max=3 (model-free, deterministic)" in html
    assert "layers:n=2" in html and "draft_model" in html
    store = ["--store", str(bench_run["store"])]
    listed = invoke("runs", "list", "--json", *store)
    assert listed.exit_code == 0, listed.output
    (row,) = json.loads(listed.output)
    assert row["label"].endswith("← ngram:min=2,max=3, suffix, layers:n=2, draft")
    shown = invoke("runs", "show", "latest", *store)
    assert shown.exit_code == 0 and "suffix (model-free," in shown.output


@pytest.mark.parametrize(
    ("spec", "needles"),
    [
        ("ngram:min=5,max=3", ["--draft: ngram: key 'min' (5) must be <= key 'max' (3)"]),
        ("suffix:dept=3", ["--draft: suffix: unknown key 'dept'"]),
        ("layers:n=x", ["--draft: layers: key 'n' must be an integer"]),
        ("eagle", ["--draft: eagle: key 'head' is required"]),
        ("medusa:heads=3", ["--draft: medusa: unknown method"]),
    ],
)
def test_a_bad_spec_is_one_line_and_exit_2_in_every_command(
    tiny: Any, tmp_path: Path, spec: str, needles: list[str]
) -> None:
    prompts = write_prompts(tmp_path / "p.jsonl")
    common = ["--target", tiny.target, "--prompts", prompts, "--draft", spec]
    for command in (["bench"], ["select"], ["tune"], ["whatif"]):
        assert_usage_error(invoke(*command, *common), *needles)
    assert_usage_error(invoke("serve", "--target", tiny.target, "--draft", spec), *needles)


def test_spec_mistakes_that_only_the_command_knows(tiny: Any, tmp_path: Path) -> None:
    prompts = write_prompts(tmp_path / "p.jsonl")
    common = ["--target", tiny.target, "--prompts", prompts]
    twice = invoke("bench", *common, "--draft", "ngram:min=2", "--draft", "ngram:min=2,max=2")
    assert_usage_error(twice, "--draft: ngram:min=2,max=2 is given twice")
    vllm = invoke("bench", *common, "--draft", "suffix", "--backend", "vllm")
    assert_usage_error(vllm, "--draft suffix: method specs run on the native engine")
    whatif = invoke("whatif", *common, "--draft", "ngram")
    assert_usage_error(whatif, "--draft ngram:min=5,max=5: a model-free method")
    deep = invoke("bench", *common, "--draft", "layers:n=9", *FAST, "--no-store")
    assert_usage_error(deep, "--draft layers:n=9: layers: key 'n' must be in 1 … 5")


def test_compat_has_nothing_to_compare_for_a_method(tiny: Any) -> None:
    result = invoke("compat", tiny.target, "suffix")
    assert result.exit_code == 0, result.output
    assert "suffix: a method, not a draft model" in result.output
    assert_usage_error(invoke("compat", tiny.target, "suffix:depth=0"), "DRAFT: suffix: key 'depth'")


def test_select_ranks_a_method_against_a_draft_directory(tiny: Any, tmp_path: Path) -> None:
    out = tmp_path / "select.json"
    result = invoke(
        "select", "--target", tiny.target, "--prompts", write_prompts(tmp_path / "p.jsonl"),
        "--draft", "ngram:min=2,max=3", "--draft", tiny.draft, "--k", "2", *FAST, "--json", out, "--no-store",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    s = json.loads(out.read_text())["select"]
    assert {(r["draft"], r["k"]) for r in s["ranking"]} == {("ngram:min=2,max=3", 2), ("draft", 2)}
    assert s["memory"]["ngram:min=2,max=3"]["method"] == "ngram:min=2,max=3"
    assert s["memory"]["ngram:min=2,max=3"]["extra_memory_bytes"] == 0
    assert s["memory"]["draft"]["method"] == "draft_model"
    assert s["memory"]["draft"]["extra_memory_bytes"] > 0
    assert "memory per draft" in result.output and "draft_model" in result.output


@pytest.mark.slow  # 5 s or more: make test-slow (the default suite stays under 3 minutes)
def test_tune_and_batched_bench_take_a_method(tiny: Any, tmp_path: Path) -> None:
    prompts = write_prompts(tmp_path / "p.jsonl")
    out = tmp_path / "tune.json"
    tuned = invoke(
        "tune", "--target", tiny.target, "--prompts", prompts, "--draft", "suffix", "--k-max", "2",
        "--holdout", "0", *FAST, "--json", out, "--no-store", "--quiet",
    )  # fmt: skip
    assert tuned.exit_code == 0, tuned.output
    data = json.loads(out.read_text())
    assert [c["draft"] for c in data["candidates"]] == ["suffix", "suffix"]
    assert data["tune"]["cost_curve"]["draft_ms"] == 0
    batched = tmp_path / "batch.json"
    result = invoke(
        "bench", "--target", tiny.target, "--prompts", prompts, "--draft", "ngram:min=2,max=3",
        "--draft", "suffix", "--k", "2", "--batch", "2", *FAST, "--json", batched, "--no-store", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for c in json.loads(batched.read_text())["candidates"]:
        assert c["method"]["model_free"] is True and c["summary"]["requests"] == len(PROMPTS)


def test_whatif_times_self_speculation_and_plan_takes_a_model_free_method(tiny: Any, tmp_path: Path) -> None:
    out = tmp_path / "whatif.json"
    result = invoke(
        "whatif", "--target", tiny.target, "--prompts", write_prompts(tmp_path / "p.jsonl"),
        "--draft", "layers:n=2", "--alpha", "0.5", "--k", "2", "--limit", "2", "--max-tokens", "6",
        "--cost-repeats", "1", "--json", out, "--no-store", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    draft = json.loads(out.read_text())["whatif"]["draft"]
    assert draft["name"] == "layers:n=2" and draft["method"] == "layers:n=2"
    assert draft["extra_weight_bytes"] == 0 and draft["kv_bytes_per_token"] > 0
    plain = invoke("plan", "--target", tiny.target, "--dtype", "bf16", "--json", tmp_path / "a.json")
    ngram = invoke(
        "plan", "--target", tiny.target, "--draft", "ngram", "--dtype", "bf16", "--json", tmp_path / "b.json"
    )
    assert plain.exit_code == 0 and ngram.exit_code == 0, ngram.output
    assert "adds no accelerator memory" in ngram.stderr
    assert json.loads((tmp_path / "a.json").read_text()) == json.loads((tmp_path / "b.json").read_text())
    assert_usage_error(
        invoke("plan", "--target", tiny.target, "--draft", "ngram:n=2"), "--draft: ngram: unknown key 'n'"
    )
    assert_usage_error(
        invoke("plan", "--target", tiny.target, "--draft", "layers"), "--draft layers:n=2: plan sizes"
    )


def test_compare_pairs_a_method_across_two_stored_runs(bench_run: dict[str, Any], tiny: Any) -> None:
    """The same methods benched again into the same store: compare pairs them by label and k, and greedy
    decoding makes the acceptance identical."""
    again = invoke(
        "bench", "--target", tiny.target, "--prompts", bench_run["root"] / "p.jsonl",
        "--draft", "ngram:min=2,max=3", "--draft", "suffix", "--k", "3", "--max-tokens", "24",
        "--cost-repeats", "1", "--store", bench_run["store"], "--quiet",
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    out = bench_run["root"] / "cmp.json"
    res = invoke(
        "compare", "1", "2", "--store", bench_run["store"], "--resamples", "200", "--fail-on", "alpha=0.05",
        "--json", out,
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    blocks = {b["candidate"] for b in json.loads(out.read_text())["blocks"]}
    assert {"ngram:min=2,max=3@k=3", "suffix@k=3"} <= blocks
