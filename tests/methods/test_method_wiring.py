"""Method specs in sweep's launch templates and result-file entries (issue 26, item 4; no torch)."""

from __future__ import annotations

import json

import pytest

from specmeter.engine.schedule import KSchedule
from specmeter.load.config import LoadConfig, LoadConfigError
from specmeter.methods import MethodSpecError, parse_method, vllm_speculative_config
from specmeter.sweep.config import ServerConfig, SweepConfig
from specmeter.sweep.launch import LaunchValues, render_template, spec_config


def test_vllm_speculative_config_renames_the_keys_vllm_has() -> None:
    assert vllm_speculative_config(parse_method("ngram:min=2,max=4"), 3) == {
        "method": "ngram", "prompt_lookup_min": 2, "prompt_lookup_max": 4, "num_speculative_tokens": 3,
    }  # fmt: skip
    suffix = vllm_speculative_config(parse_method("suffix:depth=32"), 8)
    assert suffix["method"] == "suffix" and suffix["suffix_decoding_max_tree_depth"] == 32
    assert suffix["suffix_decoding_min_token_prob"] == 0.1 and "offset" not in suffix
    for spec in ("layers:n=3", "ngram-simple"):  # methods vLLM does not run: one line naming the method
        with pytest.raises(MethodSpecError, match=spec.split(":")[0]):
            vllm_speculative_config(parse_method(spec), 2)


def test_sweep_templates_fill_a_method_into_draft_and_spec() -> None:
    values = LaunchValues(port=8000, k=4, draft="ngram:min=2,max=4")
    argv = render_template("serve --draft {draft} --k {k} --speculative-config {spec}", values)
    assert argv[:5] == ["serve", "--draft", "ngram:min=2,max=4", "--k", "4"]
    assert json.loads(argv[6]) == {
        "method": "ngram", "prompt_lookup_min": 2, "prompt_lookup_max": 4, "num_speculative_tokens": 4,
    }  # fmt: skip
    scheduled = json.loads(spec_config(4, "suffix", KSchedule.parse([[1, 4, 4], [5, 8, 2]]), "draft_model"))
    assert scheduled["method"] == "suffix" and scheduled["num_speculative_tokens"] == 4
    assert scheduled["num_speculative_tokens_per_batch_size"] == [[1, 4, 4], [5, 8, 2]]
    # A model directory is as before.
    assert json.loads(spec_config(2, "/m/draft", None, "draft_model"))["model"] == "/m/draft"


def test_sweep_refuses_a_bad_spec_in_one_line() -> None:
    load = LoadConfig(endpoint="", prompts=[])
    configs = [ServerConfig(0, template="t {port}"), ServerConfig(2, template="t {port}")]
    with pytest.raises(LoadConfigError, match=r"^--draft: ngram: unknown key 'mni'"):
        SweepConfig(load=load, configs=configs, draft="ngram:mni=2")
    assert SweepConfig(load=load, configs=configs, draft="suffix").draft == "suffix"
