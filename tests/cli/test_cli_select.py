"""``specmeter select``: a tiny ranking end to end, and the --mix / directory mistakes as one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specmeter.cli.app import app

runner = CliRunner()

PROMPTS = [
    {"id": "l1", "category": "legal/nda", "prompt": "The Supplier shall indemnify the Customer"},
    {"id": "l2", "category": "legal/termination", "prompt": "Either party may terminate this Agreement"},
    {"id": "g1", "category": "general/cooking", "prompt": "Preheat the oven, mix the flour"},
    {"id": "g2", "category": "general/travel", "prompt": "She walked to the station"},
]


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    return path


def _select(*args: object):
    return runner.invoke(app, ["select", *map(str, args)])


def test_select_ranks_candidates_for_a_mix(tiny, prompts: Path, tmp_path: Path) -> None:
    out = tmp_path / "select.json"
    result = _select(
        "--target", tiny.target, "--draft", tiny.draft, "--draft", tiny.random_draft, "--prompts", prompts,
        "--k", "1,2", "--mix", "legal=3,general=1", "--max-tokens", 8, "--cost-repeats", 2, "--json", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["kind"] == "select" and data["complete"] is True and len(data["candidates"]) == 4
    s = data["select"]
    assert s["mix"] == {"legal": 0.75, "general": 0.25} and s["mix_source"] == "option"
    assert s["domains"]["legal"]["categories"] == ["legal/nda", "legal/termination"]
    assert s["requests_paired"] == 4
    speeds = [r["speedup_weighted"] for r in s["ranking"]]
    assert speeds == sorted(speeds, reverse=True) and [r["rank"] for r in s["ranking"]] == [1, 2, 3, 4]
    assert {(r["draft"], r["k"]) for r in s["ranking"]} == {
        ("draft", 1), ("draft", 2), ("random_draft", 1), ("random_draft", 2),
    }  # fmt: skip
    assert s["separation"]["first"] == f"{s['ranking'][0]['draft']}@k={s['ranking'][0]['k']}"
    assert set(s["by_domain"]) == {"legal", "general"} and len(s["by_domain"]["legal"]) == 4
    models = data["run"]["models"]["drafts"]
    for name, mem in s["memory"].items():
        assert mem["weight_bytes"] == models[name]["weight_bytes"]
    # the random draft agrees with the target far less often than the layer-skip one
    alpha = {r["draft"]: r["acceptance_rate"] for r in s["ranking"]}
    assert alpha["random_draft"] < alpha["draft"]
    assert s["recommendation"]["lines"] and "Recommendation" in result.output
    # select ends like bench: the run is complete in the store and the command says where it went
    assert "Recorded as run 1 in" in result.output


@pytest.mark.parametrize(
    ("mix", "message"),
    [
        ("legal", "--mix: 'legal' is not CATEGORY=WEIGHT"),
        ("legal=x", "--mix: weight 'x' of 'legal' is not a number"),
        ("legal=0.5,code=0.5", "--mix: 'code' match(es) no category of the workload"),
        ("legalese=1", "--mix: 'legalese' match(es) no category"),
    ],
)
def test_bad_mix_fails_before_loading_models(prompts: Path, tmp_path: Path, mix: str, message: str) -> None:
    # the model directories do not exist: the mix is checked first, so that error never shows
    result = _select(
        "--target", tmp_path / "t", "--draft", tmp_path / "d", "--prompts", prompts, "--mix", mix
    )
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_missing_prompts_and_directories_fail_in_one_line(tiny, prompts: Path, tmp_path: Path) -> None:
    result = _select(
        "--target", tiny.target, "--draft", tiny.draft, "--prompts", tmp_path / "no.jsonl", "--mix", "a=1"
    )
    assert result.exit_code == 2 and "no.jsonl: file not found" in result.stderr
    result = _select("--target", tiny.target, "--draft", tmp_path / "nope", "--prompts", prompts)
    assert result.exit_code == 2 and "nope: no such directory" in result.stderr
    result = _select("--target", tiny.target, "--draft", tiny.draft, "--prompts", prompts, "--k", "two")
    assert result.exit_code == 2 and "--k: 'two' is not a positive integer" in result.stderr
    assert "Traceback" not in result.output
