"""llama.cpp's ``--spec-type ngram-simple`` beside specmeter's native ``ngram-simple``: greedy, same prompts.

The bundled target in float32 on both sides (the f32 GGUF; the native engine in float32), the first prompts
of every legal category (``legal/redline`` included, where the answer copies the prompt), sent to
llama-server as token ids so both sides start from the same tokens. llama-server runs one slot, so each
request decodes alone. llama.cpp's side is read from its ``/metrics`` counters (``llamacpp:spec_decode_*``)
and each response's ``timings``; the native side from the decode loop's step records
(``tests/method_runs.py``).

Why they should agree: the native proposer is a port of ``common_ngram_simple_draft`` (docs/methods.md),
llama-server drafts up to ``m`` tokens cut to the tokens left − 1 (``get_n_draft_max``), and the native loop
is run with k = m, so it cuts the same way. What may remain: llama.cpp stops verifying at an
end-of-generation token (the native verifier counts a draft token the target agreed with after an EOS as
accepted; counted here with llama.cpp's rule, as in test_llamacpp_vs_native.py), and float32 kernels that
add in another order can break a near tie of the target's top two logits differently, after which the two
texts part. ``make test-llamacpp`` prints the table. ``SPECMETER_LLAMACPP_METHOD`` compares another spec by
hand; ``ngram-map-k`` differs by design (llama.cpp 0c1e570 has the later hash-map version: docs/methods.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from llamacpp_helpers import SERVER, gguf

from engine_helpers import LEGAL, free_port, scrape, server_process
from method_runs import Tally, load_target, prompt_ids, run_native, step_pairs, tally
from specmeter.methods import parse_method
from specmeter.methods.engines import llamacpp_spec_args
from specmeter.metrics.records import StepRecord

pytestmark = pytest.mark.llamacpp

METHOD = os.environ.get("SPECMETER_LLAMACPP_METHOD", "ngram-simple:n=3,m=8")
PER_CATEGORY = 2
MAX_TOKENS = 64
PREFIX = "llamacpp:spec_decode_"


def _eos_rule(step: StepRecord) -> int:
    """A native step's acceptance counted as llama.cpp counts it: no draft accepted at or after an EOS
    (a step cut short by an EOS emitted fewer tokens than it accepted + 1; see test_llamacpp_vs_native)."""
    return step.emitted - 1 if step.emitted < step.accepted + 1 else step.accepted


def _legal_ids(n_per_category: int) -> list[str]:
    rows = [json.loads(line) for line in LEGAL.read_text(encoding="utf-8").splitlines()]
    categories = list(dict.fromkeys(r["category"] for r in rows))
    return [r["id"] for r in rows[: n_per_category * len(categories)]]


def _llamacpp(log: Path, prompts: list[Any]) -> tuple[dict[str, float], list[dict[str, Any]]]:
    spec = parse_method(METHOD)
    port = free_port()
    cmd = [
        str(SERVER), "-m", str(gguf("target")), "--host", "127.0.0.1", "--port", str(port), "--parallel", "1",
        "-c", "4096", "--metrics", "--no-webui", "-t", "1", "-tb", "1", *llamacpp_spec_args(spec),
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with server_process(cmd, url, log, name="llama-server", startup_s=120):
        before = scrape(url)
        responses = []
        with httpx.Client(timeout=300) as client:
            for p in prompts:
                body = {
                    "prompt": list(p.ids), "n_predict": MAX_TOKENS, "temperature": 0, "return_tokens": True,
                    "cache_prompt": False,
                }  # fmt: skip
                response = client.post(f"{url}/completion", json=body)
                response.raise_for_status()
                responses.append({**response.json(), "id": p.id, "category": p.category})
        after = scrape(url)
    return {name: after[name] - before.get(name, 0.0) for name in after}, responses


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("llamacpp-methods")
    target = load_target()
    prompts = prompt_ids(target, LEGAL, _legal_ids(PER_CATEGORY))
    native = run_native(target, METHOD, prompts, k=parse_method(METHOD).int_value("m"), max_tokens=MAX_TOKENS)
    delta, responses = _llamacpp(out / "server.log", prompts)
    return {"native": native, "delta": delta, "responses": responses, "prompts": prompts}


def test_llamacpp_ngram_simple_and_native_agree(
    compared: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    native, delta, responses = compared["native"], compared["delta"], compared["responses"]
    by_id = {r["id"]: r for r in responses}
    engine = Tally(
        int(delta[PREFIX + "num_drafts_total"]),
        int(delta[PREFIX + "num_draft_tokens_total"]),
        int(delta[PREFIX + "num_accepted_tokens_total"]),
    )
    mine = tally(p for r in native for p in step_pairs(r.steps))
    mine_eos = tally(p for r in native for p in step_pairs(r.steps, _eos_rule))
    same_text = [r.id for r in native if list(r.output_ids) == by_id[r.id]["tokens"]]

    def counts(r: Any) -> tuple[tuple[int, int], tuple[int, int]]:
        t = by_id[r.id]["timings"]
        ours = tally(step_pairs(r.steps, _eos_rule))
        return (ours.drafted, ours.accepted), (t.get("draft_n", 0), t.get("draft_n_accepted", 0))

    differ = [r.id for r in native if counts(r)[0] != counts(r)[1]]
    lines = [
        f"{METHOD}, greedy, {len(native)} legal prompts ({PER_CATEGORY} per category) x {MAX_TOKENS} tokens, "
        f"float32, native k = m",
        f"{'':22}{'steps':>7}{'drafted':>9}{'accepted':>10}{'α':>9}{'τ':>8}",
        *(
            f"{name:22}{t.steps:>7}{t.drafted:>9}{t.accepted:>10}{t.alpha:>9.4f}{t.tau:>8.3f}"
            for name, t in (("native", mine), ("native, EOS rule", mine_eos), ("llama.cpp", engine))
        ),
        f"α difference (llama.cpp − native, EOS rule): {engine.alpha - mine_eos.alpha:+.4f}",
        f"outputs identical token for token: {len(same_text)}/{len(native)}",
        "requests whose drafted/accepted differ: "
        + (", ".join(f"{i} {counts(next(r for r in native if r.id == i))}" for i in differ) or "none"),
    ]
    by_category: dict[str, list[Any]] = {}
    for r in native:
        by_category.setdefault(r.category, []).append(r)
    for category, rs in by_category.items():
        t = tally(p for r in rs for p in step_pairs(r.steps, _eos_rule))
        e = tally(
            (by_id[r.id]["timings"].get("draft_n", 0), by_id[r.id]["timings"].get("draft_n_accepted", 0))
            for r in rs
        )
        lines.append(
            f"  {category:24} native α {t.alpha:.3f} (D={t.drafted})   "
            f"llama.cpp α {e.alpha:.3f} (D={e.drafted})"
        )
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    # The counters and the per-response timings of the same requests agree exactly.
    assert sum(r["timings"].get("draft_n", 0) for r in responses) == engine.drafted
    assert sum(r["timings"].get("draft_n_accepted", 0) for r in responses) == engine.accepted
    assert engine.drafted > 0 and mine.drafted > 0
    # Same weights in float32, same greedy rule: the same texts but for near-tie flips of the target...
    assert len(same_text) >= len(native) - 2, same_text
    # ...and on the requests whose text is the same, the same drafts and acceptances, step for step.
    assert not set(differ) & set(same_text), differ
    assert abs(engine.alpha - mine_eos.alpha) < 0.005
