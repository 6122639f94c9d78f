"""Method specs: one way to name a candidate, defaults from the engines, one clear line per bad spec."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from specmeter.methods import (
    METHODS,
    DraftDir,
    MethodSpecError,
    is_method_spec,
    parse_candidate,
    parse_method,
)
from specmeter.metrics.records import ModelInfo

TARGET = ModelInfo(
    name="t", path="/t", architecture="LlamaForCausalLM", params=1_000_000, weight_bytes=4_000_000,
    kv_bytes_per_token=6 * 2 * 2 * 16 * 4, dtype="float32", num_layers=6, num_kv_heads=2, head_dim=16,
)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "label", "values"),
    [
        ("ngram", "ngram:min=5,max=5", {"min": 5, "max": 5}),  # vLLM's defaults
        ("ngram:min=2,max=4", "ngram:min=2,max=4", {"min": 2, "max": 4}),
        ("ngram:max=4,min=2", "ngram:min=2,max=4", {"min": 2, "max": 4}),  # one label whatever the order
        ("ngram:max=3", "ngram:min=3,max=3", {"min": 3, "max": 3}),  # one given: the other follows
        ("ngram:min=4", "ngram:min=4,max=4", {"min": 4, "max": 4}),
        ("ngram-simple", "ngram-simple:n=12,m=48", {"n": 12, "m": 48}),  # llama.cpp's defaults
        ("ngram-map-k:m=8", "ngram-map-k:n=12,m=8", {"n": 12, "m": 8}),
        ("suffix", "suffix", {"depth": 24, "requests": 10000, "factor": 1.0, "offset": 0.0, "min_prob": 0.1}),
        ("suffix:depth=24", "suffix", {"depth": 24}),  # the default is not repeated in the label
        ("suffix:depth=32, min_prob=0.2", "suffix:depth=32,min_prob=0.2", {"depth": 32, "min_prob": 0.2}),
        ("eagle:head=/models/head", "eagle:head=/models/head", {"head": "/models/head"}),
        ("layers", "layers:n=2", {"n": 2}),
        ("layers:n=3", "layers:n=3", {"n": 3}),
    ],
)
def test_specs_parse_with_engine_defaults_and_a_stable_label(text: str, label: str, values: dict) -> None:
    spec = parse_method(text)
    assert spec.label == label
    assert {k: spec.values[k] for k in values} == values
    assert parse_method(spec.label).values == spec.values  # the label names the same method
    assert parse_candidate(text) == spec


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ngram:min=5,max=3", "ngram: key 'min' (5) must be <= key 'max' (3)"),
        ("ngram:mn=2", "ngram: unknown key 'mn' (keys: min, max)"),
        ("ngram:min=two", "ngram: key 'min' must be an integer, got 'two'"),
        ("ngram:min=0", "ngram: key 'min' must be >= 1, got 0"),
        ("ngram:min=", "ngram: key 'min' has no value"),
        ("ngram:min", "ngram: 'min' is not key=value"),
        ("ngram:", "ngram: nothing after ':'"),
        ("ngram:min=2,min=3", "ngram: key 'min' given twice"),
        ("suffix:depth=0", "suffix: key 'depth' must be >= 1, got 0"),
        ("suffix:min_prob=1.5", "suffix: key 'min_prob' must be <= 1, got 1.5"),
        ("suffix:factor=nan", "suffix: key 'factor' must be a finite number, got 'nan'"),
        ("suffix:factor=x", "suffix: key 'factor' must be a number, got 'x'"),
        ("eagle", "eagle: key 'head' is required"),
        ("layers:n=0", "layers: key 'n' must be >= 1, got 0"),
        (
            "lookahead:n=3",
            "lookahead: unknown method (known: ngram, ngram-simple, ngram-map-k, suffix, eagle, layers)",
        ),
    ],
)
def test_a_bad_spec_is_one_line_naming_method_and_key(text: str, message: str) -> None:
    with pytest.raises(MethodSpecError) as err:
        parse_candidate(text)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)
    assert isinstance(err.value, ValueError)


def test_model_directories_stay_model_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_candidate("/models/draft-legal") == DraftDir("/models/draft-legal")
    assert parse_candidate("drafts/ngram") == DraftDir("drafts/ngram")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ngram").mkdir()
    assert parse_candidate("ngram") == DraftDir("ngram")  # an existing directory wins over the method
    assert not is_method_spec("ngram") and is_method_spec("ngram:min=2")


def test_determinism_and_extra_memory_are_honest() -> None:
    deterministic = ["ngram", "ngram-simple", "ngram-map-k", "suffix"]
    assert [m for m in METHODS if METHODS[m].deterministic] == deterministic
    for text in deterministic:
        mem = parse_method(text).extra_memory(TARGET)
        assert (mem.weight_bytes, mem.kv_bytes_per_token, mem.total(10_000)) == (0, 0, 0)
    assert "host memory" in parse_method("suffix").extra_memory(TARGET).host_note
    # layers:n shares the target's weights but keeps its own KV for n of the L layers.
    mem = parse_method("layers:n=2").extra_memory(TARGET)
    assert mem.weight_bytes == 0 and mem.kv_bytes_per_token == TARGET.kv_bytes_per_token * 2 // 6
    assert mem.total(100) == 100 * TARGET.kv_bytes_per_token // 3
    head = ModelInfo("h", "/h", "EagleHead", 5000, 20_000, 128, "float32", 1, 2, 16)
    mem = parse_method("eagle:head=/h").extra_memory(TARGET, head)
    assert (mem.weight_bytes, mem.kv_bytes_per_token) == (20_000, 128)
    with pytest.raises(MethodSpecError, match="eagle"):
        parse_method("eagle:head=/h").extra_memory(TARGET)


def test_the_spec_module_loads_without_torch() -> None:
    code = "import sys, specmeter.methods; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
