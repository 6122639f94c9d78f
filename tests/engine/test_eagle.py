"""The EAGLE-3 head (``eagle:head=DIR``): its format by hand, the trainer and the engine computing the same
head, greedy output equal to the target's at B = 1, 4, 16, the target's distribution kept when sampling,
one-line errors for directories that are not a head for this target, and ``distill --method eagle``."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch
from sampling_stats import chi_square_pvalue, exact_joint
from typer.testing import CliRunner

from specmeter.cli.app import app
from specmeter.engine.batched import SequenceRequest, decode_batch
from specmeter.engine.loader import load_model
from specmeter.engine.proposers.candidate import MethodNotRunnable, make_proposer
from specmeter.engine.proposers.eagle import EagleProposer, head_tensor_shapes
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import speculative_decode
from specmeter.methods import parse_method
from specmeter.modeldir import ModelDirError, read_model_config
from specmeter.modeldir.head import head_info, read_head
from specmeter.training.eagle import HeadShape, TrainableHead, default_aux_layers, export_head, target_batch
from tiny_models import sample_corpus

MAX = 20


def _head_dir(
    target_dir: Path, out: Path, *, intermediate: int = 48, seed: int = 0, scale: float = 1.0
) -> Path:
    """An untrained head for ``target_dir`` (random weights, speculators format, float32)."""
    config = read_model_config(target_dir)
    target = load_model(target_dir)
    head = TrainableHead(HeadShape.of_target(config, intermediate=intermediate), target.model.embed,
                         target.model.lm_head, seed=seed)  # fmt: skip
    with torch.no_grad():
        for p in head.params.values():
            if p.dim() == 2:
                p.mul_(scale)
    return export_head(head, out, config, str(target_dir), dtype=torch.float32)


@pytest.fixture(scope="module")
def target(tiny):
    return load_model(tiny.target)


@pytest.fixture(scope="module")
def head_dir(tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _head_dir(tiny.target, tmp_path_factory.mktemp("eagle") / "head", scale=20.0)


@pytest.fixture(scope="module")
def prompts(target) -> list[list[int]]:
    tok = target.tokenizer
    return [tok(text)["input_ids"][: 3 + (i * 5) % 22] for i, text in enumerate(sample_corpus(2)[:16])]


@pytest.fixture(scope="module")
def reference(target, prompts) -> list[tuple[int, ...]]:
    return [
        speculative_decode(
            target.model, None, p, k=0, params=SamplingParams(), max_tokens=MAX, eos_ids=set()
        ).output_ids
        for p in prompts
    ]


def test_default_aux_layers_follow_speculators() -> None:
    assert default_aux_layers(10) == (2, 5, 7)  # the bundled target: [2, L // 2, L - 3]
    assert default_aux_layers(32) == (2, 16, 29)
    assert default_aux_layers(6) == (2, 3)  # 2, 3, 3 made distinct
    assert default_aux_layers(2) == (0, 1, 2)  # -1 clamped to 0


def test_tensor_shapes_by_hand(head_dir: Path) -> None:
    facts = read_head(head_dir)
    # The tiny target: hidden 64, 4 heads of 16, 2 KV heads; the head's MLP 48 wide; layers (2, 3) read.
    assert (facts.hidden, facts.heads, facts.kv_heads, facts.head_dim, facts.intermediate) == (
        64,
        4,
        2,
        16,
        48,
    )
    assert facts.aux_layers == (2, 3) and facts.vocab == 512
    shapes = head_tensor_shapes(facts)
    assert shapes["fc.weight"] == (64, 128)  # 2 target layers of 64 -> 64
    assert shapes["layers.0.self_attn.q_proj.weight"] == (64, 128)  # 4·16 from concat(embed, hidden)
    assert shapes["layers.0.self_attn.k_proj.weight"] == (32, 128)  # 2·16
    assert shapes["layers.0.mlp.down_proj.weight"] == (64, 48)
    own = sum(torch.Size(s).numel() for s in shapes.values())
    assert own == 64 * 128 + 64 * 128 + 2 * 32 * 128 + 64 * 64 + 3 * 48 * 64 + 4 * 64
    assert facts.weights.params == own  # embeddings and LM head are not stored: the target's are used
    info = head_info(facts)
    assert info.weight_bytes == own * 4  # stored float32
    assert info.kv_bytes_per_token == 2 * 1 * 2 * 16 * 4  # K and V, one layer, 2 KV heads of 16
    spec = parse_method(f"eagle:head={head_dir}")
    extra = spec.extra_memory(info, info)  # the target's facts do not enter a head's extra memory
    assert (extra.weight_bytes, extra.kv_bytes_per_token) == (info.weight_bytes, info.kv_bytes_per_token)
    config = json.loads((head_dir / "config.json").read_text())
    assert config["architectures"] == ["Eagle3Speculator"] and config["speculators_model_type"] == "eagle3"
    assert config["speculators_config"]["algorithm"] == "eagle3"
    assert config["transformer_layer_config"]["num_hidden_layers"] == 1


def test_the_trainer_and_the_engine_compute_the_same_head(target, head_dir: Path, prompts) -> None:
    """Training step 0 at index i = the engine's output after feeding entries 0 … i; TTT step 1 at index i =
    the engine's first draft step after them, fed the true token (teacher forcing)."""
    facts = read_head(head_dir)
    trainable = TrainableHead(HeadShape.of_target(read_model_config(Path(target.info.path)), intermediate=48),
                              target.model.embed, target.model.lm_head)  # fmt: skip
    from safetensors.torch import load_file

    for name, tensor in load_file(str(head_dir / "model.safetensors")).items():
        trainable.p(name).data.copy_(tensor)
    seq = prompts[5] + [7, 9, 11]
    batch = target_batch(target.model, [seq], facts.aux_layers)
    with torch.no_grad():
        step0, step1 = trainable(batch.aux, batch.ids, steps=2)
    proposer = make_proposer(f"eagle:head={head_dir}", target)
    assert isinstance(proposer, EagleProposer)
    head = proposer.head
    head.reset(1, 64)
    i = 4
    with torch.no_grad():
        logits, out = head.forward_rows([head.combine(batch.aux[0, : i + 1])], [seq[1 : i + 2]])
        torch.testing.assert_close(logits[0], step0[0, : i + 1], rtol=1e-4, atol=1e-4)
        draft, _ = head.forward_rows([out[0, i : i + 1]], [[seq[i + 2]]])
        torch.testing.assert_close(draft[0, 0], step1[0, i], rtol=1e-4, atol=1e-4)


