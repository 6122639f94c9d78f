"""compat on model directories built here: identical, permuted ids, extra added tokens, other normalizer,
and the other checks (special tokens, chat template, context, size), from files only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from selection_builders import params, permuted, train_tokenizer, write_model
from tokenizers import Tokenizer, normalizers

from specmeter.modeldir import ModelDirError, inspect_model, read_weights
from specmeter.selection.compat import check_compat
from specmeter.selection.tokens import check_tokenization, compare_vocab
from specmeter.workloads import load_workload


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return train_tokenizer()


@pytest.fixture(scope="module")
def target(tok: Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_model(tmp_path_factory.mktemp("target"), tok, hidden=32, layers=4)


def _draft(tmp_path: Path, tok: Tokenizer, **kw: object) -> Path:
    return write_model(tmp_path / "draft", tok, **kw)  # type: ignore[arg-type]


def _levels(report) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in report.findings:
        out.setdefault(f.topic, set()).add(f.level)
    return out


def _workload(tmp_path: Path, texts: list[str]) -> Path:
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"id": str(i), "prompt": t}) + "\n" for i, t in enumerate(texts)))
    return path


def test_facts_come_from_headers_and_json(target: Path, tok: Tokenizer) -> None:
    facts = inspect_model(target)
    assert facts.weights is not None
    assert facts.weights.params == params(tok.get_vocab_size(), hidden=32, layers=4)
    assert facts.weights.bytes == 4 * facts.weights.params and facts.weights.dtype == "float32"
    assert facts.kv_bytes_per_token == 2 * 4 * 2 * (32 // 4) * 4
    assert facts.max_positions == 512 and facts.architecture == "LlamaForCausalLM"
    assert facts.tokenizer.special["eos"] == ("</s>", tok.token_to_id("</s>"))
    assert len(facts.tokenizer.vocab) == tok.get_vocab_size()


def test_identical_tokenizer_is_compatible(target: Path, tok: Tokenizer, tmp_path: Path) -> None:
    report = check_compat(inspect_model(target), inspect_model(_draft(tmp_path, tok)))
    assert report.verdict == "compatible" and report.exit_code == 0
    assert report.vocab.identical and report.vocab.share == 1.0
    assert {f.level for f in report.findings} <= {"ok", "info"}


def test_permuted_ids_are_incompatible(target: Path, tok: Tokenizer, tmp_path: Path) -> None:
    text = "The Supplier shall indemnify the Customer."
    ids = sorted(set(tok.encode(text).ids))
    a, b = ids[-2], ids[-1]  # two tokens the prompt below uses
    swapped = permuted(tok, a, b)
    report = check_compat(inspect_model(target), inspect_model(_draft(tmp_path, swapped)))
    assert report.verdict == "incompatible" and report.exit_code == 2
    assert report.vocab.conflict_count == 2 and report.vocab.same_token_set
    assert report.vocab.share == pytest.approx((tok.get_vocab_size() - 2) / tok.get_vocab_size())
    [finding] = [f for f in report.findings if f.level == "incompatible"]
    assert (
        "the same tokens under other ids" in finding.message
        and f"first differing ids {a}:" in finding.message
    )
    # the same segmentation, other ids: the workload check tells this apart from a normalizer change
    workload = load_workload(_workload(tmp_path, [text, "Bake it."]))
    check = check_tokenization(workload, tok, swapped)
    assert (check.identical, check.same_segmentation) == (1, 2)
    assert check.first_difference is not None and check.first_difference["id"] == "0"


def test_extra_added_tokens_are_a_caveat(target: Path, tok: Tokenizer, tmp_path: Path) -> None:
    extra = Tokenizer.from_str(tok.to_str())
    extra.add_special_tokens(["<|im_start|>"])
    extra.add_tokens(["indemnify"])
    draft = _draft(tmp_path, extra)
    prompts = load_workload(_workload(tmp_path, ["The Supplier shall indemnify the Customer.", "Bake it."]))
    t, d = inspect_model(target), inspect_model(draft)
    report = check_compat(t, d, check_tokenization(prompts, t.tokenizer.tokenizer, d.tokenizer.tokenizer))
    assert report.verdict == "usable_with_caveats" and report.exit_code == 1
    assert report.vocab.draft_only == [tok.get_vocab_size(), tok.get_vocab_size() + 1]
    levels = _levels(report)
    assert levels["vocabulary"] == {"caveat"} and levels["added_tokens"] == {"caveat"}
    added = next(f for f in report.findings if f.topic == "added_tokens")
    assert "<|im_start|>" in added.message and "indemnify" in added.message
    # "indemnify" is now one token for the draft: that prompt no longer tokenizes identically
    assert report.tokenization is not None
    assert (report.tokenization.texts, report.tokenization.identical) == (2, 1)
    assert report.tokenization.first_difference["id"] == "0"


def test_different_normalizer_is_a_caveat(target: Path, tok: Tokenizer, tmp_path: Path) -> None:
    lower = Tokenizer.from_str(tok.to_str())
    lower.normalizer = normalizers.Lowercase()
    draft = _draft(tmp_path, lower)
    t, d = inspect_model(target), inspect_model(draft)
    prompts = load_workload(_workload(tmp_path, ["The Supplier shall pay.", "bake the bread"]))
    report = check_compat(t, d, check_tokenization(prompts, t.tokenizer.tokenizer, d.tokenizer.tokenizer))
    assert report.verdict == "usable_with_caveats"
    assert report.vocab.identical  # same map, other text -> ids
    normalizer = next(f for f in report.findings if f.topic == "normalizer")
    assert normalizer.level == "caveat" and "target none, draft Lowercase" in normalizer.message
    assert report.tokenization.identical == 1 and report.tokenization.same_segmentation == 1
    assert report.to_dict()["prompts"]["share_identical"] == 0.5


def test_other_caveats_and_infos(target: Path, tok: Tokenizer, tmp_path: Path) -> None:
    draft = _draft(
        tmp_path, tok, hidden=64, layers=8, max_positions=128, eos="<pad>", chat_template="{{ messages }}",
        config={"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"},
    )  # fmt: skip
    report = check_compat(inspect_model(target), inspect_model(draft))
    levels = _levels(report)
    assert report.verdict == "usable_with_caveats"
    assert levels["special_tokens"] == {"caveat"}  # EOS differs in tokenizer_config and config.json
    assert levels["chat_template"] == {"caveat"}
    assert levels["max_positions"] == {"caveat"}
    assert levels["size"] == {"caveat"}  # the draft is larger than the target
    assert levels["architecture"] == {"info"}
    messages = " ".join(f.message for f in report.findings)
    assert "only the draft has one" in messages and "past 128 tokens" in messages


def test_target_tokens_beyond_the_draft_embedding_are_incompatible(tmp_path: Path, tok: Tokenizer) -> None:
    bigger = Tokenizer.from_str(tok.to_str())
    bigger.add_tokens(["Customer", "Supplier"])
    target = write_model(tmp_path / "t", bigger, hidden=32, layers=4)
    small = write_model(tmp_path / "d", tok)
    report = check_compat(inspect_model(target), inspect_model(small))
    assert report.verdict == "incompatible"
    assert "out of range" in next(f.message for f in report.findings if f.level == "incompatible")
    # the same draft with embedding rows to spare only learned nothing for them: a caveat
    padded = write_model(tmp_path / "p", tok, rows=tok.get_vocab_size() + 8)
    report = check_compat(inspect_model(target), inspect_model(padded))
    assert report.verdict == "usable_with_caveats"
    assert any(f.topic == "embedding" and f.level == "info" for f in report.findings)


def test_compare_vocab_counts() -> None:
    diff = compare_vocab({0: "a", 1: "b", 2: "c"}, {0: "a", 1: "x", 3: "d"})
    assert (diff.same, diff.conflict_count, diff.target_only, diff.draft_only) == (1, 1, [2], [3])
    assert diff.conflicts == [(1, "b", "x")] and not diff.identical


def test_inspect_errors_name_the_file(tmp_path: Path, tok: Tokenizer) -> None:
    with pytest.raises(ModelDirError, match="no such directory"):
        inspect_model(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelDirError, match=r"config\.json: missing"):
        inspect_model(empty)
    (empty / "config.json").write_text("{not json")
    with pytest.raises(ModelDirError, match=r"config.json: unreadable config \(.* line 1 column 2\)"):
        inspect_model(empty)
    (empty / "config.json").write_text("{}")
    with pytest.raises(ModelDirError, match="no tokenizer"):
        inspect_model(empty)
    model = write_model(tmp_path / "m", tok)
    (model / "model.safetensors").write_bytes(b"\xff" * 8 + b"{}")
    with pytest.raises(ModelDirError, match="unreadable safetensors header"):
        read_weights(model)
    (model / "model.safetensors").unlink()
    assert read_weights(model) is None
    facts = inspect_model(model)
    assert facts.weights is None and facts.dtype == "float32"  # from config.json


def test_legacy_vocab_json_is_converted_and_compared(target: Path, tok: Tokenizer, tmp_path: Path) -> None:
    """No tokenizer.json: transformers converts vocab.json + merges.txt; null and "" options compare equal."""
    legacy = write_model(tmp_path / "legacy", tok)
    (legacy / "tokenizer.json").unlink()
    tok.model.save(str(legacy))
    config = json.loads((legacy / "tokenizer_config.json").read_text())
    (legacy / "tokenizer_config.json").write_text(json.dumps({**config, "tokenizer_class": "GPT2Tokenizer"}))
    facts = inspect_model(legacy)
    assert facts.tokenizer.source == "vocab.json (converted by transformers)"
    report = check_compat(inspect_model(target), facts)
    assert report.vocab.identical
    model = next(f for f in report.findings if f.topic == "model")
    # the converter drops unk_token; prefix/suffix options null vs "" are not reported
    assert model.message.startswith("differs (BPE in both, differing in unk_token)")
