"""llama.cpp tokenizes every golden prompt exactly as the bundled tokenizer does.

The GGUFs were converted with the pre-tokenizer named ``gpt-2`` (tests/real_llamacpp/convert_gguf.py: the
converter does not know our vocabulary's fingerprint). That is a claim about the tokenizer, checked here
on all 360 golden prompts (180 legal, 180 general): llama-server's ``/tokenize`` with ``add_special`` —
what its completion endpoints do to a prompt, BOS included if the vocabulary asked for one — must return the
ids specmeter's native engine prefills (``render_prompt`` with the model's transformers tokenizer), and
``/detokenize`` must give the text back. Any difference in the split pattern, the byte-level mapping,
merges or special tokens shows up as a different id sequence.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from llamacpp_helpers import llama_server
from transformers import AutoTokenizer

from engine_helpers import GENERAL, LEGAL
from specmeter.bundled.models import bundled_model
from specmeter.workloads import load_workload, render_prompt

pytestmark = pytest.mark.llamacpp


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_server(tmp_path_factory.mktemp("llamacpp-tokens") / "server.log", draft=None, parallel=1) as u:
        yield u


def test_golden_prompts_tokenize_as_the_bundled_tokenizer(url: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(bundled_model("target"))
    prompts = [p for path in (LEGAL, GENERAL) for p in load_workload(path).prompts]
    assert len(prompts) == 360 and all(p.text is not None for p in prompts)
    mismatched = []
    with httpx.Client(timeout=30) as client:
        for prompt in prompts:
            ours = render_prompt(prompt, tokenizer)  # what the native engine prefills
            body = {"content": prompt.text, "add_special": True}
            theirs = client.post(f"{url}/tokenize", json=body).json()["tokens"]
            back = client.post(f"{url}/detokenize", json={"tokens": theirs}).json()["content"]
            if theirs != ours or back != prompt.text:
                mismatched.append((prompt.id, ours[:8], theirs[:8], back[:60]))
    assert not mismatched, mismatched[:5]


def test_every_vocabulary_entry_round_trips(url: str) -> None:
    # Each id of the 2,048-token vocabulary (specials aside) detokenizes to the bytes transformers gives it.
    tokenizer = AutoTokenizer.from_pretrained(bundled_model("target"))
    special = set(tokenizer.all_special_ids)
    ids = [i for i in range(tokenizer.vocab_size) if i not in special]
    pieces = httpx.post(f"{url}/detokenize", json={"tokens": ids}, timeout=30).json()["content"]
    assert pieces == tokenizer.decode(ids)