@pytest.mark.slow  # 3.5 s or more on this VM (issue 37's stop): make test-slow, which CI runs
def test_greedy_equals_target_only_single_and_batched(target, head_dir, prompts, reference) -> None:
    proposer = make_proposer(f"eagle:head={head_dir}", target)
    for p, ref in zip(prompts, reference, strict=True):
        g = speculative_decode(
            target.model, proposer, p, k=3, params=SamplingParams(), max_tokens=MAX, eos_ids=set()
        )
        assert g.output_ids == ref
        for s in g.steps:
            assert 0 <= s.accepted <= s.drafted <= 3 and s.draft_forwards == s.drafted
    for batch in (1, 4, 16):
        reqs = [SequenceRequest(p, MAX - i % 3) for i, p in enumerate(prompts)]
        gens = decode_batch(target.model, proposer, reqs, schedule=3, max_batch=batch, eos_ids=set())
        for i, g in enumerate(gens):
            assert g.output_ids == reference[i][: MAX - i % 3], (batch, i)
        assert max(s.batch for g in gens for s in g.steps) == batch


def test_full_acceptance_feeds_every_accepted_position(target, head_dir, prompts) -> None:
    """Synthetic acceptance 1: every step accepts all 3 drafts, so each proposal catches up 4 positions
    (the proposer raises if the states it was handed do not cover the committed sequence)."""
    proposer = make_proposer(f"eagle:head={head_dir}", target)
    reqs = [SequenceRequest(p, MAX) for p in prompts[:6]]
    gens = decode_batch(
        target.model, proposer, reqs, schedule=3, max_batch=4, eos_ids=set(), synthetic=[1, 1, 1]
    )
    steps = [s for g in gens for s in g.steps]
    assert steps and all(s.accepted == s.drafted for s in steps)
    assert sum(s.accepted == 3 for s in steps) > 10


def _distribution_check(target, run, prompt: list[int], params: SamplingParams, n: int) -> None:
    exact = exact_joint(target.model, prompt, params, steps=3)
    cells = list(itertools.product(range(8), repeat=3))
    counts = dict.fromkeys(cells, 0)
    drafted = accepted = 0
    for g in run(n):
        counts[g.output_ids[:3]] += 1
        drafted += sum(s.drafted for s in g.steps)
        accepted += sum(s.accepted for s in g.steps)
    assert 0.05 < accepted / drafted < 0.95  # both verifier branches ran
    assert chi_square_pvalue([counts[c] for c in cells], [exact.get(c, 0.0) for c in cells]) > 1e-3


