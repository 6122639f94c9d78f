"""Peer check: transformers' own assisted generation yields the same greedy tokens as specmeter."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from specmeter.engine.loader import load_model
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import speculative_decode


@pytest.mark.parametrize("k", [2, 5])
def test_assisted_generation_agrees_with_specmeter(tiny, k: int) -> None:
    hf_target = AutoModelForCausalLM.from_pretrained(str(tiny.target), dtype=torch.float32).eval()
    hf_draft = AutoModelForCausalLM.from_pretrained(str(tiny.draft), dtype=torch.float32).eval()
    # transformers reads the assistant's schedule from the assistant's own generation config, not from
    # generate()'s arguments: without this the check would silently run with its default (heuristic) k.
    hf_draft.generation_config.num_assistant_tokens = k
    hf_draft.generation_config.num_assistant_tokens_schedule = "constant"
    hf_draft.generation_config.assistant_confidence_threshold = 0.0
    target, draft = load_model(tiny.target), load_model(tiny.draft)
    for text in ["The Supplier shall indemnify", "To reset the device, hold", "The children played"]:
        ids = tiny.tokenizer(text)["input_ids"]
        with torch.inference_mode():
            hf_out = hf_target.generate(
                torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                assistant_model=hf_draft,
                num_assistant_tokens=k,
                num_assistant_tokens_schedule="constant",
                assistant_confidence_threshold=0.0,
                do_sample=False,
                max_new_tokens=40,
                pad_token_id=tiny.tokenizer.pad_token_id,
            )[0, len(ids) :].tolist()
        ours = speculative_decode(
            target.model,
            draft.model,
            ids,
            k=k,
            params=SamplingParams(),
            max_tokens=40,
            eos_ids=target.eos_ids,
        )
        assert list(ours.output_ids) == hf_out
