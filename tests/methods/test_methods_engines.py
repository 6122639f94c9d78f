"""methods.engines: a method spec as vLLM's speculative_config and as llama-server's flags."""

from __future__ import annotations

import pytest

from specmeter.methods import MethodSpecError, parse_method
from specmeter.methods.engines import llamacpp_spec_args, vllm_speculative_config


def test_vllm_ngram_and_suffix_configs_use_vllms_field_names() -> None:
    assert vllm_speculative_config(parse_method("ngram:min=2,max=4"), 3) == {
        "method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2, "prompt_lookup_max": 4,
    }  # fmt: skip
    # vLLM's own defaulting (one given: the other takes its value) is the spec's.
    cfg = vllm_speculative_config(parse_method("ngram:max=3"), 2)
    assert (cfg["prompt_lookup_min"], cfg["prompt_lookup_max"]) == (3, 3)
    assert vllm_speculative_config(parse_method("suffix:depth=32,min_prob=0.2,requests=0"), 16) == {
        "method": "suffix",
        "num_speculative_tokens": 16,
        "suffix_decoding_max_tree_depth": 32,
        "suffix_decoding_max_cached_requests": 0,
        "suffix_decoding_max_spec_factor": 1.0,
        "suffix_decoding_min_token_prob": 0.2,
    }


@pytest.mark.parametrize(
    ("spec", "k", "message"),
    [
        ("suffix:offset=1", 4, "suffix: key 'offset' has no vLLM setting"),
        ("ngram-simple", 4, "ngram-simple: no vLLM speculative_config"),
        ("layers:n=2", 4, "layers: no vLLM speculative_config"),
        ("ngram", 0, "ngram: k must be >= 1"),
    ],
)
def test_vllm_refusals_are_one_line_naming_the_method(spec: str, k: int, message: str) -> None:
    with pytest.raises(MethodSpecError, match=f"^{message}") as caught:
        vllm_speculative_config(parse_method(spec), k)
    assert "\n" not in str(caught.value)


def test_llamacpp_flags() -> None:
    assert llamacpp_spec_args(parse_method("ngram-simple:n=3,m=8")) == [
        "--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3", "--spec-ngram-simple-size-m", "8",
    ]  # fmt: skip
    assert llamacpp_spec_args(parse_method("ngram-map-k")) == [
        "--spec-type", "ngram-map-k",
        "--spec-ngram-map-k-size-n", "12", "--spec-ngram-map-k-size-m", "48",
    ]  # fmt: skip
    with pytest.raises(MethodSpecError, match=r"^ngram: llama-server has no \-\-spec\-type"):
        llamacpp_spec_args(parse_method("ngram"))
