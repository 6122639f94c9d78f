"""The VRAM planner: parameter counts from config.json alone, per-format bytes, GPU fit and KV headroom."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest

from specmeter.economics import (
    WEIGHT_FORMATS,
    Gpu,
    arch_from_config,
    arch_from_dict,
    footprint,
    load_catalogue,
    plan,
    weight_bytes,
)
from specmeter.modeldir import ModelDirError

GIB = 2**30

LLAMA_31_8B = dict(model_type="llama", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                   num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
                   tie_word_embeddings=False, max_position_embeddings=131072)  # fmt: skip
LLAMA_31_70B = dict(LLAMA_31_8B, hidden_size=8192, num_hidden_layers=80, num_attention_heads=64,
                    intermediate_size=28672)  # fmt: skip
LLAMA_32_1B = dict(LLAMA_31_8B, hidden_size=2048, num_hidden_layers=16, intermediate_size=8192,
                   tie_word_embeddings=True, head_dim=64)  # fmt: skip
MIXTRAL_8X7B = dict(model_type="mixtral", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                    num_key_value_heads=8, intermediate_size=14336, vocab_size=32000, num_local_experts=8,
                    tie_word_embeddings=False)  # fmt: skip


@pytest.mark.parametrize(
    ("config", "params"),
    [
        (LLAMA_31_8B, 8_030_261_248),
        (LLAMA_31_70B, 70_553_706_496),
        (LLAMA_32_1B, 1_235_814_400),
        (MIXTRAL_8X7B, 46_702_792_704),
    ],
)
def test_parameter_counts_match_the_published_checkpoints(config: dict[str, Any], params: int) -> None:
    assert arch_from_dict(config).params == params


def _safetensors_params(directory: Path) -> int:
    total = 0
    for file in directory.glob("*.safetensors"):
        with file.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        total += sum(math.prod(t["shape"]) for name, t in header.items() if name != "__metadata__")
    return total


def test_counts_match_real_checkpoints_of_several_families(tiny: Any) -> None:
    for directory in (tiny.target, tiny.draft, tiny.qwen2, tiny.mistral):
        facts = arch_from_config(directory)
        assert facts.params == _safetensors_params(directory), directory.name


def test_kv_bytes_per_token_is_two_layers_heads_head_dim_bytes() -> None:
    facts = arch_from_dict(LLAMA_31_8B)
    assert facts.kv_bytes_per_token(2) == 2 * 32 * 8 * 128 * 2 == 128 * 1024


def test_weight_formats_apply_their_bits_and_keep_embeddings_in_bf16() -> None:
    facts = arch_from_dict(LLAMA_31_8B)
    bf16 = weight_bytes(facts, WEIGHT_FORMATS["bf16"])
    assert bf16 == facts.params * 2
    assert weight_bytes(facts, WEIGHT_FORMATS["fp32"]) == facts.params * 4
    nvfp4 = weight_bytes(facts, WEIGHT_FORMATS["nvfp4"])
    # 4 bits + one FP8 scale per 16 values = 4.5 bits on the decoder matrices; the rest stays bf16.
    assert nvfp4 == math.ceil(facts.linear_params * 4.5 / 8) + facts.other_params * 2
    int4 = weight_bytes(facts, WEIGHT_FORMATS["int4"])
    assert int4 == math.ceil(facts.linear_params * (4 + 16 / 128 + 4 / 128) / 8) + facts.other_params * 2
    fp8 = weight_bytes(facts, WEIGHT_FORMATS["fp8"])
    assert 0.5 < fp8 / bf16 < 0.6  # the field report's "40–60% less VRAM" for FP8
    assert nvfp4 < fp8 < bf16


def test_the_smallest_card_that_fits_and_the_headroom_left() -> None:
    target, draft = arch_from_dict(LLAMA_31_70B), arch_from_dict(LLAMA_32_1B)
    gpus = load_catalogue().gpus
    rows = {r.footprint.weight_format: r for r in plan(target, draft, gpus, context=8192, batch=8)}
    assert rows["fp32"].spec_fit is None  # 280 GB of weights fit no single card
    fp8 = rows["fp8"]
    fp = fp8.footprint
    assert (
        fp.spec_bytes
        == fp.target_weights + fp.draft_weights + (fp.target_kv_per_token + fp.draft_kv_per_token) * 8 * 8192
    )
    fit = fp8.spec_fit
    assert fit is not None
    # Smallest: it fits in 90% of its memory, and every smaller card in the catalogue does not.
    assert fp.spec_bytes <= fit.usable_bytes == int(fit.gpu.memory_bytes * 0.9)
    assert all(fp.spec_bytes > int(g.memory_bytes * 0.9) for g in gpus if g.memory_gib < fit.gpu.memory_gib)
    per_token = fp.target_kv_per_token + fp.draft_kv_per_token
    assert fit.kv_headroom_tokens == (fit.usable_bytes - fp.target_weights - fp.draft_weights) // per_token
    assert fit.kv_headroom_tokens >= 8 * 8192
    # Two cards pool their memory: bf16 70B + 1B fits on 2 × 80 GB.
    two = plan(target, draft, gpus, formats=["bf16"], context=8192, batch=8, count=2)[0].spec_fit
    assert two is not None and two.count == 2 and two.gpu.memory_gib <= 96


def test_the_draft_can_push_a_model_onto_a_bigger_card() -> None:
    target = arch_from_dict(LLAMA_31_8B)
    big_draft = arch_from_dict(dict(LLAMA_31_8B, num_hidden_layers=8))
    cards = [Gpu(name="small", memory_gib=20), Gpu(name="big", memory_gib=40)]
    row = plan(target, big_draft, cards, formats=["bf16"], context=2048)[0]
    assert row.baseline_fit is not None and row.baseline_fit.gpu.name == "small"
    assert row.spec_fit is not None and row.spec_fit.gpu.name == "big"
    assert row.footprint.extra_bytes == row.footprint.draft_weights + row.footprint.draft_kv_per_token * 2048


def test_kv_format_follows_the_weights_unless_given() -> None:
    facts = arch_from_dict(LLAMA_31_8B)
    assert footprint(facts, None, "nvfp4", context=1).kv_format == "fp8"
    assert footprint(facts, None, "int4", context=1).kv_format == "bf16"
    fp = footprint(facts, None, "bf16", context=1, kv_format="fp8")
    assert fp.target_kv_per_token == 64 * 1024 and fp.draft_kv_per_token == 0 and fp.draft_weights == 0


def test_config_problems_name_the_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    with pytest.raises(ModelDirError, match=r"m/config\.json: missing field 'num_hidden_layers'"):
        arch_from_config(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text("{\n oops")
    with pytest.raises(ModelDirError, match=r"m/config\.json: unreadable config \(.* at line 2 column"):
        arch_from_config(tmp_path / "m")
    with pytest.raises(ModelDirError, match=r"m/config\.json: unreadable config"):
        arch_from_config(tmp_path / "m" / "config.json")
    with pytest.raises(ModelDirError, match=r"nowhere: no such directory"):
        arch_from_config(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelDirError, match=r"empty/config\.json: missing"):
        arch_from_config(tmp_path / "empty")
    with pytest.raises(ModelDirError, match="must be a non-negative integer"):
        arch_from_dict(dict(LLAMA_31_8B, vocab_size="many"))


def test_a_bare_config_json_is_sized_under_its_directory_name(tmp_path: Path) -> None:
    (tmp_path / "llama-8b").mkdir()
    (tmp_path / "llama-8b" / "config.json").write_text(json.dumps(LLAMA_31_8B))
    (tmp_path / "other.json").write_text(json.dumps(LLAMA_31_8B))
    facts = arch_from_config(tmp_path / "llama-8b" / "config.json")
    assert facts.name == "llama-8b" and facts == arch_from_config(tmp_path / "llama-8b")
    assert arch_from_config(tmp_path / "other.json").name == "other"


def test_multimodal_configs_are_sized_by_their_text_config() -> None:
    facts = arch_from_dict({"model_type": "llava", "text_config": LLAMA_31_8B})
    assert facts.params == 8_030_261_248


def test_catalogue_is_valid_sorted_and_a_bad_one_is_named(tmp_path: Path) -> None:
    cat = load_catalogue()
    sizes = [g.memory_gib for g in cat.gpus]
    assert sizes == sorted(sizes) and {16, 24, 32, 48, 80, 96, 141, 192} <= set(sizes)
    bad = tmp_path / "gpus.json"
    bad.write_text(json.dumps({"gpus": [{"name": "x", "memory_gib": -1}]}))
    with pytest.raises(ValueError, match=r"gpus.json: gpus.0.memory_gib"):
        load_catalogue(bad)
    bad.write_text(json.dumps({"gpus": [{"name": "x", "memory_gib": 8, "tflops": 1}]}))
    with pytest.raises(ValueError, match="tflops"):
        load_catalogue(bad)
