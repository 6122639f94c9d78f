"""Method specs as measuring candidates (issue 26, item 4): parsed once by MeasureConfig, run by the
measuring core with one proposer per (method, k), suffix decoding's cache fed in prompt order only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from specmeter.measuring import MeasureConfig, MeasureError, Silent
from specmeter.measuring.models import MethodModel, method_info
from specmeter.measuring.run import close, run_candidates
from specmeter.methods import method_entry, method_of_entry, parse_method
from specmeter.metrics.records import ModelInfo

PROMPTS = [
    {
        "id": "a",
        "category": "legal",
        "prompt": "The Supplier shall indemnify the Customer. The Supplier shall",
    },
    {"id": "b", "category": "legal", "prompt": "The Supplier shall indemnify the Customer against all"},
    {"id": "c", "category": "general", "prompt": "The children played in the garden until the"},
]


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    return path


def test_drafts_are_parsed_once_into_directories_and_specs(tmp_path: Path) -> None:
    cfg = MeasureConfig(
        target=tmp_path / "t", prompts=tmp_path / "p.jsonl",
        drafts=["ngram:max=4,min=2", tmp_path / "d", "suffix", str(tmp_path / "e")],
    )  # fmt: skip
    assert cfg.drafts == (
        parse_method("ngram:min=2,max=4"),
        tmp_path / "d",
        parse_method("suffix"),
        tmp_path / "e",
    )
    assert cfg.draft_dirs == (tmp_path / "d", tmp_path / "e")
    assert [m.label for m in cfg.methods] == ["ngram:min=2,max=4", "suffix"]
    assert cfg.as_dict()["drafts"] == [
        "ngram:min=2,max=4",
        str(tmp_path / "d"),
        "suffix",
        str(tmp_path / "e"),
    ]
    assert cfg.inputs["--draft"] == (tmp_path / "d", tmp_path / "e")
    # A directory named like a method is a directory.
    (tmp_path / "ngram").mkdir()
    cfg = MeasureConfig(target=tmp_path / "t", prompts=tmp_path / "p.jsonl", drafts=[tmp_path / "ngram"])
    assert cfg.drafts == (tmp_path / "ngram",)


@pytest.mark.parametrize(
    ("drafts", "message"),
    [
        (["ngram:min=0"], "--draft: ngram: key 'min' must be >= 1, got 0"),
        (["suffix:min_prob=2"], "--draft: suffix: key 'min_prob' must be <= 1, got 2"),
        (["ngram", "ngram:min=5,max=5"], "--draft: ngram:min=5,max=5 is given twice"),
        (["frobnicate:x=1"], "--draft: frobnicate: unknown method"),
    ],
)
def test_a_bad_candidate_is_one_measure_error(tmp_path: Path, drafts: list[str], message: str) -> None:
    with pytest.raises(MeasureError) as e:
        MeasureConfig(target=tmp_path / "t", prompts=tmp_path / "p.jsonl", drafts=drafts)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_method_entries_and_their_table_names() -> None:
    assert method_entry(None)["name"] == "draft_model"
    entry = method_entry("suffix:depth=32")
    assert entry["label"] == "suffix:depth=32" and entry["keys"]["depth"] == 32 and entry["model_free"]
    assert method_of_entry({"draft": "x", "method": entry}) == "suffix:depth=32"
    assert method_of_entry({"draft": "x"}) == "draft_model"  # a result written before methods
    assert method_of_entry({"draft": None}) == "" and method_of_entry({"method": 3}) == ""


def test_method_model_facts_are_the_honest_extra_memory() -> None:
    target = ModelInfo("t", "/t", "LlamaForCausalLM", 1000, 4000, 600, "float32", 6, 2, 16)
    ngram = method_info(parse_method("ngram"), target, object())  # type: ignore[arg-type]
    assert (ngram.name, ngram.method, ngram.weight_bytes, ngram.kv_bytes_per_token) == (
        "ngram:min=5,max=5", "ngram:min=5,max=5", 0, 0,
    )  # fmt: skip
    assert ngram.added_weight_bytes == 0

    class Layers:
        model = type(
            "M",
            (),
            {"info": ModelInfo("layers:n=2", "", "LlamaForCausalLM", 400, 1600, 200, "float32", 2, 2, 16)},
        )

    layers = method_info(parse_method("layers:n=2"), target, Layers())  # type: ignore[arg-type]
    assert layers.weight_bytes == 1600  # what one of its forwards reads (weight traffic)
    assert layers.added_weight_bytes == 0  # the target's own tensors: nothing added
    assert layers.kv_bytes_per_token == 200  # n/L of the target's


def test_one_suffix_cache_per_candidate_fed_in_prompt_order(tiny: Any, prompts: Path) -> None:
    """Each (suffix, k) candidate sees exactly the requests before it, in order: its records equal a fresh
    proposer's over the prompts one after another (no warm-up response, no other candidate's)."""
    from specmeter.engine.proposers.candidate import make_proposer
    from specmeter.engine.speculative import speculative_decode

    cfg = MeasureConfig(
        target=tiny.target, prompts=prompts, drafts=["suffix"], k=[2, 3], max_tokens=16, cost_repeats=1,
        store=None, hygiene=False,
    )  # fmt: skip
    m = run_candidates(cfg, Silent())
    close(m)
    proposers = [c.draft.model for c in m.state.candidates]
    assert all(isinstance(c.draft, MethodModel) for c in m.state.candidates)
    assert proposers[0] is not proposers[1]
    for i, c in enumerate(m.state.candidates):
        fresh = make_proposer(parse_method("suffix"), m.target)
        for prompt, rec in zip(m.prompts, m.state.per_candidate[i], strict=True):
            g = speculative_decode(
                m.target.model, fresh, prompt.ids, k=c.k, params=m.state.params, max_tokens=prompt.max_tokens,
                eos_ids=m.target.eos_ids, generator=torch.Generator().manual_seed(0),
            )  # fmt: skip
            assert [(s.drafted, s.accepted) for s in g.steps] == [(s.drafted, s.accepted) for s in rec.steps]
            assert rec.matches_baseline is True
    # Later prompts copy from earlier responses: the global cache did something.
    assert sum(s.drafted for r in m.state.per_candidate[0] for s in r.steps) > 0
