"""Cost-curve measurement: shape of the result and models left usable afterwards."""

from __future__ import annotations

import torch

from specmeter.engine.costs import measure_cost_curve
from specmeter.engine.loader import load_model
from specmeter.engine.sampling import SamplingParams
from specmeter.engine.speculative import speculative_decode


def test_cost_curve_shape_and_models_still_decode(tiny) -> None:
    target, draft = load_model(tiny.target), load_model(tiny.draft)
    ids = tiny.tokenizer("The Supplier shall indemnify the Customer")["input_ids"]
    before = speculative_decode(target.model, draft.model, ids, k=3, params=SamplingParams(), max_tokens=12,
                                eos_ids=set()).output_ids  # fmt: skip
    curve = measure_cost_curve(target.model, draft.model, ids, n_max=4, repeats=3)
    assert len(curve.target_s) == 4 and len(curve.target_spread) == 4
    assert all(t > 0 for t in curve.target_s) and curve.draft_s > 0
    assert curve.repeats == 3 and curve.t_target(4) == curve.target_s[3]
    assert curve.t_target(6) > 0  # extrapolated beyond the measured range
    after = speculative_decode(target.model, draft.model, ids, k=3, params=SamplingParams(), max_tokens=12,
                               eos_ids=set()).output_ids  # fmt: skip
    assert after == before


def test_cost_curve_without_draft(tiny) -> None:
    target = load_model(tiny.target)
    with torch.inference_mode():
        curve = measure_cost_curve(target.model, None, [1, 2, 3], n_max=2, repeats=2)
    assert curve.draft_s == 0.0 and len(curve.target_s) == 2
