"""Pricing: what a decode step costs each method, and the speedup that follows from its acceptance.

One home for the cost side of every decision (docs/internals.md): the cost file read once and validated
(:mod:`.book`: the target's verification shared by all methods, each candidate's own proposing cost), the
steps of a candidate by draft length (:mod:`.steps`), E from both at any batch size (:mod:`.predict`), the
what-if surface's reading (:mod:`.whatif`) and the ``--costs`` sources (:mod:`.sources`). ``replay``,
``select --from``, ``tune`` and ``bench`` call it; it imports only ``metrics`` (no torch).
"""

from specmeter.pricing.book import CostBook, CostsError, ProposeCost, candidate_key, is_model_free
from specmeter.pricing.predict import Priced, price, price_summary, with_plain_steps
from specmeter.pricing.sources import Predictor, drafting_share, predictor
from specmeter.pricing.steps import StepShape, StepShapeError

__all__ = [
    "CostBook",
    "CostsError",
    "Predictor",
    "Priced",
    "ProposeCost",
    "StepShape",
    "StepShapeError",
    "candidate_key",
    "drafting_share",
    "is_model_free",
    "predictor",
    "price",
    "price_summary",
    "with_plain_steps",
]
