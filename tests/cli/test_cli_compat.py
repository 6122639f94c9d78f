"""``specmeter compat``: exit 0/1/2 for the verdict, 3 when the check cannot be made; --json, --prompts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.workloads import bundled_prompts

runner = CliRunner()


def _compat(*args: object):
    return runner.invoke(app, ["compat", *map(str, args)])


def test_layer_skip_draft_is_compatible(tiny, tmp_path: Path) -> None:
    out = tmp_path / "compat.json"
    result = _compat(tiny.target, tiny.draft, "--prompts", bundled_prompts("smoke"), "--json", out)
    assert result.exit_code == 0, result.output
    assert "Verdict: COMPATIBLE (exit 0)" in result.output
    data = json.loads(out.read_text())
    assert data["kind"] == "compat" and data["verdict"] == "compatible" and data["exit_code"] == 0
    assert data["vocabulary"]["identical"] is True
    assert data["prompts"]["texts"] == 24 and data["prompts"]["share_identical"] == 1.0
    assert data["draft"]["params"] < data["target"]["params"]


def test_other_tokenizer_is_incompatible(tiny) -> None:
    result = _compat(tiny.target, tiny.other_tokenizer_draft, "--quiet")
    assert result.exit_code == 2
    assert result.output == ""  # --quiet: the exit code says it all


def test_other_normalizer_is_usable_with_caveats(tiny, tmp_path: Path) -> None:
    draft = Path(shutil.copytree(tiny.draft, tmp_path / "draft"))
    data = json.loads((draft / "tokenizer.json").read_text())
    data["normalizer"] = {"type": "Lowercase"}
    (draft / "tokenizer.json").write_text(json.dumps(data))
    result = _compat(tiny.target, draft)
    assert result.exit_code == 1, result.output
    assert "USABLE WITH CAVEATS" in result.output and "Lowercase" in result.output


def test_missing_directory_cannot_be_checked(tiny, tmp_path: Path) -> None:
    result = _compat(tiny.target, tmp_path / "nope")
    assert result.exit_code == 3
    assert "nope: no such directory" in result.stderr and "Traceback" not in result.output


def test_no_tokenizer_cannot_be_checked(tiny, tmp_path: Path) -> None:
    draft = tmp_path / "draft"
    draft.mkdir()
    shutil.copy(tiny.draft / "config.json", draft / "config.json")
    result = _compat(tiny.target, draft)
    assert result.exit_code == 3
    assert "no tokenizer (expected tokenizer.json)" in result.stderr


def test_unreadable_config_cannot_be_checked(tiny, tmp_path: Path) -> None:
    draft = Path(shutil.copytree(tiny.draft, tmp_path / "draft"))
    (draft / "config.json").write_text('{"model_type": "llama",')
    result = _compat(tiny.target, draft)
    assert result.exit_code == 3
    assert "config.json: unreadable config" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unreadable_tokenizer_and_prompts_cannot_be_checked(tiny, tmp_path: Path) -> None:
    draft = Path(shutil.copytree(tiny.draft, tmp_path / "draft"))
    (draft / "tokenizer.json").write_text("{}")
    result = _compat(tiny.target, draft)
    assert result.exit_code == 3 and "tokenizer.json: unreadable tokenizer" in result.stderr
    prompts = tmp_path / "bad.jsonl"
    prompts.write_text('{"id": 1}\n')
    result = _compat(tiny.target, tiny.draft, "--prompts", prompts)
    assert result.exit_code == 3 and "bad.jsonl:1: field 'prompt': missing" in result.stderr


def test_truncated_weights_cannot_be_checked(tiny, tmp_path: Path) -> None:
    # Issue 12: a draft whose safetensors file was cut short was COMPATIBLE (bench and serve refused it).
    draft = Path(shutil.copytree(tiny.draft, tmp_path / "draft"))
    weights = draft / "model.safetensors"
    size = weights.stat().st_size
    with weights.open("r+b") as fh:
        fh.truncate(size - 1000)
    result = _compat(tiny.target, draft)
    assert result.exit_code == 3, result.output
    assert result.stderr.strip().splitlines() == [
        f"error: {weights}: truncated safetensors file ({size - 1000:,} bytes; its header describes {size:,})"
    ]