@pytest.fixture(scope="module")
def small_head(small_vocab, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _head_dir(
        small_vocab[0], tmp_path_factory.mktemp("eagle_small") / "head", intermediate=16, scale=20.0
    )


@pytest.mark.slow  # 3000 decodes: with the statistical heavyweights in make test-slow
def test_sampling_keeps_the_target_distribution(small_vocab, small_head: Path) -> None:
    target = load_model(small_vocab[0])
    proposer = make_proposer(f"eagle:head={small_head}", target)
    assert not proposer.deterministic
    params = SamplingParams(1.0)
    prompt = [1, 4, 5, 4, 5, 6]
    g = torch.Generator().manual_seed(5)

    def single(n: int):
        for _ in range(n):
            yield speculative_decode(
                target.model, proposer, prompt, k=2, params=params, max_tokens=4, eos_ids=set(), generator=g
            )

    def batched(n: int):
        reqs = [SequenceRequest(prompt, 4, params, torch.Generator().manual_seed(i)) for i in range(n)]
        return decode_batch(target.model, proposer, reqs, schedule=2, max_batch=8, eos_ids=set())

    _distribution_check(target, single, prompt, params, 1500)
    _distribution_check(target, batched, prompt, params, 1500)


def test_bad_head_directories_get_one_line(
    tiny, target, small_vocab, small_head, head_dir, tmp_path: Path
) -> None:
    def error(spec: str, model=target) -> str:
        with pytest.raises(MethodNotRunnable) as e:
            make_proposer(spec, model)
        message = str(e.value)
        assert "\n" not in message and message.startswith("eagle: key 'head': ")
        return message

    assert "no such directory" in error(f"eagle:head={tmp_path / 'nowhere'}")
    assert "not an EAGLE-3 head" in error(f"eagle:head={tiny.draft}")  # a draft model, not a head
    assert "a head for another target (hidden size 32, vocabulary 8)" in error(f"eagle:head={small_head}")
    assert "reads target layers [2, 3]" in error(f"eagle:head={head_dir}", load_model(tiny.qwen2))  # 2 layers
    hf = load_model(tiny.target, implementation="transformers")
    assert "only the native engine" in error(f"eagle:head={head_dir}", hf)
    broken = tmp_path / "broken"
    broken.mkdir()
    config = json.loads((head_dir / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "draft_vocab_size": 100}))
    assert "reduced draft vocabulary" in error(f"eagle:head={broken}")
    with pytest.raises(ModelDirError, match="not an EAGLE-3 head"):
        read_head(Path(tiny.target))


def test_distill_method_eagle_trains_a_head_in_two_steps(tiny, tmp_path: Path) -> None:
    corpus = tmp_path / "prompts.jsonl"
    corpus.write_text(
        "".join(json.dumps({"prompt": " ".join(t.split()[:6])}) + "\n" for t in sample_corpus(1))
    )
    out = tmp_path / "eagle-head"
    res = CliRunner().invoke(app, [
        "distill", "--method", "eagle", "--target", str(tiny.target), "--corpus", str(corpus),
        "--out", str(out),
        "--num-prompts", "4", "--heldout", "2", "--new-tokens", "8", "--steps", "2", "--batch", "2",
        "--head-intermediate", "16", "--quiet",
    ])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "EAGLE-3 head" in res.output and f"eagle:head={out}" in res.output.replace("\n", "")
    facts = read_head(out)
    assert facts.intermediate == 16 and facts.dtype == "float16" and facts.verifier == str(tiny.target)
    assert len((tmp_path / "eagle-head.work" / "sequences.jsonl").read_text().splitlines()) == 4
    bad = CliRunner().invoke(app, [
        "distill", "--method", "eagle", "--init", str(tiny.draft), "--target", str(tiny.target),
        "--corpus", str(corpus), "--out", str(tmp_path / "x"),
    ])  # fmt: skip
    assert bad.exit_code == 2 and "--init and --preset do not apply" in bad.output


def test_the_shipped_head_drafts_for_the_bundled_target() -> None:
    """assets/models/eagle-legal (make models-legal): a head for the bundled target, fp16, a few MB, whose
    greedy drafts on legal text are the target's own output and mostly accepted."""
    from specmeter.bundled.models import bundled_model

    head_dir = bundled_model("eagle-legal")
    facts = read_head(head_dir)
    assert facts.dtype == "float16" and facts.aux_layers == (2, 5, 7) and facts.weights.bytes < 8 * 2**20
    target = load_model(bundled_model("target"))
    proposer = make_proposer(f"eagle:head={head_dir}", target)
    prompt = target.tokenizer("The Supplier shall indemnify the Customer against all losses arising from")
    ids = prompt["input_ids"]
    base = speculative_decode(
        target.model, None, ids, k=0, params=SamplingParams(), max_tokens=24, eos_ids=set()
    )
    g = speculative_decode(
        target.model, proposer, ids, k=4, params=SamplingParams(), max_tokens=24, eos_ids=set()
    )
    assert g.output_ids == base.output_ids
    assert sum(s.accepted for s in g.steps) / sum(s.drafted for s in g.steps) > 0.3
