"""specmeter plan: fit per weight format from config.json files, JSON output, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from specmeter.cli.app import app

runner = CliRunner()
LLAMA_8B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}  # fmt: skip
LLAMA_1B = {**LLAMA_8B, "hidden_size": 2048, "num_hidden_layers": 16, "intermediate_size": 8192,
            "tie_word_embeddings": True, "head_dim": 64}  # fmt: skip


def model(tmp_path: Path, name: str, config: dict[str, Any]) -> Path:
    (tmp_path / name).mkdir()
    (tmp_path / name / "config.json").write_text(json.dumps(config))
    return tmp_path / name


def test_plan_8b_with_a_1b_draft(tmp_path: Path) -> None:
    target, draft = model(tmp_path, "llama-8b", LLAMA_8B), model(tmp_path, "llama-1b", LLAMA_1B)
    out = tmp_path / "plan.json"
    res = runner.invoke(app, ["plan", "--target", str(target), "--draft", str(draft), "--context", "8192",
                              "--json", str(out)], env={"COLUMNS": "220"})  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "8.03B params" in res.output and "1.24B params" in res.output
    rows = {r["weight_format"]: r for r in json.loads(out.read_text())["rows"]}
    assert list(rows) == ["fp32", "bf16", "fp8", "nvfp4", "int4"]
    # bf16: 16.1 GB + 2.5 GB of weights + 1.25 GiB of KV: too much for 16 GB, fits a 24 GB card.
    assert rows["bf16"]["spec_fit"]["memory_gib"] == 24 and rows["bf16"]["baseline_fit"]["memory_gib"] == 24
    assert rows["fp8"]["spec_fit"]["memory_gib"] == 16
    assert rows["bf16"]["spec_bytes"] - rows["bf16"]["baseline_bytes"] == rows["bf16"]["extra_bytes"]
    assert rows["nvfp4"]["kv_format"] == "fp8"
    assert rows["fp32"]["spec_fit"]["kv_headroom_tokens"] > 8192


def test_plan_reads_real_checkpoint_dirs(tiny: Any) -> None:
    args = ["plan", "--target", str(tiny.target), "--draft", str(tiny.draft), "--dtype", "bf16",
            "--context", "256", "--batch", "4", "--tp", "2"]  # fmt: skip
    res = runner.invoke(app, args, env={"COLUMNS": "220"})
    assert res.exit_code == 0, res.output
    assert "2× NVIDIA T4" in res.output


def test_plan_errors_are_one_line(tmp_path: Path) -> None:
    target = model(tmp_path, "t", LLAMA_8B)
    broken = model(tmp_path, "b", {"model_type": "llama", "hidden_size": 64})
    for args, message in [
        (["--dtype", "fp12"], "--dtype: 'fp12' is not one of"),
        (["--kv-dtype", "int2"], "--kv-dtype"),
        (["--context", "0"], "--context must be >= 1"),
        (["--utilization", "1.5"], "--utilization"),
        (["--draft", str(broken)], "missing field 'num_hidden_layers'"),
        (["--draft", str(tmp_path / "nowhere")], "nowhere: no such directory"),
    ]:
        res = runner.invoke(app, ["plan", "--target", str(target), *args])
        assert res.exit_code == 2, (args, res.output)
        assert message in res.output and "Traceback" not in res.output


QWEN3_30B_A3B = {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
                 "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
                 "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
                 "vocab_size": 151936, "tie_word_embeddings": False}  # fmt: skip
QWEN3_06B = {"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
             "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
             "tie_word_embeddings": True}  # fmt: skip


def test_plan_moe_target_prints_active_parameters_and_weight_traffic(tmp_path: Path) -> None:
    target, draft = model(tmp_path, "qwen3-30b-a3b", QWEN3_30B_A3B), model(tmp_path, "qwen3-0.6b", QWEN3_06B)
    out = tmp_path / "plan.json"
    res = runner.invoke(app, ["plan", "--target", str(target), "--draft", str(draft), "--dtype", "bf16,fp8",
                              "--k", "3", "--json", str(out)], env={"COLUMNS": "220"})  # fmt: skip
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "30.53B params, 3.04B active per token (10.0%: 8 of 128 experts on 48/48 MoE layers)" in text
    assert "weight traffic per forward (k = 3)" in text and "verify 4 tokens" in text
    assert "judge the draft against the active parameters" in text
    flows = {f["weight_format"]: f for f in json.loads(out.read_text())["traffic"]}
    assert list(flows) == ["bf16", "fp8"]
    bf16 = flows["bf16"]
    assert bf16["k"] == 3 and bf16["target_verify"] > bf16["target_step"] > 3 * bf16["draft_forward"]
    assert bf16["spec_step"] == bf16["target_verify"] + 3 * bf16["draft_forward"]
    assert bf16["break_even_tau"] == bf16["spec_step"] / bf16["target_step"]
    dense = runner.invoke(app, ["plan", "--target", str(draft), "--json", str(tmp_path / "d.json")])
    assert dense.exit_code == 0 and "weight traffic" not in dense.output  # dense, no draft: nothing to weigh
    assert json.loads((tmp_path / "d.json").read_text())["traffic"] == []
    bad = runner.invoke(app, ["plan", "--target", str(target), "--k", "0"])
    assert bad.exit_code == 2 and "--k must be >= 1" in bad.output
