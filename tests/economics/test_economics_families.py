"""``plan`` for the field report's model families: parameter counts against the published totals, KV bytes
per token against a hand computation per attention type, and the weight traffic of MoE verification.

The configs are written here from the published config.json files (values read through the search tool:
deepseek-ai/DeepSeek-V3, Qwen/Qwen3-30B-A3B, Qwen/Qwen3-235B-A22B, meta-llama/Llama-4-Scout-17B-16E and
-Maverick-17B-128E, mistralai/Mistral-7B-v0.1, google/gemma-3-27b-it). The published totals:

- DeepSeek V3 (its README_WEIGHTS.md): 671B total; 36.6B activated, the 0.9B output head included and the
  input embedding not — the weights a decoded token reads.
- Qwen3 (model cards): 30.5B total / 3.3B activated; 235B / 22B. Meta's Llama 4 card: Scout 109B / 17B,
  Maverick 400B / 17B. Qwen and Meta count the input embedding table in "activated".
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from specmeter.economics import WEIGHT_FORMATS, arch_from_dict, traffic
from specmeter.economics.families import expected_distinct_experts

B = 1e9

DEEPSEEK_V3: dict[str, Any] = dict(
    architectures=["DeepseekV3ForCausalLM"], model_type="deepseek_v3", vocab_size=129280, hidden_size=7168,
    intermediate_size=18432, moe_intermediate_size=2048, num_hidden_layers=61, num_nextn_predict_layers=1,
    num_attention_heads=128, num_key_value_heads=128, n_shared_experts=1, n_routed_experts=256,
    routed_scaling_factor=2.5, kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64, v_head_dim=128,
    qk_nope_head_dim=128, topk_method="noaux_tc", n_group=8, topk_group=4, num_experts_per_tok=8,
    moe_layer_freq=1, first_k_dense_replace=3, norm_topk_prob=True, scoring_func="sigmoid",
    tie_word_embeddings=False, max_position_embeddings=163840,
)  # fmt: skip
QWEN3_30B_A3B: dict[str, Any] = dict(
    architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", hidden_size=2048, intermediate_size=6144,
    num_hidden_layers=48, num_attention_heads=32, num_key_value_heads=4, head_dim=128, num_experts=128,
    num_experts_per_tok=8, moe_intermediate_size=768, decoder_sparse_step=1, mlp_only_layers=[],
    vocab_size=151936, tie_word_embeddings=False, sliding_window=None, use_sliding_window=False,
    max_position_embeddings=40960,
)  # fmt: skip
QWEN3_235B_A22B = dict(QWEN3_30B_A3B, hidden_size=4096, intermediate_size=12288, num_hidden_layers=94,
                       num_attention_heads=64, moe_intermediate_size=1536)  # fmt: skip
LLAMA4_VISION: dict[str, Any] = dict(
    model_type="llama4_vision_model", hidden_size=1408, image_size=336, intermediate_size=5632,
    num_attention_heads=16, num_channels=3, num_hidden_layers=34, patch_size=14, pixel_shuffle_ratio=0.5,
    projector_input_dim=4096, projector_output_dim=4096, vision_output_dim=4096,
)  # fmt: skip
SCOUT_TEXT: dict[str, Any] = dict(
    model_type="llama4_text", attention_chunk_size=8192, head_dim=128, hidden_size=5120,
    interleave_moe_layer_step=1, intermediate_size=8192, intermediate_size_mlp=16384, num_attention_heads=40,
    num_experts_per_tok=1, num_hidden_layers=48, num_key_value_heads=8, num_local_experts=16,
    vocab_size=202048, use_qk_norm=True, moe_layers=list(range(48)), no_rope_layers=[1, 1, 1, 0] * 12,
    max_position_embeddings=10485760,
)  # fmt: skip
LLAMA4_SCOUT = dict(
    architectures=["Llama4ForConditionalGeneration"], model_type="llama4", text_config=SCOUT_TEXT,
    vision_config=LLAMA4_VISION, tie_word_embeddings=False,
)  # fmt: skip
# Maverick's text config: 128 experts on every second layer (interleave step 2, no explicit list), no QK norm.
MAVERICK_TEXT = {k: v for k, v in SCOUT_TEXT.items() if k != "moe_layers"}
MAVERICK_TEXT.update(num_local_experts=128, interleave_moe_layer_step=2, use_qk_norm=False,
                     max_position_embeddings=1048576)  # fmt: skip
LLAMA4_MAVERICK = dict(LLAMA4_SCOUT, text_config=MAVERICK_TEXT)
MISTRAL_7B_V01: dict[str, Any] = dict(
    model_type="mistral", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=8, vocab_size=32000, sliding_window=4096,
    tie_word_embeddings=False, max_position_embeddings=32768,
)  # fmt: skip
GEMMA3_27B_TEXT: dict[str, Any] = dict(
    model_type="gemma3_text", hidden_size=5376, intermediate_size=21504, num_hidden_layers=62,
    num_attention_heads=32, num_key_value_heads=16, head_dim=128, sliding_window=1024,
    sliding_window_pattern=6, vocab_size=262208,
)  # fmt: skip


# ---------------------------------------------------------------------------------------- parameters


# name: (config, our exact total and active counts, the vendor's total and active figures in billions each
# with the unit of its last digit, whether the vendor's "active" counts the input embedding table)
PUBLISHED: dict[str, tuple[dict[str, Any], int, int, tuple[float, float], tuple[float, float], bool]] = {
    "DeepSeek V3": (DEEPSEEK_V3, 671_026_419_200, 36_625_618_432, (671, 1), (36.6, 0.1), False),
    "Qwen3-30B-A3B": (QWEN3_30B_A3B, 30_532_122_624, 3_041_867_776, (30.5, 0.1), (3.3, 0.1), True),
    "Qwen3-235B-A22B": (QWEN3_235B_A22B, 235_093_634_560, 21_568_433_664, (235, 1), (22, 1), True),
    # Meta rounds to whole billions (Maverick's 400 to a round figure) and counts the 0.87B vision tower.
    "Llama 4 Scout": (LLAMA4_SCOUT, 108_641_793_536, 16_138_408_960, (109, 1), (17, 1), True),
    "Llama 4 Maverick": (LLAMA4_MAVERICK, 401_583_781_376, 16_150_205_440, (400, 2), (17, 1), True),
}


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_parameter_counts_match_the_published_totals(name: str) -> None:
    config, total, active, published_total, published_active, embedding_in_active = PUBLISHED[name]
    a = arch_from_dict(config, name=name)
    assert a.params == total and a.active_params == active
    figure, unit = published_total
    assert abs(a.params - figure * B) <= unit * B, (name, a.params)
    figure, unit = published_active
    as_published = a.active_params + (a.embedding_params if embedding_in_active else 0)
    assert abs(as_published - figure * B) <= unit * B, (name, as_published)
    assert a.is_moe and 0 < a.active_params < a.params


def test_deepseek_v3_by_hand() -> None:
    """MLA projections, 3 dense layers, 58 MoE layers of 256 routed + 1 shared expert, untied head."""
    h, heads, layers = 7168, 128, 61
    attention = (h * 1536 + 1536 * heads * (128 + 64)  # q_a, q_b
                 + h * (512 + 64) + 512 * heads * (128 + 128)  # kv_a (latent + rope key), kv_b (nope k, v)
                 + heads * 128 * h)  # o  # fmt: skip
    expert = 3 * h * 2048
    moe = 256 * expert + expert + 256 * h + 256  # routed, shared, router, routing bias
    norms = 2 * h + 1536 + 512
    total = layers * (attention + norms) + 3 * 3 * h * 18432 + 58 * moe + 2 * 129280 * h + h
    a = arch_from_dict(DEEPSEEK_V3)
    assert a.params == total
    assert (a.experts, a.experts_per_token, a.moe_layers) == (256, 8, 58)
    assert a.shared_expert_params == expert and a.expert_params == expert
    assert a.active_params == total - 58 * 248 * expert - 129280 * h  # 248 routed experts idle, no table
    assert any("multi-token-prediction" in note for note in a.notes)


def test_qwen3_moe_layer_schedule_and_dense_layers() -> None:
    base = arch_from_dict(QWEN3_30B_A3B)
    some_dense = arch_from_dict(dict(QWEN3_30B_A3B, mlp_only_layers=[0, 47]))
    assert base.moe_layers == 48 and some_dense.moe_layers == 46
    expert_layer = 128 * 3 * 2048 * 768 + 128 * 2048  # experts and router
    assert base.params - some_dense.params == 2 * (expert_layer - 3 * 2048 * 6144)
    every_other = arch_from_dict(dict(QWEN3_30B_A3B, decoder_sparse_step=2))
    assert every_other.moe_layers == 24


def test_llama4_interleaved_moe_layers_and_vision_tower() -> None:
    scout, maverick = arch_from_dict(LLAMA4_SCOUT), arch_from_dict(LLAMA4_MAVERICK)
    assert scout.moe_layers == 48 and maverick.moe_layers == 24  # Maverick: layers 1, 3, …, 47
    assert scout.vision_params == maverick.vision_params == 871_932_416
    text_only = arch_from_dict(SCOUT_TEXT)
    assert scout.params - text_only.params == scout.vision_params
    assert text_only.active_params == scout.active_params  # the vision tower is never read by decoding
    # A MoE layer: 16 experts + 1 shared of 3 · 5120 · 8192, router 16 · 5120; a dense one: 3 · 5120 · 16384.
    expert = 3 * 5120 * 8192
    assert maverick.expert_params == maverick.shared_expert_params == expert
    dense_maverick = arch_from_dict(dict(MAVERICK_TEXT, interleave_moe_layer_step=1))
    assert dense_maverick.params - arch_from_dict(MAVERICK_TEXT).params == 24 * (
        129 * expert + 128 * 5120 - 3 * 5120 * 16384
    )
    other_vision = dict(LLAMA4_SCOUT, vision_config={"model_type": "siglip_vision_model"})
    assert any("vision tower is not counted" in n for n in arch_from_dict(other_vision).notes)


def test_dense_models_read_everything_but_the_embedding_table() -> None:
    mistral = arch_from_dict(MISTRAL_7B_V01)
    assert not mistral.is_moe and mistral.experts == 1
    assert mistral.params == 7_241_732_096  # Mistral 7B's published 7.24B
    assert mistral.active_params == mistral.params - mistral.embedding_params
    tied = arch_from_dict(dict(MISTRAL_7B_V01, tie_word_embeddings=True))
    assert tied.active_params == tied.params  # the one table is read as the LM head


# ----------------------------------------------------------------------------------------- KV cache


def test_kv_bytes_per_token_per_attention_type_by_hand() -> None:
    bf16 = 2
    # MLA: the 512-element latent and the 64-element rope key per layer, whatever the 128 heads.
    assert arch_from_dict(DEEPSEEK_V3).kv_bytes_per_token(bf16) == 61 * (512 + 64) * 2 == 70_272
    # GQA: a key and a value of 4 heads × 128 per layer.
    assert arch_from_dict(QWEN3_30B_A3B).kv_bytes_per_token(bf16) == 48 * 2 * 4 * 128 * 2 == 98_304
    assert arch_from_dict(QWEN3_235B_A22B).kv_bytes_per_token(bf16) == 94 * 2 * 4 * 128 * 2
    # Sliding window on every layer (Mistral 7B v0.1): full cost up to the window, then capped.
    mistral = arch_from_dict(MISTRAL_7B_V01)
    per_token = 32 * 2 * 8 * 128 * 2
    assert mistral.kv_bytes_per_token(bf16, context=4096) == per_token
    assert mistral.kv_bytes_per_token(bf16, context=32768) == per_token * 4096 / 32768
    # Qwen ships a window it does not use (use_sliding_window false): every token stays.
    qwen_window = arch_from_dict(dict(QWEN3_30B_A3B, sliding_window=4096))
    assert qwen_window.kv_bytes_per_token(bf16, 32768) == 98_304
    # Llama 4: 36 chunked RoPE layers keep at most 8192 tokens, the 12 NoPE layers all of them.
    scout, layer = arch_from_dict(LLAMA4_SCOUT), 2 * 8 * 128 * 2
    assert scout.kv_bytes_per_token(bf16, 8192) == 48 * layer
    assert scout.kv_bytes_per_token(bf16, 131072) == 12 * layer + 36 * layer * 8192 / 131072
    assert "chunked 8192 on 36/48 layers" in scout.attention
    # Gemma 3: five sliding (1024) layers per full one, 62 layers → 10 full, 52 sliding.
    gemma, layer = arch_from_dict(GEMMA3_27B_TEXT), 2 * 16 * 128 * 2
    assert gemma.kv_bytes_per_token(bf16, 8192) == 10 * layer + 52 * layer * 1024 / 8192
    types = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(62)]
    explicit = arch_from_dict(dict(GEMMA3_27B_TEXT, sliding_window_pattern=None, layer_types=types))
    assert explicit.kv_layers == gemma.kv_layers
    # Gemma 2 alternates, sliding first.
    gemma2 = arch_from_dict(dict(GEMMA3_27B_TEXT, model_type="gemma2", num_hidden_layers=4))
    assert [layer.kind for layer in gemma2.kv_layers] == ["sliding", "full", "sliding", "full"]


def test_plan_footprint_uses_the_kv_of_the_planned_context() -> None:
    from specmeter.economics import footprint

    mistral = arch_from_dict(MISTRAL_7B_V01)
    short = footprint(mistral, None, "bf16", context=4096, batch=2)
    long = footprint(mistral, None, "bf16", context=32768, batch=2)
    # The window caps the cache: 8× the context, the same KV bytes per sequence.
    assert short.baseline_bytes - short.target_weights == long.baseline_bytes - long.target_weights
    assert long.target_kv_per_token * 8 == short.target_kv_per_token


# ------------------------------------------------------------------------------------ weight traffic


def test_expected_distinct_experts_is_bounded_and_grows_with_positions() -> None:
    for experts, per_token in ((256, 8), (128, 8), (16, 1), (8, 2), (4, 4)):
        last = 0.0
        for positions in range(1, 12):
            union = expected_distinct_experts(experts, per_token, positions)
            assert per_token - 1e-9 <= union <= min(experts, positions * per_token) + 1e-9
            assert union >= last
            last = union
        assert expected_distinct_experts(experts, per_token, 1) == pytest.approx(per_token)
    assert expected_distinct_experts(4, 4, 3) == 4  # every expert every time
    # 256 experts, 8 per token, 5 positions: 256 · (1 − (31/32)^5)
    assert expected_distinct_experts(256, 8, 5) == pytest.approx(256 * (1 - (31 / 32) ** 5))


def test_traffic_of_a_moe_verification_and_the_draft() -> None:
    target, draft = arch_from_dict(DEEPSEEK_V3), arch_from_dict(MISTRAL_7B_V01)
    t = traffic(target, draft, "bf16", k=4)
    active = target.active_linear_params * 2 + target.active_other_params * 2
    assert t.target_step == active
    union = expected_distinct_experts(256, 8, 5)
    extra = 58 * target.expert_params * (union - 8) * 2
    assert (
        t.target_verify == math.ceil(target.active_linear_params * 2 + extra) + target.active_other_params * 2
    )
    assert t.draft_forward == draft.active_params * 2
    assert t.spec_step == t.target_verify + 4 * t.draft_forward
    assert t.break_even_tau == pytest.approx(t.spec_step / t.target_step) and t.break_even_tau > 3
    # A dense target reads the same weights whether it verifies 5 positions or decodes one.
    dense = traffic(draft, None, "fp8", k=4)
    assert dense.target_verify == dense.target_step and dense.break_even_tau == 1.0
    nvfp4 = traffic(target, None, "nvfp4", k=1)
    fmt = WEIGHT_FORMATS["nvfp4"]
    assert nvfp4.target_step == math.ceil(target.active_linear_params * fmt.linear_bits / 8) + (
        target.active_other_params * 2
    )
    with pytest.raises(ValueError, match="k must be >= 1"):
        traffic(target, None, "bf16", k=0)
